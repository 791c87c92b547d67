"""@mesh end to end: real daemons on fake cards, real workers."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

import gmux
from conftest import Daemon, _fresh, regress, reset, wait_for

try:
    import numpy
except ImportError:
    numpy = None


def square(x):
    return x * x


def boom(x):
    raise ValueError("bad value %r" % (x,))


def test_call_returns_exactly_what_the_function_returned(daemon):
    @gmux.mesh(share=0.25, mem="8G")
    def train(lr, epochs):
        return {"lr": lr, "accuracy": 0.9 + lr, "epochs": epochs}

    assert train(lr=0.01, epochs=100) == {"lr": 0.01, "accuracy": 0.91,
                                          "epochs": 100}
    k = 3
    assert gmux.mesh(lambda x: x + k)(4) == 7          # a closure, by value
    assert train.__name__ == "train"                   # functools.wraps
    ws = daemon.json("workers", "--json")
    assert ws and ws[0]["share"] == 0.25 and ws[0]["tasks"] >= 1


@pytest.mark.skipif(numpy is None, reason="python3-numpy is not installed")
def test_numpy_arrays_come_back_as_arrays(daemon):
    a = numpy.arange(1000, dtype=numpy.float32).reshape(10, 100)
    out = gmux.mesh(lambda x: x * 2)(a)
    assert isinstance(out, numpy.ndarray) and out.dtype == numpy.float32
    assert (out == a * 2).all()


def test_big_values_go_by_file_both_ways(daemon):
    blob = os.urandom(8 * 1024 * 1024)
    out = gmux.mesh(lambda b: b[::-1])(blob)
    assert out == blob[::-1]
    spool = os.path.join(daemon.home, "tasks", "spool")
    wait_for(lambda: os.listdir(spool) == [], 5, what="the spool emptied")


def test_values_just_under_a_frame_go_inline_whole(daemon):
    # Over what a socket takes at once: the daemon writes what it can
    # and queues the rest, behind nothing and before what follows.
    f = gmux.mesh(lambda b: b[::-1])
    blob = os.urandom(900 * 1024)
    assert f(blob) == blob[::-1]
    blobs = [os.urandom(600 * 1024 + i) for i in range(12)]
    assert f.map(blobs) == [b[::-1] for b in blobs]
    spool = os.path.join(daemon.home, "tasks", "spool")
    assert os.listdir(spool) == []                 # none went by file


def test_the_journal_is_empty_once_every_result_is_acked(daemon):
    journal = os.path.join(daemon.home, "tasks", "journal")
    f = gmux.mesh(square)
    assert [f(i) for i in range(5)] == [0, 1, 4, 9, 16]
    wait_for(lambda: os.path.getsize(journal) == 0, 30,
             what="the journal emptied")
    assert f.map(range(50)) == [x * x for x in range(50)]
    wait_for(lambda: os.path.getsize(journal) == 0, 30,
             what="the journal emptied")


def _available():
    """(bytes of memory available, bytes free where the spool is)."""
    with open("/proc/meminfo") as f:
        mem = next(int(x.split()[1]) * 1024 for x in f
                   if x.startswith("MemAvailable:"))
    st = os.statvfs("/tmp")
    return mem, st.f_bavail * st.f_frsize


GIB = 1 << 30


def test_a_gib_value_goes_there_and_back(daemon):
    """1 GiB each way: by file through the spool, never through the
    daemon (its peak RSS stays small).  The caller holds the value, its
    pickle and the result's (3 GiB at the peak), the worker as much."""
    mem, disk = _available()
    if mem < 10 * GIB or disk < 4 * GIB:
        pytest.skip("a 1 GiB round trip needs 10 GiB of memory available "
                    "and 4 GiB free in /tmp (%.1f GiB and %.1f GiB here)"
                    % (mem / GIB, disk / GIB))
    blob = bytes(range(256)) * (GIB // 256)
    out = gmux.mesh(lambda b: (len(b), b))(blob)
    assert out[0] == GIB and out[1] == blob
    del out
    with open("/proc/%d/status" % daemon.pid()) as f:
        hwm = next(int(x.split()[1]) * 1024 for x in f
                   if x.startswith("VmHWM:"))
    assert hwm < 256 << 20, "the daemon's peak RSS: %d MB" % (hwm >> 20)
    spool = os.path.join(daemon.home, "tasks", "spool")
    wait_for(lambda: os.listdir(spool) == [], 30, what="the spool emptied")


def test_cpus_pins_the_worker_and_its_tasks(daemon):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU here: nothing to pin to fewer")
    one = gmux.mesh(lambda: sorted(os.sched_getaffinity(0)), cpus=1)
    assert len(one()) == 1
    assert all(len(c) == 1 for c in one.map([()] * 4))
    anyn = gmux.mesh(lambda: sorted(os.sched_getaffinity(0)))
    assert anyn() == sorted(os.sched_getaffinity(0))
    many = gmux.mesh(lambda: sorted(os.sched_getaffinity(0)), cpus=100000)
    assert many() == sorted(os.sched_getaffinity(0))   # all there are


def test_exception_is_reraised_with_the_remote_traceback(daemon):
    f = gmux.mesh(boom)
    with pytest.raises(ValueError, match="bad value 3") as ei:
        f(3)
    cause = ei.value.__cause__
    assert isinstance(cause, gmux.RemoteTraceback)
    assert "in boom" in cause.tb and "raise ValueError" in cause.tb


def test_map_keeps_input_order_and_maperror_carries_everything(daemon):
    assert gmux.mesh(square).map(range(20)) == [i * i for i in range(20)]
    add = gmux.mesh(lambda a, b: a + b)
    assert add.map([(1, 2), (3, 4)]) == [3, 7]
    assert gmux.mesh(lambda lr, epochs: lr * epochs).map(
        [{"lr": 0.5, "epochs": 2, "cost": 9, "gpu_memory_mb": 10},
         {"lr": 1, "epochs": 3}]) == [1.0, 3]
    f = gmux.mesh(lambda x: 1 // x)
    with pytest.raises(gmux.MapError) as ei:
        f.map([1, 0, 2, 0])
    e = ei.value
    assert e.results == [1, None, 0, None]
    assert [i for i, _ in e.exceptions] == [1, 3]
    assert all(isinstance(x, ZeroDivisionError) for _, x in e.exceptions)
    out = f.map([1, 0], return_exceptions=True)
    assert out[0] == 1 and isinstance(out[1], ZeroDivisionError)


def test_submit_returns_a_future_asyncio_can_await(daemon):
    import asyncio
    fut = gmux.mesh(square).submit(7)
    assert fut.result(timeout=30) == 49

    async def main():
        return await asyncio.wrap_future(gmux.mesh(square).submit(5))
    assert asyncio.run(main()) == 25


def test_options_and_to_are_copies(daemon):
    f = gmux.mesh(square, share=0.25)
    g = f.options(share=0.5)
    assert f._opts.share == 0.25 and g._opts.share == 0.5
    assert f.to("cpu")._opts.share == 0
    assert f.to("cuda:0")._opts.card == 0
    with pytest.raises(ValueError, match="device"):
        f.to("tpu")
    with pytest.raises(TypeError, match="unknown option"):
        f.options(shares=1)
    assert g(3) == 9


def _pid_task(path):
    """Writes its pid, then waits for the file to go (a test kills it)."""
    import os
    import time
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path + ".pid")    # whole, or not there
    while os.path.exists(path):
        time.sleep(0.05)
    return os.getpid()


def test_a_worker_killed_mid_task_reruns_it_once(daemon, tmp_path):
    flag = str(tmp_path / "flag")
    open(flag, "w").close()
    fut = gmux.mesh(_pid_task).submit(flag)
    wait_for(lambda: os.path.exists(flag + ".pid"), 30, what="the task")
    first = int(open(flag + ".pid").read())
    ws = daemon.json("workers", "--json")
    job = daemon.job(ws[0]["job"])
    os.unlink(flag + ".pid")
    os.kill(job["pid"], signal.SIGKILL)           # the fork-server itself
    wait_for(lambda: os.path.exists(flag + ".pid"), 30, what="the re-run")
    os.unlink(flag)
    second = fut.result(timeout=30)
    assert second != first


def test_a_task_that_kills_its_process_is_lost_then_failed(daemon):
    f = gmux.mesh(lambda: os._exit(3))
    with pytest.raises(gmux.TaskError, match="lost 3 times: .*status 3"):
        f()
    g = gmux.mesh(lambda: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(gmux.TaskError, match="SIGKILL"):
        g()
    assert gmux.mesh(square)(6) == 36             # the worker is still up


def test_a_task_past_its_timeout_is_killed_and_failed(daemon):
    f = gmux.mesh(lambda: time.sleep(30), timeout=0.5)
    t = time.monotonic()
    with pytest.raises(gmux.TaskTimeout, match="timed out after 500 ms"):
        f()
    assert time.monotonic() - t < 10
    assert gmux.mesh(square, timeout=60)(3) == 9


def test_fence_and_memory_cap_apply_to_a_task(daemon):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def probe(port):
        import os
        import socket
        s = socket.socket()
        s.settimeout(3)
        try:
            s.connect(("127.0.0.1", port))
            net = "connected"
        except OSError as e:
            net = "refused: %s" % e.__class__.__name__
        return net, os.environ.get("GMUX_MEM")
    net, mem = gmux.mesh(probe, share=0.25, mem="2G", deny_net=True)(port)
    assert net.startswith("refused"), net
    assert mem == str(2 << 30)
    net, _ = gmux.mesh(probe, share=0.25)(port)
    assert net == "connected"
    srv.close()
    ws = daemon.json("workers", "--json")
    fenced = [w for w in ws if w["mem"] == 2 << 30]
    assert fenced and daemon.job(fenced[0]["job"])["fence"] != "open"


def test_ledger_rows_for_the_task_owner(daemon):
    assert gmux.mesh(square, share=0.5)(2) == 4
    time.sleep(1.2)
    rows = daemon.json("usage", "--by", "owner", "--json")["rows"]
    me = __import__("pwd").getpwuid(os.getuid()).pw_name
    row = next(r for r in rows if r.get("owner") == me)
    assert row["jobs"] >= 1 and row["seat_ms"] > 0


def test_the_daemon_killed_mid_map_loses_no_result(daemon):
    f = gmux.mesh(lambda x: (time.sleep(0.02), x * 3)[1])
    f(0)                                              # a warm worker
    out = {}

    def run():
        out["r"] = f.map(range(200))
    import threading
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.5)
    daemon.kill9()
    time.sleep(0.3)
    daemon.start()
    t.join(90)
    assert not t.is_alive()
    assert out["r"] == [x * 3 for x in range(200)]


def test_no_daemon_runs_locally_with_one_warning(home, monkeypatch):
    monkeypatch.setenv("GMUX_HOME", home)
    reset()
    f = gmux.mesh(square)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert f(4) == 16
        assert f.map([1, 2, {"x": 3, "cost": 2}]) == [1, 4, 9]
    assert len([x for x in w if "gmux" in str(x.message)]) == 1


def test_gmux_local_runs_locally(daemon, monkeypatch):
    monkeypatch.setenv("GMUX_LOCAL", "1")
    assert gmux.mesh(lambda: os.getpid())() == os.getpid()
    assert daemon.json("workers", "--json") == []


def test_main_module_functions_and_own_modules_work(daemon, tmp_path):
    (tmp_path / "helper.py").write_text("def twice(x):\n    return 2 * x\n")
    (tmp_path / "demo.py").write_text(textwrap.dedent("""\
        import os, sys
        import gmux, helper

        @gmux.mesh
        def work(x):
            return helper.twice(x), os.getpid() != PARENT

        PARENT = os.getpid()
        print(work(21), work.map([1, 2]))
        """))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
        gmux.__file__)))
    r = subprocess.run([sys.executable, "demo.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(42, True) [(2, True), (4, True)]"


def test_executor_is_a_concurrent_futures_executor(daemon):
    import concurrent.futures as cf
    with gmux.Executor(share=0.25) as ex:
        assert isinstance(ex, cf.Executor)
        assert ex.submit(square, 9).result() == 81
        assert list(ex.map(square, range(5))) == [0, 1, 4, 9, 16]
        with pytest.raises(ZeroDivisionError):
            list(ex.map(lambda x: 1 // x, [1, 0]))
    wait_for(lambda: daemon.json("workers", "--json") == [], 15,
             what="shutdown to stop the workers")
    with pytest.raises(RuntimeError):
        ex.submit(square, 1)


def test_spreading_over_four_cards(make_daemon):
    # What the batch costs is its rounds: ceil(100 / workers) x 0.1 s.  A
    # fifth of a card makes 20 workers, 5 rounds: 0.5 s, and half a second
    # for the leases, forks and results of a loaded 2-core machine (a
    # quarter made 16 workers and 7 rounds, 0.7 s, before any of that).
    d = make_daemon(fake="4xH100:80G")
    f = gmux.mesh(lambda x: (time.sleep(0.1), x)[1], share=0.2)
    f.map(range(20))                                  # the workers, warm
    wait_for(lambda: len(d.json("workers", "--json")) == 20, 60,
             what="20 workers")
    t = time.monotonic()
    assert f.map(range(100)) == list(range(100))
    took = time.monotonic() - t
    ws = d.json("workers", "--json")
    assert len({w["card"] for w in ws}) == 4
    assert took < 1.0, "100 tasks of 0.1 s on 20 workers took %.3f s" % took


def test_workers_exit_when_idle(daemon):
    f = gmux.mesh(square, idle=1.0)
    assert f(2) == 4
    wait_for(lambda: daemon.json("workers", "--json") == [], 15,
             what="the idle worker to exit")
    assert f(3) == 9                                   # a new one starts


_STATE = {}


def _leave(x):
    """What the last call in this process left, and this call's process."""
    seen = _STATE.get("last")
    _STATE["last"] = x
    return seen, os.getpid()


def _peek():
    """Another function: what a call left in this process's module."""
    return _STATE.get("last"), os.getpid()


def _leave_or_exit(x):
    if x is None:
        os._exit(3)
    return _leave(x)


def test_state_carries_between_calls_of_one_function_by_default(daemon):
    f = gmux.mesh(_leave)
    out = [f(i) for i in range(4)]
    assert [seen for seen, _ in out] == [None, 0, 1, 2]
    assert len({pid for _, pid in out}) == 1       # one kept process
    assert gmux.mesh(_leave).options(mem=None)(9)[0] == 3   # the same fn


def test_state_never_carries_to_another_function(daemon):
    f, g = gmux.mesh(_leave), gmux.mesh(_peek)
    assert f(1)[0] is None and f(2)[0] == 1
    seen, gpid = g()
    assert seen is None                    # not f's process, nor its state
    assert f(3)[0] is None                 # nor g's after it
    assert g()[1] != gpid                  # f's call dropped g's process
    def over(k):
        return gmux.mesh(lambda: _STATE.setdefault("k", k))
    assert over(1)() == 1 and over(2)() == 2   # closures of other values


def test_fresh_true_shares_no_state_and_outlives_a_crash(daemon):
    f = gmux.mesh(_leave, fresh=True)
    out = [f(i) for i in range(6)]
    assert [seen for seen, _ in out] == [None] * 6     # nothing leaked
    assert len({pid for _, pid in out}) == 6           # a process each
    assert all(seen is None for seen, _ in f.map(range(20)))
    g = gmux.mesh(lambda: os._exit(3), fresh=True)
    with pytest.raises(gmux.TaskError, match="lost 3 times"):
        g()
    assert f(7)[0] is None                             # the worker lives


def test_a_crash_fails_only_its_task_and_the_next_call_works(daemon):
    f = gmux.mesh(_leave_or_exit)
    assert f(1)[0] is None and f(2)[0] == 1
    job = daemon.json("workers", "--json")[0]["job"]
    with pytest.raises(gmux.TaskError, match="lost 3 times: .*status 3"):
        f(None)
    seen, _ = f(4)
    assert seen is None                    # a new process: the state went
    assert f(5)[0] == 4                    # kept again from there
    assert [w["job"] for w in daemon.json("workers", "--json")] == [job]
    g = gmux.mesh(lambda: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(gmux.TaskError, match="SIGKILL"):
        g()
    assert f.map(range(10, 15)) and f(6)[1] > 0


def test_a_task_s_process_killed_mid_task_reruns_it_once(daemon, tmp_path):
    flag = str(tmp_path / "flag")
    open(flag, "w").close()
    f = gmux.mesh(_pid_task)
    fut = f.submit(flag)
    wait_for(lambda: os.path.exists(flag + ".pid"), 30, what="the task")
    first = int(open(flag + ".pid").read())
    job = daemon.json("workers", "--json")[0]
    assert daemon.job(job["job"])["pid"] != first   # the task's own child
    os.unlink(flag + ".pid")
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: os.path.exists(flag + ".pid"), 30, what="the re-run")
    os.unlink(flag)
    assert fut.result(timeout=30) not in (first, None)
    assert [w["job"] for w in daemon.json("workers", "--json")] == \
        [job["job"]]


def test_workers_run_on_a_published_interpreter(home, monkeypatch):
    # python="NAME" names an interpreter the host publishes
    # (PYTHON_INTERPRETERS); the workers run on it, not on this one.
    bindir = os.path.join(home, "py", "bin")
    os.makedirs(bindir)
    alt = os.path.join(bindir, "python3")
    os.symlink(sys.executable, alt)
    with open(os.path.join(home, "config"), "w") as f:
        f.write("PYTHON_INTERPRETERS=alt=%s\n" % alt)
    d = Daemon(home)
    d.start()
    _fresh(d, monkeypatch)
    try:
        where = gmux.mesh(lambda: (sys.executable, os.environ["GMUX_PYTHON"]),
                          python="alt")
        assert where() == (alt, alt)
        assert gmux.mesh(lambda: sys.executable)() != alt
        with pytest.raises(gmux.APIError, match="python"):
            gmux.mesh(lambda: 1, python="nosuch")()
    finally:
        reset()
        d.stop()
        regress._check_sanitizers(d)


def test_a_worker_that_cannot_start_fails_its_calls_with_its_reason(
        home, monkeypatch):
    # Interpreters the host publishes that cannot run a worker: one whose
    # import fails (its stderr's last line is the reason), one missing.
    # Each pool's calls fail after three starts in a row, backing off in
    # between; no fourth is made, and nothing of them ever ran.
    broken = os.path.join(home, "broken")
    with open(broken, "w") as f:
        f.write("#!/bin/sh\necho starting >&2\n"
                "echo \"ModuleNotFoundError: No module named 'cloudpickle'\""
                " >&2\nexit 1\n")
    os.chmod(broken, 0o755)
    with open(os.path.join(home, "config"), "w") as f:
        f.write("PYTHON_INTERPRETERS=broken=%s,gone=%s\n"
                % (broken, os.path.join(home, "nosuch", "python3")))
    d = Daemon(home)
    d.start()
    _fresh(d, monkeypatch)
    try:
        f = gmux.mesh(lambda x: x, python="broken")
        t = time.monotonic()
        with pytest.raises(gmux.TaskError) as ei:
            f(1)
        took = time.monotonic() - t
        assert "no worker could start (3 tries)" in str(ei.value)
        assert str(ei.value).endswith(
            "ModuleNotFoundError: No module named 'cloudpickle'")
        assert took > 1.5                  # 0.5 s, then 1 s, between them
        assert len(d.json("ps", "-a", "--json")) == 3     # and no fourth
        with pytest.raises(gmux.MapError) as ei:
            f.map(range(5))                # again: three rounds of starts
        assert len(ei.value.exceptions) == 5
        for _, e in ei.value.exceptions:
            assert isinstance(e, gmux.TaskError)
            assert "cloudpickle" in str(e)
        with pytest.raises(gmux.TaskError, match="no worker could start"):
            gmux.mesh(lambda: 1, python="gone")()
        assert gmux.mesh(lambda: 2)() == 2  # the host's others still work
    finally:
        reset()
        d.stop()
        regress._check_sanitizers(d)


def test_a_pool_with_no_room_takes_it_from_the_caller_s_idle_workers(
        daemon):
    # Two of f's workers fill the one card; g's first call must not wait
    # for them to idle out (600 s here): an idle one goes for it.
    f = gmux.mesh(square, share=0.5, idle=600)
    g = gmux.mesh(square, share=0.5, idle=600, fresh=True)
    assert f.map(range(8)) == [x * x for x in range(8)]
    wait_for(lambda: len(daemon.json("workers", "--json")) == 2, 60,
             what="f's two workers")
    t = time.monotonic()
    assert g(3) == 9
    assert time.monotonic() - t < 60
    pools = [w["pool"] for w in daemon.json("workers", "--json")]
    assert len(set(pools)) == 2 and len(pools) == 2   # one of each
    assert f(4) == 16                      # f still has its other one
    assert g.map(range(6)) == [x * x for x in range(6)]


def _nap(s):
    time.sleep(s)
    return os.getpid()


def test_a_task_longer_than_idle_is_not_cut_short(daemon):
    # Not fresh, the server hears nothing at a task's end: idle counts
    # from there, never from the lease, and never while one runs.
    f = gmux.mesh(_nap, idle=1.0)
    pid = f(0)
    assert f(3.0) == pid                        # past idle, same child
    wait_for(lambda: daemon.json("workers", "--json") == [], 30,
             what="the idle worker to exit")


def _worker_procs(home):
    """{pid: ppid} of this daemon's worker processes."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            env = open("/proc/%s/environ" % p, "rb").read()
            stat = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        if b"GMUX_WORKER_SOCK=" + home.encode() in env:
            out[int(p)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def test_fresh_calls_go_on_when_the_zygote_dies(daemon):
    f = gmux.mesh(_leave, fresh=True)
    assert f(1)[0] is None

    def zygotes():
        # the server's children with children: the spares' parent
        procs = _worker_procs(daemon.home)
        server = [p for p, pp in procs.items() if pp not in procs]
        return [p for p, pp in procs.items() if pp in server and
                pp in procs.values() and p in procs.values()]
    wait_for(lambda: len(zygotes()) == 1, 30, what="the zygote's spares")
    os.kill(zygotes()[0], signal.SIGKILL)
    out = [f(i) for i in range(5)]          # forked by the server now
    assert [seen for seen, _ in out] == [None] * 5
    assert len({pid for _, pid in out}) == 5
