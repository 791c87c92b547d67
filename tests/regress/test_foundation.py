"""The foundation: the daemon, local jobs, their output, exit codes and
survival, the CLI's contract and the API's answers to bad input."""

import json
import os
import signal
import stat
import subprocess
import time

import pytest

from conftest import GMUX, Daemon, wait_for


def test_help_lists_commands_and_each_has_help(daemon):
    r = daemon.gmux("help", check=0)
    out = r.stdout.decode()
    cmds = ["serve", "run", "ps", "logs", "attach", "stop", "cards",
            "version", "help"]
    for c in cmds:
        assert "\n  %s " % c in out
    for c in cmds:
        r = daemon.gmux(c, "--help", check=0)
        assert r.stdout.startswith(b"usage: gmux " + c.encode())
    assert daemon.gmux("version", check=0).stdout.startswith(b"gmux ")


def test_help_puts_every_option_before_the_notes(daemon):
    out = daemon.gmux("run", "--help").stdout.decode()
    # synopsis, one-line summary, options, then the notes alone
    synopsis, summary, opts, notes = out.split("\n\n")
    assert opts.startswith("options:\n")
    for flag in ("--share F", "--remote NAME", "--local", "-h, --help"):
        assert flag in opts
    assert notes.startswith("The job runs in this directory")
    assert "--local" not in notes
    # serve, remote and token work on this machine only
    out = daemon.gmux("serve", "--help").stdout.decode()
    assert "--remote NAME" not in out and "-h, --help" in out
    r = daemon.gmux("token", "ls", "--remote", "x")
    assert r.returncode == 2 and b"--remote" in r.stderr


@pytest.mark.parametrize("args,word", [
    (["run", "--share", "2", "--", "true"], "--share"),
    (["run", "--share", "0.255", "--", "true"], "--share"),
    (["run", "--mem", "lots", "--", "true"], "--mem"),
    (["run", "--bogus", "--", "true"], "--bogus"),
    (["run", "--share"], "--share"),
    (["run"], "command"),
    (["ps", "--nope"], "--nope"),
    (["stop", "--grace", "soon", "j1"], "--grace"),
    (["logs", "--from", "x", "j1"], "--from"),
    (["serve", "--fake", "1xFoo:8G"], "Foo"),
    (["frobnicate"], "frobnicate"),
])
def test_bad_flags_exit_2_with_one_line(daemon, args, word):
    r = daemon.gmux(*args)
    assert r.returncode == 2, r
    err = r.stderr.decode()
    assert err.count("\n") == 1 and word in err, err


def test_run_streams_output_and_exit_code(daemon):
    daemon.start()
    r = daemon.gmux("run", "--share", "0.25", "--mem", "20G", "--", "sh",
                    "-c", "echo out; echo err >&2; exit 3")
    assert r.returncode == 3
    assert r.stdout == b"out\n"
    assert r.stderr == b"err\n"


def test_exit_code_of_a_signal_is_128_plus_n(daemon):
    daemon.start()
    r = daemon.gmux("run", "--", "sh", "-c", "kill -KILL $$")
    assert r.returncode == 137
    r = daemon.gmux("run", "--", "sh", "-c", "kill -TERM $$")
    assert r.returncode == 143


def test_output_is_binary_safe_and_large(daemon, tmp_path):
    daemon.start()
    blob = bytes(range(256)) * 40000 + b"\x00tail"
    src = tmp_path / "blob"
    src.write_bytes(blob)
    r = daemon.gmux("run", "--", "cat", str(src))
    assert r.returncode == 0
    assert r.stdout == blob


def test_detached_run_prints_only_the_id(daemon):
    daemon.start()
    r = daemon.gmux("run", "-d", "--share", "0.5", "--", "sleep", "100",
                    check=0)
    assert r.stdout == b"j1\n"
    r = daemon.gmux("run", "-d", "--", "true", check=0)
    assert r.stdout == b"j2\n"


def test_job_environment_and_directory(daemon, tmp_path):
    daemon.start(fake="1xH100:80G,1xMI300X:192G,1xMax1550:128G")
    env = dict(daemon.env, MY_VAR="mine")
    code = ("import os; print(os.getcwd()); "
            "print(*[k + '=' + os.environ.get(k, '') for k in "
            "['MY_VAR','GMUX_JOB_ID','GMUX_SHARE','GMUX_MEM',"
            "'CUDA_VISIBLE_DEVICES','HIP_VISIBLE_DEVICES',"
            "'ROCR_VISIBLE_DEVICES','ZE_AFFINITY_MASK']], sep='\\n')")
    def run(*args):
        r = subprocess.run([GMUX, "run"] + list(args) +
                           ["--", "/usr/bin/python3", "-c", code],
                           env=env, cwd=str(tmp_path), capture_output=True)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.decode().splitlines()
        return lines[0], dict(l.split("=", 1) for l in lines[1:])
    cwd, v = run("--share", "0.25", "--card", "0")
    assert cwd == str(tmp_path)
    assert v["MY_VAR"] == "mine"
    assert v["GMUX_JOB_ID"] == "j1"
    assert v["GMUX_SHARE"] == "0.25"
    assert v["GMUX_MEM"] == str(20 << 30)
    assert v["CUDA_VISIBLE_DEVICES"] == "0"
    _, v = run("--share", "0.5", "--card", "1")
    assert v["HIP_VISIBLE_DEVICES"] == "1" and v["ROCR_VISIBLE_DEVICES"] == "1"
    assert v["GMUX_MEM"] == str(96 << 30)
    assert v["CUDA_VISIBLE_DEVICES"] == ""
    _, v = run("--share", "1", "--card", "2")
    assert v["ZE_AFFINITY_MASK"] == "2"


def test_ps_json_contract(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--share", "0.25", "--", "sleep", "100", check=0)
    daemon.gmux("run", "--", "sh", "-c", "exit 4")
    running = daemon.json("ps", "--json")
    assert [j["id"] for j in running] == ["j1"]
    j = running[0]
    for k in ("id", "state", "share", "mem", "card", "owner", "cmd",
              "exit_code"):
        assert k in j
    assert j["state"] == "running" and j["exit_code"] is None
    assert j["share"] == 0.25 and j["mem"] == 20 << 30 and j["card"] == 0
    assert j["cmd"] == ["sleep", "100"]
    assert j["owner"] == subprocess.check_output(["id", "-un"]).decode().strip()
    done = daemon.job("j2")
    assert done["state"] == "exited" and done["exit_code"] == 4
    assert done["card"] is None
    table = daemon.gmux("ps", check=0).stdout.decode().splitlines()
    assert table[0].split() == ["ID", "OWNER", "CARD", "SHARE", "MEM",
                                "STATE", "AGE", "COMMAND"]
    assert table[1].split()[:6] == ["j1", j["owner"], "0", "0.25", "20G",
                                    "running"]


def test_cards_json_contract(daemon):
    daemon.start(fake="2xH100:80G,1xMI300X:192G")
    daemon.gmux("run", "-d", "--share", "0.25", "--card", "1", "--", "sleep",
                "100", check=0)
    cards = daemon.json("cards", "--json")
    assert [c["vendor"] for c in cards] == ["nvidia", "nvidia", "amd"]
    for c in cards:
        for k in ("index", "vendor", "model", "uuid", "memory", "share_free",
                  "mem_free", "enforce"):
            assert k in c
        assert isinstance(c["enforce"], dict)
    assert cards[1]["share_free"] == 0.75
    assert cards[1]["mem_free"] == 60 << 30
    assert cards[2]["memory"] == 192 << 30 and cards[2]["model"] == "MI300X"
    assert len({c["uuid"] for c in cards}) == 3


def test_placement_best_fit_and_pinning(daemon):
    # best fit (docs/scheduling.md): the fullest card that fits, so whole
    # cards stay free for whole-card jobs
    daemon.start(fake="2xH100:80G")
    daemon.gmux("run", "-d", "--share", "0.5", "--", "sleep", "100", check=0)
    daemon.gmux("run", "-d", "--share", "0.25", "--", "sleep", "100", check=0)
    assert daemon.job("j1")["card"] == 0
    assert daemon.job("j2")["card"] == 0
    daemon.gmux("run", "-d", "--share", "0.5", "--", "sleep", "100", check=0)
    assert daemon.job("j3")["card"] == 1
    uuid = daemon.json("cards", "--json")[1]["uuid"]
    daemon.gmux("run", "-d", "--share", "0.1", "--card", uuid, "--", "sleep",
                "100", check=0)
    assert daemon.job("j4")["card"] == 1


def test_refusals_say_why(daemon):
    daemon.start(fake="1xH100:80G")
    r = daemon.gmux("run", "--share", "0.5", "--mem", "90G", "--", "true")
    assert r.returncode == 125
    assert b"needs 90G of memory; the largest card has 80G" in r.stderr
    daemon.gmux("run", "-d", "--share", "0.75", "--", "sleep", "100", check=0)
    r = daemon.gmux("run", "-d", "--no-wait", "--share", "0.5", "--", "true")
    assert r.returncode == 125 and r.stdout == b""
    assert b"0.5 of a card" in r.stderr, r.stderr
    r = daemon.gmux("run", "--card", "7", "--share", "0.1", "--", "true")
    assert r.returncode == 125 and b"card" in r.stderr
    # nothing refused was kept
    assert [j["id"] for j in daemon.json("ps", "-a", "--json")] == ["j1"]


def test_cpu_only_host(daemon):
    daemon.start(fake=None)
    assert daemon.json("cards", "--json") == []
    r = daemon.gmux("run", "--share", "0", "--", "echo", "cpu")
    assert r.returncode == 0 and r.stdout == b"cpu\n"
    r = daemon.gmux("run", "--share", "0.5", "--", "true")
    assert r.returncode == 125 and b"needs a card" in r.stderr


def test_failed_command_is_failed_with_127(daemon):
    daemon.start()
    r = daemon.gmux("run", "--", "/no/such/program")
    assert r.returncode == 127
    assert b"/no/such/program" in r.stderr
    assert daemon.job("j1")["state"] == "failed"


def test_logs_from_and_follow(daemon):
    daemon.start()
    daemon.gmux("run", "--", "printf", "abcdef")
    assert daemon.gmux("logs", "j1", check=0).stdout == b"abcdef"
    assert daemon.gmux("logs", "--from", "2", "j1", check=0).stdout == b"cdef"
    assert daemon.gmux("logs", "--from", "99", "j1", check=0).stdout == b""
    daemon.gmux("run", "-d", "--", "sh", "-c",
                "echo one; sleep 1; echo two", check=0)
    p = daemon.popen("logs", "-f", "j2", stdout=subprocess.PIPE)
    first = p.stdout.readline()
    assert first == b"one\n"
    rest = p.stdout.read()
    assert rest == b"two\n" and p.wait(10) == 0
    assert daemon.gmux("logs", "j404").returncode == 1


def test_attach_streams_and_returns_the_exit_code(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--", "sh", "-c", "echo a; sleep 0.5; echo b; "
                "exit 5", check=0)
    r = daemon.gmux("attach", "j1")
    assert r.returncode == 5 and r.stdout == b"a\nb\n"


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_stop_terms_the_group_then_kills_after_grace(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--", "sh", "-c",
                "trap '' TERM; sleep 100 & sleep 100", check=0)
    pid = wait_for(lambda: daemon.job("j1").get("pid"), what="pid")
    t = time.monotonic()
    daemon.gmux("stop", "--grace", "700ms", "j1", check=0)
    took = time.monotonic() - t
    assert 0.6 < took < 5
    j = daemon.job("j1")
    assert j["state"] == "stopped" and j["exit_code"] == 137
    assert not _group_alive(pid)
    daemon.gmux("run", "-d", "--", "sh", "-c",
                "trap 'exit 9' TERM; while :; do sleep 0.1; done", check=0)
    wait_for(lambda: daemon.job("j2").get("pid"), what="pid")
    out = daemon.gmux("stop", "j2", check=0)
    assert out.stdout == b"j2\n"
    assert daemon.job("j2")["exit_code"] == 9
    assert daemon.gmux("stop", "j99").returncode == 1


def test_jobs_outlive_a_killed_daemon_and_are_readopted(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--", "sh", "-c",
                "echo before; sleep 1.5; echo after; exit 6", check=0)
    daemon.gmux("run", "-d", "--", "sh", "-c", "sleep 0.3; exit 2", check=0)
    daemon.gmux("run", "-d", "--", "sleep", "100", check=0)
    wait_for(lambda: daemon.job("j1").get("pid"), what="pid")
    daemon.kill9()
    time.sleep(0.6)            # j2 ends while no daemon runs
    daemon.start()
    assert daemon.job("j3")["state"] == "running"
    assert daemon.job("j2")["exit_code"] == 2
    j1 = daemon.wait_state("j1", "exited")
    assert j1["exit_code"] == 6
    assert daemon.gmux("logs", "j1", check=0).stdout == b"before\nafter\n"
    daemon.gmux("stop", "--grace", "0", "j3", check=0)


def test_run_client_resumes_across_a_daemon_restart(daemon):
    daemon.start()
    script = ("i=0; while [ $i -lt 30 ]; do echo line$i; i=$((i+1)); "
              "sleep 0.05; done; exit 4")
    p = daemon.popen("run", "--", "sh", "-c", script, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
    time.sleep(0.5)
    daemon.kill9()
    time.sleep(0.3)
    daemon.start()
    out, err = p.communicate(timeout=30)
    assert p.returncode == 4, err
    assert out.decode() == "".join("line%d\n" % i for i in range(30))
    assert b"reconnecting" in err


def test_a_dropped_client_never_stops_the_job(daemon):
    daemon.start()
    p = daemon.popen("run", "--", "sh", "-c", "sleep 1; exit 3",
                     stdout=subprocess.DEVNULL)
    wait_for(lambda: daemon.json("ps", "--json"), what="job")
    p.kill()
    p.wait()
    assert daemon.job("j1")["state"] == "running"
    assert daemon.wait_state("j1", "exited")["exit_code"] == 3


def test_ctrl_c_stops_then_second_detaches(daemon):
    daemon.start()
    p = daemon.popen("run", "--grace", "5s", "--", "sh", "-c",
                     "trap 'echo term' TERM; while :; do sleep 0.1; done",
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: daemon.json("ps", "--json"), what="job")
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    wait_for(lambda: b"term" in open(os.path.join(
        daemon.home, "jobs", "j1", "log"), "rb").read(), what="TERM")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 130 and b"detached" in err
    assert daemon.job("j1")["state"] == "running"
    # a plain job ends on the first Ctrl-C, with its exit code
    p = daemon.popen("run", "--", "sleep", "100", stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
    wait_for(lambda: daemon.job("j2").get("pid"), what="job")
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=10)
    assert p.returncode == 143
    assert daemon.job("j2")["state"] == "stopped"


def test_api_over_curl(daemon):
    daemon.start()
    code, body = daemon.curl("GET", "/v1/version")
    assert code == 200 and json.loads(body)["api"] == 1
    code, body = daemon.curl("POST", "/v1/jobs", "{not json")
    assert code == 400 and "error" in json.loads(body)
    code, body = daemon.curl("POST", "/v1/jobs", '{"argv":["true"],"x":1}')
    assert code == 400 and "x" in json.loads(body)["error"]
    code, body = daemon.curl("POST", "/v1/jobs", '{"argv":"true"}')
    assert code == 400 and "argv" in json.loads(body)["error"]
    code, body = daemon.curl("GET", "/v1/jobs/j42")
    assert code == 404 and "j42" in json.loads(body)["error"]
    code, body = daemon.curl("GET", "/v1/nothing")
    assert code == 404
    code, body = daemon.curl("DELETE", "/v1/cards")
    assert code == 405
    code, body = daemon.curl("POST", "/v1/jobs",
                             '{"argv":["echo","hi"],"cwd":"/"}')
    assert code == 201 and json.loads(body)["id"] == "j1"
    daemon.wait_state("j1", "exited")
    code, body = daemon.curl("GET", "/v1/jobs/j1/log?raw=1")
    assert code == 200 and body == "hi\n"
    code, body = daemon.curl("GET", "/v1/jobs/j1/log?from=-1")
    assert code == 400
    # the daemon is still fine
    assert daemon.gmux("ps", check=0).returncode == 0


def test_files_are_private(daemon):
    daemon.start()
    daemon.gmux("run", "--", "true", check=0)
    for name in ("gmux.sock", "state.db", "gmux.pid", "gmux.log"):
        mode = stat.S_IMODE(os.stat(os.path.join(daemon.home, name)).st_mode)
        assert mode & 0o077 == 0, (name, oct(mode))
    for name in ("log", "status"):
        p = os.path.join(daemon.home, "jobs", "j1", name)
        wait_for(lambda: os.path.exists(p), what=name)
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0


def test_second_daemon_on_a_home_is_refused(daemon):
    daemon.start()
    r = daemon.gmux("serve", "--fake", "1xH100:80G")
    assert r.returncode == 1 and b"already serves" in r.stderr


def test_foreground_daemon_stops_cleanly_on_sigterm(daemon):
    p = daemon.popen("serve", "--fake", "1xH100:80G", stderr=subprocess.PIPE)
    wait_for(lambda: os.path.exists(daemon.socket), what="socket")
    wait_for(lambda: daemon.gmux("ps").returncode == 0, what="daemon")
    daemon.gmux("run", "-d", "--", "sleep", "100", check=0)
    # Its keeper has reported the job's pid.  (A SIGTERM in the first
    # milliseconds of a job's start can lose its keeper since the job-file
    # merge, about one run in seven: a known race, not yet found.)
    wait_for(lambda: daemon.job("j1").get("pid"), what="the job's pid")
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 0
    assert not os.path.exists(daemon.socket)
    daemon.start()
    assert daemon.job("j1")["state"] == "running"


def test_daemons_side_by_side(make_daemon):
    a = make_daemon().start(fake="1xH100:80G")
    b = make_daemon().start(fake="1xA100:40G")
    a.gmux("run", "--", "true", check=0)
    assert a.json("cards", "--json")[0]["model"] == "H100"
    assert b.json("cards", "--json")[0]["model"] == "A100"
    assert b.json("ps", "-a", "--json") == []


def test_no_daemon_is_a_clear_error(home):
    d = Daemon(home)
    r = d.gmux("ps")
    assert r.returncode == 1 and b"no gmux daemon" in r.stderr
    r = d.gmux("run", "--", "true")
    assert r.returncode == 125 and b"gmux serve" in r.stderr


def test_garbage_on_the_socket_does_not_hurt_the_daemon(daemon):
    import socket
    daemon.start()
    daemon.gmux("run", "-d", "--", "sleep", "100", check=0)
    junk = [b"\x00\xff" * 5000, b"GET /v1/jobs HTTP/1.1\r\n" + b"X: y\r\n" * 20000,
            b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{",
            b"GET /v1/jobs/../../etc/passwd HTTP/1.1\r\n\r\n",
            b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 5\r\n\r\n[1,2",
            b"PATCH /v1/jobs/j1 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"]
    for j in junk:
        s = socket.socket(socket.AF_UNIX)
        s.connect(daemon.socket)
        try:
            s.sendall(j)
        except OSError:
            pass
        s.settimeout(2)
        try:
            s.recv(100)
        except OSError:
            pass
        s.close()
    assert daemon.job("j1")["state"] == "running"
    assert daemon.gmux("run", "--", "echo", "ok").stdout == b"ok\n"


def test_a_client_that_stops_reading_costs_the_daemon_little(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--", "sh", "-c",
                "head -c 120000000 /dev/zero; sleep 100", check=0)
    p = daemon.popen("logs", "-f", "j1", stdout=subprocess.PIPE)
    wait_for(lambda: os.path.getsize(os.path.join(
        daemon.home, "jobs", "j1", "log")) > 119000000, 60, what="output")
    time.sleep(0.5)
    rss = int(next(l for l in open("/proc/%d/status" % daemon.pid())
                   if l.startswith("VmRSS:")).split()[1])
    assert rss < 40 * 1024, "daemon RSS %d kB" % rss
    # and the reader still gets everything once it reads
    got = 0
    while got < 120000000:
        got += len(p.stdout.read1(1 << 20))
    p.kill()
    daemon.gmux("stop", "--grace", "0", "j1", check=0)


def test_detached_serve_reports_a_failure(home):
    d = Daemon(home)
    d.env["GMUX_HOME"] = home + "/" + "x" * 120
    r = d.gmux("serve", "-d", "--fake", "1xH100:80G")
    assert r.returncode == 1 and b"too long" in r.stderr


def test_ps_long_shows_fence_refused_and_ceilings(daemon, tmp_path):
    daemon.start()
    code = ("import socket\n"
            "for p in (1, 2):\n"
            "    try: socket.create_connection(('127.0.0.1', p), timeout=2)\n"
            "    except OSError: pass\n")
    daemon.gmux("run", "--share", "0.25", "--burst", "--allow",
                "127.0.0.1:9", "--", "/usr/bin/python3", "-c", code, check=0)
    j = daemon.job("j1")
    assert j["fence"] == "allow 127.0.0.1:9"
    wait_for(lambda: daemon.job("j1")["refused"] == 2, what="the count")
    lines = daemon.gmux("ps", "-a", "-l", check=0).stdout.decode().splitlines()
    assert lines[0].split() == ["ID", "STATE", "PRIO", "FLAGS", "CEILING",
                                "FENCE", "REFUSED", "COMMAND"]
    f = lines[1].split()
    assert f[0] == "j1" and f[3] == "b" and f[5:8] == ["allow", "127.0.0.1:9",
                                                         "2"], lines


def test_cli_doc_matches_the_binary():
    # docs/cli.md's second half is every command's --help; regenerate it
    # with tests/cli-doc when a help text changes
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    r = subprocess.run([os.path.join(root, "tests", "cli-doc"), "--check"],
                       env={**os.environ, "GMUX": GMUX},
                       stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr.decode()
