"""Big values from a remote caller (docs/tasks.md, "Big values over
TCP"): arguments go up to the host's spool in parts, results come down
streamed; the owner's upload limit applies, another owner reads none of
them, and what a killed caller left there goes."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

import gmux
from conftest import reset, wait_for
from gmux import values
from gmux.client import APIError, _Conn, remotes

MIB = 1 << 20


@pytest.fixture
def tls_daemon(make_daemon, monkeypatch, tmp_path):
    """make(**env): a daemon over loopback TLS with env in its own, and
    this process's remote gpu1 pointed at it."""

    def make(**env):
        d = make_daemon(tls=True, env=env)
        client = tmp_path / "client"
        client.mkdir(exist_ok=True)
        (client / "remotes.json").write_text(json.dumps(
            {"default": "gpu1", "remotes": [{"name": "gpu1",
                                            "target": d.target}]}))
        os.chmod(client / "remotes.json", 0o600)
        monkeypatch.setenv("GMUX_HOME", str(client))
        reset()
        return d
    return make


def _values_dir(d):
    return os.path.join(d.home, "tasks", "spool", "o")


def _spooled(d):
    """Every file of the owners' directories of d's spool."""
    out = []
    for root, _, files in os.walk(_values_dir(d)):
        out += [os.path.join(root, f) for f in files]
    return out


def _hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _asan():
    return "asan" in os.environ.get("GMUX", "")


def test_a_remote_map_over_64_mib_arguments_and_results(tls_daemon):
    """Three 64 MiB arguments up, three 64 MiB results down, bytes
    checked; the daemon never holds one whole, and the spool is empty
    once the results are in."""
    d = tls_daemon()
    f = gmux.mesh(lambda b: hashlib.sha256(b).hexdigest().encode() +
                  b[::-1], target="gpu1")
    assert f(b"warm")[:64] == hashlib.sha256(b"warm").hexdigest().encode()
    before = _hwm_kib(d.pid())
    args = [os.urandom(64 * MIB) for _ in range(3)]
    out = f.map(args)
    for a, r in zip(args, out):
        assert r[:64] == hashlib.sha256(a).hexdigest().encode()
        assert hashlib.sha256(r[64:]).digest() == \
            hashlib.sha256(a[::-1]).digest()
    if not _asan():     # ASan's quarantine keeps what was freed
        grew = _hwm_kib(d.pid()) - before
        assert grew < 48 * 1024, "the daemon grew %d KiB" % grew
    wait_for(lambda: _spooled(d) == [], 30, what="the values to go")


def test_a_value_over_the_owner_s_upload_limit_is_refused(tls_daemon):
    d = tls_daemon(GMUX_UPLOAD_LIMIT="4M")
    f = gmux.mesh(len, target="gpu1")
    with pytest.raises(gmux.TaskError) as ei:
        f(b"x" * (5 * MIB))
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("size: ") and \
        "over the upload limit (UPLOAD_LIMIT, 4194304 bytes)" in msg, msg
    assert f(b"x" * (2 * MIB)) == 2 * MIB        # under it: through
    # the route itself: a 413 naming the field, nothing written
    target = remotes()[1]["gpu1"]
    with pytest.raises(APIError) as ei:
        values.upload(target, "too-big", b"y" * (5 * MIB))
    assert ei.value.status == 413 and ei.value.message.startswith("size:")
    assert _spooled(d) == []


def _put_part(target, query):
    """PUTs 5 bytes to value mine with query; its status and error."""
    c = _Conn(target, 30)
    c.sock.sendall(values._head(target, "PUT", "/v1/tasks/values/mine?" +
                                query, 5) + b"12345")
    st, hdrs = c.read_head()
    err = values._error(c, st, hdrs)
    c.close()
    return st, err


def test_another_owner_cannot_read_a_spooled_value(tls_daemon):
    d = tls_daemon()
    target = remotes()[1]["gpu1"]
    data = os.urandom(9 * MIB + 7)              # two parts, one short
    values.upload(target, "mine", data)
    assert values.download(target, "mine", len(data)) == data
    other = gmux.client.Target.parse(
        "bob", d.token_for("bob") + "@" + d.target.split("@", 1)[1])
    with pytest.raises(APIError) as ei:
        values.download(other, "mine")
    assert ei.value.status == 404 and "no value mine of yours" in \
        ei.value.message
    with pytest.raises(APIError) as ei:
        values.download(other, "../" + "x")
    assert ei.value.status in (400, 404)
    # bob's own value of the same name is his, and leaves alice's alone
    values.upload(other, "mine", b"bob's")
    assert values.download(other, "mine") == b"bob's"
    assert values.download(target, "mine") == data
    # parts in order only
    st, err = _put_part(target, "size=10&offset=5")
    assert st == 409 and err.message.startswith("offset: 5, but "), err
    # an offset that is not a number is refused, not taken as 0 (which
    # would start the value again)
    st, err = _put_part(target, "size=10&offset=-5")
    assert st == 400 and err.message.startswith("offset: "), err
    assert values.download(target, "mine") == data


def test_a_streamed_result_counts_the_owner_s_other_values(tls_daemon):
    """A jailed worker's result comes in U frames: the owner's values
    already spooled count against its limit with it, as for a PUT."""
    d = tls_daemon(GMUX_UPLOAD_LIMIT="8M")
    target = remotes()[1]["gpu1"]
    f = gmux.mesh(lambda n: b"r" * n, target="gpu1")
    assert len(f(5 * MIB)) == 5 * MIB           # alone: within it
    values.upload(target, "held", b"h" * (5 * MIB))
    with pytest.raises(gmux.TaskError) as ei:
        f(5 * MIB)
    msg = str(ei.value)
    assert msg.startswith("size: ") and "over the upload limit " \
        "(UPLOAD_LIMIT, 8388608 bytes)" in msg, msg
    assert [os.path.basename(p) for p in _spooled(d)] == ["held"]


KILLED = textwrap.dedent("""\
    import sys
    sys.path.insert(0, %(sdk)r)
    from gmux import values
    from gmux.client import remotes
    t = remotes()[1]["gpu1"]
    values.upload(t, "half", b"x" * (8 << 20) * 64)  # 512 MiB, in parts
""")


def test_what_a_killed_caller_left_in_the_spool_goes(tls_daemon, tmp_path):
    d = tls_daemon()
    script = tmp_path / "killed.py"
    script.write_text(KILLED % {"sdk": os.path.dirname(
        os.path.dirname(gmux.__file__))})
    p = subprocess.Popen([sys.executable, str(script)], env=dict(
        os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: any(os.path.getsize(f) >= 8 * MIB
                         for f in _spooled(d)), 60,
             what="a part in the spool")
    p.send_signal(signal.SIGKILL)
    p.wait()
    left = _spooled(d)
    assert len(left) == 1
    # unheld and unwritten for 30 s: gone at the next sweep (5 s)
    wait_for(lambda: _spooled(d) == [], 120, what="the part to go")


def test_a_big_result_does_not_hold_up_the_others(tls_daemon, monkeypatch):
    """A result in the host's spool is downloaded off the stream's reader
    thread: the small results behind a 64 MiB one come in while it
    downloads (docs/python.md, "Limits, now")."""
    tls_daemon()
    mesh = sys.modules["gmux.mesh"]
    f = gmux.mesh(lambda i: b"b" * (64 * MIB) if i == 0 else i,
                  target="gpu1", share=1.0)     # one worker: 0 goes first
    order = []
    small_in = threading.Event()
    real = values.download

    def held(*args, **kwargs):
        # the big one starts once the small ones are in (30 s at most):
        # on the reader thread, they could not come meanwhile
        small_in.wait(30)
        return real(*args, **kwargs)

    def came(i):
        order.append(i)
        if len(order) == 10 and 0 not in order:
            small_in.set()

    monkeypatch.setattr(values, "download", held)
    futs = mesh.session("gpu1").submit(f._opts, f._fn,
                                       [((i,), {}) for i in range(11)])
    for i, fut in enumerate(futs):
        fut.add_done_callback(lambda _, i=i: came(i))
    big = futs[0].result(timeout=300)
    assert len(big) == 64 * MIB and big.count(b"b") == 64 * MIB
    assert [fut.result(timeout=60) for fut in futs[1:]] == list(range(1, 11))
    assert sorted(order[:10]) == list(range(1, 11)) and order[10] == 0, \
        order
    assert f.map(range(3)) == [b"b" * (64 * MIB), 1, 2]
