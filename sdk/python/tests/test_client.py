"""gmux.Client: the typed API on the Unix socket and over pinned TLS."""

import json
import os
import socket
import ssl
import subprocess
import sys
import textwrap
import threading

import pytest

import gmux
from conftest import reset, wait_for


def test_typed_calls_on_the_unix_socket(daemon):
    c = gmux.Client()
    cards = c.cards()
    assert isinstance(cards[0], gmux.Card) and cards[0].model == "H100"
    j = c.run(["sh", "-c", "echo hi; sleep 30"], share=0.25, mem="10G")
    assert isinstance(j, gmux.Job) and j.state == "running"
    assert j.id in [x.id for x in c.jobs()]
    assert c.resize(j.id, share=0.5).share == 0.5
    wait_for(lambda: b"hi" in b"".join(c.logs(j.id)), 10, what="output")
    assert c.stop(j.id, wait=True).state == "stopped"
    assert c.job(j.id).state == "stopped"
    u = c.usage(since="1h", by="job")
    assert isinstance(u, gmux.Usage) and u.by == "job"
    done = c.run(["sh", "-c", "echo a; echo b"])
    assert b"".join(c.logs(done.id, follow=True)) == b"a\nb\n"


def test_errors_carry_the_status_and_message(daemon):
    c = gmux.Client()
    with pytest.raises(gmux.APIError) as ei:
        c.job("j999")
    assert ei.value.status == 404 and "j999" in ei.value.message
    with pytest.raises(gmux.APIError) as ei:
        c.run(["true"], share=2)
    assert ei.value.status == 400 and "share" in ei.value.message


def test_no_daemon_is_a_clear_error(home, monkeypatch):
    monkeypatch.setenv("GMUX_HOME", home)
    with pytest.raises(gmux.NoDaemon, match="no gmux daemon"):
        gmux.Client().cards()
    with pytest.raises(ValueError, match="gmux remote add nowhere"):
        gmux.Client("nowhere")


def boom(x):
    raise ValueError("bad value %r" % (x,))


def _remotes(tmp_path, targets):
    """A client's home whose remotes file names targets (NAME -> target),
    the first the default."""
    client = tmp_path / "client"
    client.mkdir()
    (client / "remotes.json").write_text(json.dumps(
        {"default": next(iter(targets)), "remotes": [
            {"name": k, "target": v} for k, v in targets.items()]}))
    os.chmod(client / "remotes.json", 0o600)
    return client


def _remote(monkeypatch, tmp_path, target, name="gpu1", fresh=True):
    client = _remotes(tmp_path, {name: target})
    monkeypatch.setenv("GMUX_HOME", str(client))
    if fresh:
        reset()


def test_a_remote_over_pinned_tls(make_daemon, monkeypatch, tmp_path):
    d = make_daemon(tls=True)
    _remote(monkeypatch, tmp_path, d.target)
    c = gmux.Client("gpu1")
    assert c.cards()[0].model == "H100"
    j = c.run(["true"])
    assert j.confined
    assert "TOKEN" not in repr(c.target) and d.target.split("@")[0] \
        not in repr(c.target)


def test_a_wrong_pin_sends_nothing(monkeypatch, tmp_path):
    """A TLS server with another key: the client checks the pin inside
    the handshake and closes before writing a byte of the request."""
    key, crt = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key),
                    "-out", str(crt), "-subj", "/CN=x", "-days", "1"],
                   check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(crt), str(key))
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = []

    def serve():
        conn, _ = srv.accept()
        try:
            with ctx.wrap_socket(conn, server_side=True) as s:
                s.settimeout(5)
                while True:
                    b = s.recv(4096)
                    if not b:
                        break
                    got.append(b)
        except (OSError, ssl.SSLError):
            pass
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    token = "t" * 43
    _remote(monkeypatch, tmp_path, "%s@127.0.0.1:%d#%s" % (token, port,
                                                          "0" * 64))
    with pytest.raises(gmux.PinError, match="pinned key"):
        gmux.Client("gpu1").cards()
    t.join(10)
    assert got == []
    # and the right pin passes the same check
    der = ssl.PEM_cert_to_DER_cert(crt.read_text())
    from gmux.client import spki_pin
    pub = subprocess.run(["openssl", "x509", "-in", str(crt), "-pubkey",
                          "-noout"], capture_output=True, check=True).stdout
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"],
                          input=pub, capture_output=True, check=True).stdout
    import hashlib
    assert spki_pin(der) == hashlib.sha256(spki).hexdigest()


def test_remote_mesh_calls_run_on_the_host_s_jailed_workers(
        make_daemon, monkeypatch, tmp_path):
    """A second daemon over loopback TLS: its workers are confined remote
    jobs of the token's owner that reach only its broker; calls, maps,
    exceptions, a crashing task, and values over a frame through the
    host's spool (test_bigval.py has the big ones)."""
    d = make_daemon(tls=True)
    _remote(monkeypatch, tmp_path, d.target)
    base = 10
    f = gmux.mesh(lambda x: (x + base, os.getpid()), target="gpu1")
    assert f(1)[0] == 11
    assert [v for v, _ in f.map(range(20))] == list(range(10, 30))
    ws = d.json("workers", "--json")
    assert ws and len({w["owner"] for w in ws}) == 1
    for w in ws:
        job = d.job(w["job"])
        assert job["confined"] and job["owner"] == ws[0]["owner"]
    with pytest.raises(ValueError, match="bad value 3"):
        gmux.mesh(lambda x: boom(x), target="gpu1")(3)
    with pytest.raises(gmux.TaskError, match="lost 3 times"):
        gmux.mesh(lambda: os._exit(1), target="gpu1")()
    assert f(2)[0] == 12                             # the worker lives
    big = gmux.mesh(lambda n: b"x" * n, target="gpu1")
    assert big(2 << 20) == b"x" * (2 << 20)
    v = b"y" * (2 << 20) + b"z"
    assert gmux.mesh(lambda b: b[::-1], target="gpu1")(v) == v[::-1]


def test_a_remote_worker_reaches_the_broker_and_nothing_else(
        make_daemon, monkeypatch, tmp_path):
    """The socket the daemon lets a remote worker reach is its broker's
    alone: the daemon's own socket stays refused from the same task."""
    d = make_daemon(tls=True)
    _remote(monkeypatch, tmp_path, d.target)
    gmux_sock = d.socket

    def reach(path):
        import socket as so
        s = so.socket(so.AF_UNIX)
        try:
            s.connect(path)
            return "connected"
        except OSError as e:
            return e.__class__.__name__
        finally:
            s.close()
    probe = gmux.mesh(reach, target="gpu1")
    assert probe(gmux_sock) == "ConnectionRefusedError"
    code, body = _tcp_post(d, {"argv": ["true"], "task_worker": True,
                               "allow": ["unix:" + gmux_sock]})
    assert code == 400 and "unix:" in json.loads(body)["error"]


def _tcp_post(d, body):
    """POST /v1/jobs over the daemon's TLS port with the client's token."""
    c = gmux.Client("gpu1")
    try:
        c.call("POST", "/v1/jobs", body)
    except gmux.APIError as e:
        return e.status, json.dumps({"error": e.message})
    return 200, "{}"


def test_gmux_workers_lists_them(daemon):
    assert daemon.gmux("workers", check=0).stdout == b"no workers\n"
    assert gmux.mesh(lambda: 1)() == 1
    out = daemon.gmux("workers", check=0).stdout.decode()
    assert out.splitlines()[0].split()[:4] == ["ID", "JOB", "OWNER", "CARD"]
    ws = daemon.json("workers", "--json")
    assert ws[0]["state"] in ("idle", "busy") and ws[0]["device"] == "H100"
    assert ws[0]["score"] > 0
    assert [w.id for w in gmux.Client().workers()] == [ws[0]["id"]]
    r = daemon.gmux("workers", "extra")
    assert r.returncode == 2 and b"unexpected argument" in r.stderr
    assert b"--json" in daemon.gmux("workers", "--help", check=0).stdout


def test_task_routes_refuse_bad_requests(daemon):
    code, body = daemon.curl("GET", "/v1/tasks/connect?session=00")
    assert code == 400 and "Upgrade" in json.loads(body)["error"]
    r = subprocess.run(["curl", "-s", "--unix-socket", daemon.socket, "-H",
                        "Upgrade: gmux-tasks/1", "-w", "\n%{http_code}",
                        "http://gmux/v1/tasks/connect?session=xyz"],
                       capture_output=True, timeout=10)
    text, _, code = r.stdout.decode().rpartition("\n")
    assert code == "400" and "session" in json.loads(text)["error"]
    code, body = daemon.curl("GET", "/v1/workers")
    assert code == 200 and json.loads(body) == []


def test_a_process_that_is_no_job_cannot_be_a_worker(daemon):
    gmux.mesh(lambda: 1)()                  # the broker and its socket
    path = os.path.join(daemon.home, "tasks", "w", "worker.sock")
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(5)
    from gmux import wire
    try:
        s.sendall(wire.frame(wire.HELLO, {"pool": "p"}))
        got = s.recv(100)
    except (ConnectionResetError, BrokenPipeError):
        got = b""
    assert got == b""                       # closed at once


def test_a_session_is_its_owner_s_only(make_daemon, monkeypatch, tmp_path):
    """bob's token cannot take a session the local user's caller holds,
    nor see bob's worker list hold anyone else's workers."""
    d = make_daemon(tls=True)
    assert gmux.mesh(lambda: 1)() == 1          # a local session, a worker
    from gmux.mesh import _sessions
    session = _sessions[None].id
    bob = d.token_for("bob") + "@" + d.target.split("@", 1)[1]
    _remote(monkeypatch, tmp_path, bob, fresh=False)   # the session stays
    c = gmux.Client("gpu1")
    with pytest.raises(gmux.APIError) as ei:
        c.upgrade("/v1/tasks/connect?session=" + session)
    assert ei.value.status == 403 and "another owner" in ei.value.message
    assert c.workers() == []
    sock, hdrs, _ = c.upgrade("/v1/tasks/connect?session=" + "b" * 32)
    assert "gmux-worker-dir" not in hdrs       # no paths over TCP
    sock.close()


_STATE = {}


def _leave(x):
    """What the last call in this process left, and its owner's job."""
    seen = _STATE.get("last")
    _STATE["last"] = x
    return seen, os.environ.get("GMUX_JOB_ID")


def test_a_kept_process_never_serves_another_owner(make_daemon, monkeypatch,
                                                   tmp_path):
    """alice's and bob's tokens on one host, the same function, the same
    options: each owner's calls run in that owner's workers only, so what
    alice's calls left never reaches bob's."""
    d = make_daemon(tls=True)
    at = d.target.split("@", 1)[1]
    client = _remotes(tmp_path, {who: d.token_for(who) + "@" + at
                                 for who in ("alice", "bob")})
    monkeypatch.setenv("GMUX_HOME", str(client))
    reset()
    fa = gmux.mesh(_leave, target="alice")
    fb = gmux.mesh(_leave, target="bob")
    assert fa(1)[0] is None and fa(2)[0] == 1      # alice's state carries
    seen, bjob = fb(3)
    assert seen is None                            # not to bob
    assert fa(4)[0] == 2 and fb(5)[0] == 3         # each kept its own
    owner = {w["job"]: w["owner"] for w in d.json("workers", "--json")}
    assert owner[bjob] == "bob"
    assert set(owner.values()) == {"alice", "bob"}


def test_remote_workers_import_the_caller_s_own_modules(make_daemon,
                                                         tmp_path):
    """A script next to its helper modules calls a host: its directory
    goes there as gmux run sends one (gmux sync), and the workers start in
    it, so what the function imports of the caller's own imports there: a
    module next to the script, one in a package below it."""
    d = make_daemon(tls=True)
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "helper.py").write_text("def twice(x):\n    return 2 * x\n")
    (proj / "pkg" / "__init__.py").write_text("")
    (proj / "pkg" / "deep.py").write_text("K = 5\n")
    (proj / "demo.py").write_text(textwrap.dedent("""\
        import os
        import gmux, helper

        @gmux.mesh(target="gpu1")
        def work(x):
            from pkg import deep
            return helper.twice(x) + deep.K, os.getcwd()

        print(work(21)[0], [v for v, _ in work.map([1, 2])],
              work(0)[1] != os.getcwd())
        """))
    client = _remotes(tmp_path, {"gpu1": d.target})
    env = dict(os.environ, GMUX_HOME=str(client), GMUX_SYNC="1",
               GMUX_BIN=os.environ.get("GMUX", "gmux"),
               PYTHONPATH=os.path.dirname(os.path.dirname(gmux.__file__)))
    r = subprocess.run([sys.executable, "demo.py"], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "47 [7, 9] True"
    ws = d.json("workers", "--json")
    assert ws and all(d.job(w["job"])["confined"] for w in ws)
    env["GMUX_SYNC"] = "0"          # as before: the function's module only
    r = subprocess.run([sys.executable, "demo.py"], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "No module named 'helper'" in r.stderr
