"""@mesh across a cluster's members (docs/python.md, "Across a cluster"):
a map entered on one member spreads its workers over the others as
cluster jobs; a worker on another member calls home to the entry's
broker over the members' TLS, relayed by its member, and is leased only
its owner's tasks; a member that dies loses only its leased tasks."""

import json
import os
import pwd
import shutil
import socket
import ssl
import subprocess
import sys
import textwrap

import pytest

from conftest import wait_for
from clusterlib import WARM, cluster_state, etcd, members, tmp  # noqa
from remotelib import client_context, https

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SDK = os.path.join(ROOT, "sdk", "python")
sys.path.insert(0, SDK)
from gmux import wire  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

OWNER = "X-Gmux-Peer-Owner"

# The caller: a map whose every task records the member it ran on.  A
# task marks its run in DIR (a file per run), then waits (generously) for
# what the test wants: both members seen ("both"; "three": three), the
# test's release
# file ("release"), or nothing ("none").  The workers of a caller on a member's socket are not
# jailed, so they share /tmp with the test.
CALLER = textwrap.dedent("""\
    import json, os, sys, time, uuid
    sys.path.insert(0, %(sdk)r)
    import gmux
    DIR, N, WAIT = sys.argv[1], int(sys.argv[2]), sys.argv[3]

    def where(i):
        m = os.environ.get("GMUX_CLUSTER_MEMBER")
        open(os.path.join(DIR, "%%s-%%d-%%s" %% (m, i, uuid.uuid4().hex)),
             "w").close()
        end = time.time() + 120
        while WAIT != "none" and time.time() < end:
            names = os.listdir(DIR)
            seen = {n.split("-")[0] for n in names if n != "release"}
            if WAIT in ("both", "three") and len(seen) >= (
                    2 if WAIT == "both" else 3):
                break
            if WAIT == "release" and "release" in names:
                break
            time.sleep(0.05)
        return [i, m]

    f = gmux.mesh(share=0.5)(where)
    print(json.dumps(f.map(range(N))))
""")


def _joined(d, n):
    wait_for(lambda: len(cluster_state(d)) == n, 30, 0.1,
             what="%d members" % n)


def _pair(members, cid):
    a, b = members("a", cid, tls=True), members("b", cid, tls=True)
    _joined(a, 2)
    _joined(b, 2)
    return a, b


def _caller(a, tmp, n, wait):
    """The caller's map on a's socket, started; its marks' directory."""
    script = os.path.join(tmp, "caller.py")
    with open(script, "w") as f:
        f.write(CALLER % {"sdk": SDK})
    marks = os.path.join(tmp, "marks")
    os.makedirs(marks, exist_ok=True)
    env = dict(a.env, GMUX_SYNC="0")
    env.pop("GMUX_LOCAL", None)
    p = subprocess.Popen([sys.executable, script, marks, str(n), wait],
                         env=env, cwd=tmp, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    return p, marks


def _result(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()[-3000:]
    return json.loads(out)


def _runs(marks):
    """(member, item) of every run the tasks marked."""
    out = []
    for n in os.listdir(marks):
        if n != "release":
            m, i, _ = n.split("-")
            out.append((m, int(i)))
    return out


def test_a_map_spreads_its_workers_over_two_members(members, tmp):
    a, b = _pair(members, "m1")
    p, marks = _caller(a, tmp, 16, "both")
    res = _result(p)
    assert [i for i, _ in res] == list(range(16))       # input order
    assert {m for _, m in res} == {"a", "b"}, res
    runs = _runs(marks)
    assert sorted(i for _, i in runs) == list(range(16))  # each ran once
    # the entry lists the worker that runs on b, with its cluster job
    ws = a.json("workers", "--json")
    there = [w for w in ws if w.get("member") == "b"]
    assert there and all(w["job"] and w["owner"] for w in there), ws
    # with its share, card and cap there, as its member said them
    assert all(w["share"] == 0.5 and w["card"] == 0 and w["mem"] ==
               40 << 30 for w in there), there
    # its device named from its own member's cards
    assert {w["device"] for w in there} == {"H100"}, there
    # and b's broker has none: its worker is the entry's, not its own
    # broker's (b's merged listing shows them as the entry's, host a)
    assert b.json("workers", "--here", "--json") == []
    assert {w["host"] for w in b.json("workers", "--json")} == {"a"}


def test_a_map_across_three_members(members, tmp):
    a, b = _pair(members, "m7")
    c = members("c", "m7", tls=True)
    for d in (a, b, c):
        _joined(d, 3)
    p, marks = _caller(a, tmp, 24, "three")
    res = _result(p)
    assert [i for i, _ in res] == list(range(24))
    assert {m for _, m in res} == {"a", "b", "c"}, res
    assert sorted(i for _, i in _runs(marks)) == list(range(24))
    table = a.gmux("workers", check=0).stdout.decode().splitlines()
    assert table[0].split()[-1] == "MEMBER"
    assert {r.split()[-1] for r in table[1:]} == {"a", "b", "c"}, table
    # gpumesh's workers(): each worker's hostname is its member
    r = subprocess.run([sys.executable, "-c", "import json, sys; "
                        "sys.path.insert(0, %r); import gmux; print(json."
                        "dumps(sorted({w['hostname'] for w in gmux.GPUMesh()"
                        ".workers()})))" % SDK], env=a.env,
                       capture_output=True, timeout=60)
    assert json.loads(r.stdout) == ["a", "b", "c"], r.stderr


def test_a_member_killed_mid_map_loses_only_its_leased_tasks(members, tmp):
    a, b = _pair(members, "m2")
    p, marks = _caller(a, tmp, 8, "release")
    # 2 workers on each member, each holding one task
    wait_for(lambda: sorted(m for m, _ in _runs(marks)) ==
             ["a", "a", "b", "b"], 120, 0.1, what="two tasks on each member")
    held = sorted(i for m, i in _runs(marks) if m == "b")
    b.kill9()
    # the entry sees b's workers go (their relays went with b's daemon)
    wait_for(lambda: not [w for w in a.json("workers", "--json")
                          if w.get("member") == "b"], 60, 0.1,
             what="b's workers to leave the entry")
    open(os.path.join(marks, "release"), "w").close()
    res = _result(p)
    assert [i for i, _ in res] == list(range(8))
    runs = _runs(marks)
    for i in range(8):
        n = sum(1 for _, j in runs if j == i)
        # b's two leased tasks ran again, on a; the others once
        assert n == (2 if i in held else 1), (i, runs)
    assert {m for i, m in res if i in held} == {"a"}


def _peer_worker(a, cert, owner, pool, job="x.1"):
    """A worker's stream as a member relays it: an upgraded GET of
    /v1/tasks/peer-worker showing cert, owner in the peer header; then
    its hello.  Returns the TLS socket."""
    ctx = client_context()
    ctx.load_cert_chain(*cert)
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", a.port),
                                                 timeout=30))
    s.sendall(("GET /v1/tasks/peer-worker?job=%s HTTP/1.1\r\nHost: a\r\n"
               "%s: %s\r\nUpgrade: gmux-tasks/1\r\nConnection: Upgrade\r\n"
               "\r\n" % (job, OWNER, owner)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        assert c, head
        head += c
    assert head.startswith(b"HTTP/1.1 101 "), head
    s.sendall(wire.frame(wire.HELLO, {"pool": pool, "score": 1.0,
                                      "device": "test"}))
    return s


def _cert(d):
    return (os.path.join(d.home, "tls", "cert.pem"),
            os.path.join(d.home, "tls", "key.pem"))


def _caller_stream(a):
    """A caller's task stream on a's socket (its owner: this user)."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(a.socket)
    s.sendall(b"GET /v1/tasks/connect?session=%s HTTP/1.1\r\nHost: x\r\n"
              b"Upgrade: gmux-tasks/1\r\nConnection: Upgrade\r\n\r\n"
              % (b"ab" * 8))
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101 "), head
    return s


def _frames(s, reader, want):
    """Reads s until a frame of kind want comes; returns it."""
    s.settimeout(60)
    while True:
        for f in reader.feed(s.recv(65536)):
            if f[0] == want:
                return f


def test_a_peer_worker_is_leased_only_its_owners_tasks(members, tmp):
    a, b = _pair(members, "m3")
    pool = "s0-ownertest"
    # another owner's worker on b, idle first: the one a lease would go
    # to if owners mixed
    other = _peer_worker(a, _cert(b), "bob", pool)
    wait_for(lambda: [w for w in a.json("workers", "--json")
                      if w["owner"] == "bob"], 30, 0.05, what="bob's worker")
    caller = _caller_stream(a)
    w = a.json("workers", "--json")[0]
    assert w["member"] == "b" and w["job"] == "x.1", w
    caller.sendall(wire.frame(wire.SUBMIT, {"id": 1, "pool": pool},
                              b"the call"))
    mine = _peer_worker(a, _cert(b), pwd.getpwuid(os.getuid()).pw_name,
                        pool, job="x.2")
    kind, hdr, data = _frames(mine, wire.Reader(), wire.LEASE)
    assert data == b"the call" and hdr["attempt"] == 1
    # bob's worker got nothing: the task was its caller's owner's
    other.setblocking(False)
    with pytest.raises((BlockingIOError, ssl.SSLWantReadError)):
        other.recv(1)
    mine.sendall(wire.frame(wire.DONE, {"task": hdr["task"]}, b"the value"))
    kind, hdr, data = _frames(caller, wire.Reader(), wire.RESULT)
    assert hdr["state"] == "done" and data == b"the value"
    for s in (other, mine, caller):
        s.close()


def test_only_a_member_relays_a_worker(members, tmp):
    a, b = _pair(members, "m4")
    stranger = (os.path.join(tmp, "x.pem"), os.path.join(tmp, "x.key"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=x",
                    "-days", "1", "-keyout", stranger[1], "-out",
                    stranger[0]], check=True, capture_output=True,
                   timeout=30)
    path = "/v1/tasks/peer-worker?job=x.1"
    up = {"Upgrade": "gmux-tasks/1"}
    # a forged owner from a non-member (a stranger's key, or none)
    for cert in (stranger, None):
        st, _, body = https(a.port, "GET", path, cert=cert,
                            headers=dict(up, **{OWNER: "alice"}))
        assert st == 403, (cert, st, body)
        assert b"only a member of this cluster" in body
    # a token's holder is no member, even for its own owner
    bob = a.token_for("bob")
    st, _, body = https(a.port, "GET", path, token=bob, headers=up)
    assert st == 403 and b"only a member of this cluster relays" in body
    # a member's call without the upgrade, or the job, is a 400
    st, _, body = https(a.port, "GET", path, cert=_cert(b),
                        headers={OWNER: "alice"})
    assert st == 400 and b"Upgrade" in body
    st, _, body = https(a.port, "GET", "/v1/tasks/peer-worker",
                        cert=_cert(b), headers=dict(up, **{OWNER: "alice"}))
    assert st == 400 and b"job" in body
    for q, field in (("seats=101", b"seats"), ("card=x", b"card"),
                     ("mem_mb=-1", b"mem_mb")):
        st, _, body = https(a.port, "GET", path + "&" + q, cert=_cert(b),
                            headers=dict(up, **{OWNER: "alice"}))
        assert st == 400 and body.find(field) != -1, (q, body)
    assert a.json("workers", "--json") == []


# A caller over TCP with a token: its workers are jailed remote jobs (on
# the entry, and as cluster jobs on the other member), so they share no
# directory with the test; it waits for its four workers to connect (the
# pool is warmed first), then maps: the first leases go to every idle
# worker, on both members.
TCP_CALLER = textwrap.dedent("""\
    import json, os, sys, time
    sys.path.insert(0, %(sdk)r)
    import gmux
    import gmux.mesh
    M = sys.modules["gmux.mesh"]
    N = int(sys.argv[1])
    %(warm)s

    def where(i):
        time.sleep(0.05)
        return [i, os.environ.get("GMUX_CLUSTER_MEMBER"),
                os.environ.get("GMUX_CLUSTER_JOB") or
                os.environ.get("GMUX_JOB_ID")]

    f = gmux.mesh(share=0.5, target="a")(where)
    warm(f, "a")
    print(json.dumps(f.map(range(N))))
""")


def tcp_env(a, tmp, **extra):
    """The environment of a caller over TCP: its own home, whose
    remotes file names member a as "a" with alice's token."""
    alice = a.token_for("alice")
    target = alice + "@" + a.target.split("@", 1)[1]
    client = os.path.join(tmp, "client")
    os.makedirs(client, exist_ok=True)
    with open(os.path.join(client, "remotes.json"), "w") as f:
        json.dump({"default": "a", "remotes": [{"name": "a",
                                                "target": target}]}, f)
    os.chmod(os.path.join(client, "remotes.json"), 0o600)
    env = dict(os.environ, GMUX_HOME=client, **extra)
    env.pop("XDG_CONFIG_HOME", None)
    return env


def test_a_tcp_callers_workers_are_jailed_and_its_own(members, tmp):
    a, b = _pair(members, "m5")
    script = os.path.join(tmp, "tcp.py")
    with open(script, "w") as f:
        f.write(TCP_CALLER % {"sdk": SDK, "warm": WARM})
    env = tcp_env(a, tmp, GMUX_SYNC="0")
    p = subprocess.Popen([sys.executable, script, "24"], env=env, cwd=tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    res = _result(p)
    assert [i for i, _, _ in res] == list(range(24))
    assert {m for _, m, _ in res} == {"a", "b"}, res
    cluster = {j["id"]: j for j in a.json("cluster", "ps", "--json")}
    for _, m, job in res:
        rec = cluster[job] if job in cluster else a.job(job)
        assert rec["owner"] == "alice", rec
    ws = a.json("workers", "--json")
    assert {w["owner"] for w in ws} == {"alice"}
    assert len([w for w in ws if w.get("member") == "b"]) == 2, ws


def test_members_without_tls_keep_a_map_on_its_entry(members, tmp):
    """No member can call an entry that serves no TLS: the map runs on
    the entry's own workers, and no worker job goes to the other."""
    a, b = members("a", "m6"), members("b", "m6")
    _joined(a, 2)
    _joined(b, 2)
    p, marks = _caller(a, tmp, 6, "none")
    res = _result(p)
    assert res == [[i, "a"] for i in range(6)]
    assert (cluster_state(a) and
            a.json("cluster", "ps", "--json") == [])


# A caller on a's socket whose every argument is over a frame (it goes
# by file, in a's spool): its four workers connected first, so the first
# four leases go to each, on both members.
BIG_CALLER = textwrap.dedent("""\
    import json, os, sys, time
    sys.path.insert(0, %(sdk)r)
    import gmux
    import gmux.mesh
    M = sys.modules["gmux.mesh"]
    %(warm)s

    def where(i, blob):
        return [i, os.environ.get("GMUX_CLUSTER_MEMBER"), len(blob)]

    f = gmux.mesh(share=0.5)(where)
    warm(f, None)
    items = [(i, b"x" * ((3 << 19) + i)) for i in range(16)]
    print(json.dumps(f.map(items)))
""")


def test_values_by_file_reach_the_other_members_workers(members, tmp):
    """A value over a frame is a file on the entry's disk: a worker on
    another member is streamed it (docs/tasks.md, "Big values over
    TCP")."""
    a, b = _pair(members, "m8")
    script = os.path.join(tmp, "big.py")
    with open(script, "w") as f:
        f.write(BIG_CALLER % {"sdk": SDK, "warm": WARM})
    p = subprocess.Popen([sys.executable, script], env=dict(a.env,
                         GMUX_SYNC="0"), cwd=tmp, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    res = _result(p)
    assert [i for i, _, _ in res] == list(range(16))
    assert [n for _, _, n in res] == [(3 << 19) + i for i in range(16)]
    assert {m for i, m, _ in res} == {"a", "b"}, res


def test_a_worker_whose_entry_is_gone_ends(members, tmp):
    """The entry stops: the relays to it end, its workers on b reconnect
    to b's socket, b cannot reach the entry, and their jobs end."""
    a, b = _pair(members, "m9")
    p, marks = _caller(a, tmp, 8, "both")
    _result(p)
    running = [j for j in b.json("ps", "--json") if j["state"] == "running"]
    assert running
    a.stop()
    wait_for(lambda: not [j for j in b.json("ps", "--json")
                          if j["state"] == "running"], 60, 0.2,
             what="b's workers to end")
    for j in running:
        rec = b.job(j["id"])
        assert rec["state"] == "stopped", rec
