"""An entry member's loss (docs/python.md, "Across a cluster"): a caller
over TCP whose entry member is killed mid-map moves to another member,
sends again every task without a result, and starts workers there; every
result comes back once, in input order, attempts as the new entry counts
them.  And `gmux workers` merged over the members."""

import json
import os
import pwd
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import free_port, wait_for
from clusterlib import VERBOSE, WARM, cluster_state, https_json, joined
from clusterlib import etcd, members, tmp  # noqa

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SDK = os.path.join(ROOT, "sdk", "python")

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

# The caller, over TCP to member a: its pool warmed (its four workers
# connected, two on each member), then N tasks of 0.3 s.  Item KILLER
# (if not -1) kills its own process at each attempt, a second in.  A
# thread says, in the file HALF, when a quarter of the results came.
# Each result says where and when it ended.
CALLER = textwrap.dedent("""\
    import json, os, sys, threading, time
    sys.path.insert(0, %(sdk)r)
    import gmux
    import gmux.mesh
    M = sys.modules["gmux.mesh"]
    N, KILLER, HALF = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    BIG = int(os.environ.get("T_BIG", "0"))     # each call's bytes
    M.RECONNECT = float(os.environ.get("T_RECONNECT", "60"))

    def where(i, blob=None):
        if i == KILLER:
            time.sleep(1)
            os.kill(os.getpid(), 9)
        time.sleep(0.3)
        r = [i, os.environ.get("GMUX_CLUSTER_MEMBER"), time.time()]
        if blob is not None:
            r.append([len(blob), blob.count(bytes([i %% 256]))])
        return r

    %(warm)s

    f = gmux.mesh(share=0.5, target="a")(where)
    s = warm(f, "a", here=True)

    def watch():
        # a result came for each call seen pending that is no more (big
        # calls go up one by one: the first results come before the last
        # call is sent, so pending need never hold all N)
        seen = set()
        while True:
            with s.lock:
                now = set(s.pending)
            seen |= now
            if len(seen - now) >= N // 4:
                break
            time.sleep(0.01)
        open(HALF, "w").close()
    threading.Thread(target=watch, daemon=True).start()
    out = []
    items = [(i, bytes([i %% 256]) * BIG) if BIG else i for i in range(N)]
    for r in f.map(items, return_exceptions=True):
        out.append(r if isinstance(r, list) else ["error", str(r)])
    print(json.dumps(out))
""")


def _start(d):
    """Serves TLS on a free loopback port (a second host of the shared
    token file prints no invite)."""
    d.port = free_port()
    d.start(*VERBOSE, fake=d.fake, addr="127.0.0.1:%d" % d.port)
    return d


def _cluster(members, tmp, cid, names=("a", "b")):
    conf = "TOKENS=%s\n" % os.path.join(tmp, "tokens.json")
    ds = [_start(members(n, cid, start=False, extra=conf)) for n in names]
    for d in ds:
        joined(d, len(ds))
    return ds


def _client(tmp, a, owner="alice"):
    """A client's GMUX_HOME whose remote "a" is member a, with owner's
    token (one every member takes: the shared token file)."""
    token = a.token_for(owner)
    pin = [m["pin"] for m in cluster_state(a) if m["name"] == "a"][0]
    return _remotes(tmp, owner, "%s@127.0.0.1:%d#%s" % (token, a.port, pin),
                    a.port), token


def _remotes(tmp, who, target, port):
    """A client's GMUX_HOME whose default remote "a" is target."""
    home = os.path.join(tmp, "client-" + who)
    os.makedirs(home)
    with open(os.path.join(home, "remotes.json"), "w") as f:
        json.dump({"default": "a", "remotes": [{"name": "a",
                                                "target": target}]}, f)
    os.chmod(os.path.join(home, "remotes.json"), 0o600)
    env = dict(os.environ, GMUX_HOME=home, GMUX_SYNC="0")
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("GMUX_LOCAL", None)
    return env


def _caller(tmp, env, n, killer=-1, big=0):
    script = os.path.join(tmp, "caller.py")
    with open(script, "w") as f:
        f.write(CALLER % {"sdk": SDK, "warm": WARM})
    half = os.path.join(tmp, "half")
    p = subprocess.Popen([sys.executable, script, str(n), str(killer), half],
                         env=dict(env, T_BIG=str(big)), cwd=tmp, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    return p, half


def _result(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()[-3000:]
    return json.loads(out), err.decode()


def _killed_mid_map(members, tmp, cid, n, killer=-1, big=0):
    a, b = _cluster(members, tmp, cid)
    env, _ = _client(tmp, a)
    p, half = _caller(tmp, env, n, killer, big)
    wait_for(lambda: os.path.exists(half), 180, 0.01, what="a quarter done")
    a.kill9()
    killed = time.time()
    res, err = _result(p)
    return res, err, killed


def test_a_map_survives_its_entrys_kill(members, tmp):
    n = 48
    res, err, killed = _killed_mid_map(members, tmp, "f1", n)
    # every result, once, in input order
    assert [r[0] for r in res] == list(range(n)), res
    assert "entry member a is gone; b is the entry now" in err, err
    after = sorted(t for _, m, t in res if t > killed)
    before = sorted(t for _, m, t in res if t <= killed)
    assert before and after, res
    # those after the kill ran on b, the new entry's own workers
    assert {m for _, m, t in res if t > killed} == {"b"}, res
    recovery = after[0] - killed
    assert recovery < 30, recovery
    rate0 = (len(before) - 1) / max(before[-1] - before[0], 1e-3)
    rate1 = (len(after) - 1) / max(after[-1] - after[0], 1e-3)
    print("\nfailover: first result %.2f s after the kill; %.1f results/s "
          "before, %.1f after (%d, %d)" % (recovery, rate0, rate1,
                                           len(before), len(after)))


def test_big_calls_go_up_again_to_the_new_entry(members, tmp):
    """Calls over a frame wait in the entry's spool (docs/tasks.md, "Big
    values over TCP"): those without a result go up again to the new
    entry, every byte there."""
    n, big = 16, 3 << 19
    res, err, killed = _killed_mid_map(members, tmp, "f3", n, big=big)
    assert [r[0] for r in res] == list(range(n)), res
    assert "entry member a is gone; b is the entry now" in err, err
    assert [r[3] for r in res] == [[big, big]] * n, res
    assert [m for _, m, t, _ in res if t > killed], res


def test_a_call_going_up_when_its_entry_dies_goes_up_to_the_new_one(
        members, tmp):
    """The entry is killed while a call's bytes are on their way to its
    spool (a part of it there, not all): that call goes up whole to the
    new entry, once the stream moved, and comes back as the others do
    (before, it failed "cannot send a call's N bytes")."""
    n, big = 4, 64 << 20
    a, b = _cluster(members, tmp, "f5")
    env, _ = _client(tmp, a)
    p, _ = _caller(tmp, env, n, big=big)
    spool = os.path.join(a.home, "tasks", "spool", "o", b"alice".hex())

    def partial():
        try:
            sizes = [os.stat(os.path.join(spool, f)).st_size
                     for f in os.listdir(spool)]
        except OSError:
            return False
        return any(0 < z < big for z in sizes)
    wait_for(partial, 180, 0.002, what="a call half sent")
    a.kill9()
    res, err = _result(p)
    assert [r[0] for r in res] == list(range(n)), res
    assert "entry member a is gone; b is the entry now" in err, err
    assert [r[3] for r in res] == [[big, big]] * n, res


def test_a_task_that_kills_its_worker_keeps_its_attempts(members, tmp):
    n = 24
    res, err, _ = _killed_mid_map(members, tmp, "f2", n, killer=5)
    assert [r[0] for r in res if r[0] != "error"] == [
        i for i in range(n) if i != 5]
    assert res[5][0] == "error" and "lost 3 times" in res[5][1], res[5]


LONE = textwrap.dedent("""\
    import sys, time
    sys.path.insert(0, %(sdk)r)
    import gmux
    import gmux.mesh
    M = sys.modules["gmux.mesh"]
    M.RECONNECT = 3.0
    f = gmux.mesh(share=0.5, target="a")(lambda x: time.sleep(600))
    fut = f.submit(1)
    print("submitted", flush=True)
    try:
        fut.result(timeout=120)
    except ConnectionError as e:
        print(e)
""")


def test_a_lone_hosts_loss_is_an_error_naming_it(make_daemon, tmp):
    """A host of no cluster: nothing to move to; the call fails after
    the wait, naming the host."""
    a = make_daemon()
    a.serve_tls()
    env = _remotes(tmp, "lone", a.target, a.port)
    script = os.path.join(tmp, "lone.py")
    with open(script, "w") as f:
        f.write(LONE % {"sdk": SDK})
    p = subprocess.Popen([sys.executable, script], env=env, cwd=tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"submitted\n"
    wait_for(lambda: [w for w in a.json("workers", "--json")
                      if w["state"] == "busy"], 120, 0.1, what="its worker")
    a.kill9()
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.decode().strip() == (
        "the gmux host a (127.0.0.1:%d) did not come back within 3 s"
        % a.port), (out, err)


def test_workers_merged_over_the_members(members, tmp):
    """gmux workers on a member lists every member's workers (each with
    its broker's member as host); another owner sees none of them; a
    member that does not answer is listed missing."""
    from test_cluster_mesh import _cert, _peer_worker
    a, b = (members(n, "f4", tls=True) for n in ("a", "b"))
    for d in (a, b):
        joined(d, 2)
    me = pwd.getpwuid(os.getuid()).pw_name
    # alice's workers: one at a's broker, one at b's (each relayed by the
    # other member), and one of bob's at a's
    held = [_peer_worker(a, _cert(b), "alice", "s0-p", job="x.1"),
            _peer_worker(b, _cert(a), "alice", "s0-p", job="x.2"),
            _peer_worker(a, _cert(b), "bob", "s0-p", job="x.3")]
    alice, bob = a.token_for("alice"), a.token_for("bob")

    def listed(token):
        st, o = https_json(a, "GET", "/v1/workers", token)
        assert st == 200, o
        return sorted((w["host"], w["owner"], w["job"]) if w["state"] !=
                      "missing" else (w["host"], "missing") for w in o)
    wait_for(lambda: len(listed(alice)) == 2, 30, 0.1, what="both")
    assert listed(alice) == [("a", "alice", "x.1"), ("b", "alice", "x.2")]
    assert listed(bob) == [("a", "bob", "x.3")]
    # the host's own user sees all, in a table with HOST first
    table = a.gmux("workers", check=0).stdout.decode().splitlines()
    assert table[0].split()[:2] == ["HOST", "ID"], table
    assert sorted(r.split()[0] for r in table[1:]) == ["a", "a", "b"]
    # here=1 (--here): a's broker's alone, without host
    here = a.json("workers", "--here", "--json")
    assert sorted(w["job"] for w in here) == ["x.1", "x.3"], here
    assert all("host" not in w for w in here)
    assert me not in {w["owner"] for w in here}
    # b is killed; its record lives on a while: b did not answer
    b.kill9()
    r = a.gmux("workers", "--json")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    gone = [w for w in o if w["host"] == "b"]
    assert [w["state"] for w in gone] == ["missing"] and gone[0]["error"]
    assert b"gmux workers: member b did not answer" in r.stderr, r.stderr
    assert sorted(w["job"] for w in o if w["host"] == "a") == ["x.1", "x.3"]
    r = a.gmux("workers")
    rows = [x.split() for x in r.stdout.decode().splitlines()[1:]]
    assert [x[0] for x in rows if "missing" in x] == ["b"], rows
    assert listed(bob) == [("a", "bob", "x.3"), ("b", "missing")]
    for s in held:
        s.close()
