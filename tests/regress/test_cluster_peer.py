"""Members calling members (docs/cluster.md, "Members calling members"):
a member's call is taken only from a live member of the same cluster,
shown by its TLS client certificate; the owner it acts for is believed
from no one else; and a job's output is read through any member."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import wait_for
from clusterlib import https_json, joined, jobs
from clusterlib import members, submit, tmp  # noqa
from remotelib import https

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

OWNER = "X-Gmux-Peer-Owner"


@pytest.fixture
def peers(members):
    """Members that serve TLS on loopback, as members reach each other."""
    return lambda name, cid, **kw: members(name, cid, tls=True, **kw)


def _cert(d):
    return (os.path.join(d.home, "tls", "cert.pem"),
            os.path.join(d.home, "tls", "key.pem"))


def _stranger(tmp):
    """A certificate and key of no member's."""
    cert, key = os.path.join(tmp, "x.pem"), os.path.join(tmp, "x.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=x",
                    "-days", "1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True, timeout=30)
    return cert, key


def _as(d, owner, cert=None, token=None, path="/v1/jobs"):
    st, _, body = https(d.port, "GET", path, token=token, cert=cert,
                        headers={OWNER: owner} if owner else None)
    return st, body


def _placed(d, jid):
    """Waits until the job runs (or has ended) on its member."""
    wait_for(lambda: (jobs(d) or {}).get(jid, {}).get("state") in
             ("running", "exited", "failed", "stopped"), 30, 0.1,
             what="%s to run" % jid)


def test_only_a_live_member_may_say_whom_it_acts_for(peers, tmp):
    a, b = peers("a", "p1"), peers("b", "p1")
    other = peers("o", "p2")            # a member, of another cluster
    joined(a, 2)
    joined(other, 1)
    alice = a.token_for("alice")
    st, _, body = https(a.port, "POST", "/v1/jobs", json.dumps(
        {"argv": ["sleep", "60"]}).encode(), token=alice)
    assert st == 201, body
    mine = json.loads(body)["id"]

    # b's certificate: b is a live member of p1, so a takes its word
    st, body = _as(a, "alice", cert=_cert(b))
    assert st == 200, body
    assert [j["id"] for j in json.loads(body)] == [mine]
    st, body = _as(a, "bob", cert=_cert(b))
    assert st == 200 and json.loads(body) == []

    # nobody else's word is taken
    for cert in (_stranger(tmp), _cert(other), None):
        st, body = _as(a, "alice", cert=cert)
        assert st == 403, (cert, st, body)
        assert b"only a member of this cluster" in body
    # a token's holder cannot say it acts for another owner, even with a
    # member's certificate beside its token
    bob = a.token_for("bob")
    for cert in (None, _cert(b)):
        st, body = _as(a, "alice", cert=cert, token=bob)
        assert st == 403 and mine.encode() not in body, body
    st, body = _as(a, None, token=bob)
    assert st == 200 and json.loads(body) == []
    # a member's certificate without the header is no one
    st, body = _as(a, None, cert=_cert(b))
    assert st == 401, body
    # and the host's own routes stay on its socket
    st, body = _as(a, "alice", cert=_cert(b), path="/v1/tokens")
    assert st == 401 and b"alice" not in body, body

    # b goes: its record's delete reaches a, which takes its word no more
    b.stop()
    wait_for(lambda: _as(a, "alice", cert=_cert(b))[0] == 403, 30, 0.1,
             what="a to refuse the member that left")
    https(a.port, "POST", "/v1/jobs/%s/stop" % mine, token=alice)


def test_a_jobs_output_through_any_member(peers, tmp):
    a, b = peers("a", "p3"), peers("b", "p3")
    joined(a, 2)
    joined(b, 2)
    r = submit(a, tmp, "sh", "-c", "echo one; sleep 1; echo two",
               flags=("--share", "0.25", "--server", "b"))
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    _placed(a, jid)
    # followed from a, the member that does not run it: relayed from b
    f = a.gmux("cluster", "logs", "-f", jid, timeout=60)
    assert f.returncode == 0, f.stderr
    assert f.stdout.decode() == "one\ntwo\n"
    rec = wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
                   "exited" and jobs(a)[jid], 30, 0.1, what="its end")
    assert rec["member"] == "b"
    for d in (a, b):
        out = d.gmux("cluster", "logs", jid, check=0).stdout.decode()
        assert out == "one\ntwo\n"
        assert d.gmux("logs", jid, check=0).stdout.decode() == out

    # gmux attach, from a, ends with the job's exit code on b
    r = submit(a, tmp, "sh", "-c", "echo three; sleep 1; exit 3",
               flags=("--share", "0.25", "--server", "b"))
    jid = r.stdout.decode().strip()
    _placed(a, jid)
    r = a.gmux("attach", jid, timeout=60)
    assert r.returncode == 3, r.stderr
    assert r.stdout.decode() == "three\n"

    # a running one, read and stopped through a
    r = submit(a, tmp, "sh", "-c", "echo started; exec sleep 60",
               flags=("--share", "0.25", "--server", "b"))
    jid = r.stdout.decode().strip()
    _placed(a, jid)
    wait_for(lambda: "started" in a.gmux("cluster", "logs", jid)
             .stdout.decode(), 30, 0.2, what="its output through a")
    f = a.popen("logs", "-f", jid, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
    assert a.gmux("stop", jid, check=0).stdout.decode() == jid + "\n"
    out, err = f.communicate(timeout=60)
    assert f.returncode == 0, err
    assert out.decode().startswith("started\n")
    wait_for(lambda: (jobs(b) or {}).get(jid, {}).get("state") ==
             "stopped", 30, 0.1, what="it to stop")

    # queued and unknown jobs say so
    r = a.gmux("cluster", "logs", "nosuch.job")
    assert r.returncode != 0 and b"no cluster job nosuch.job" in r.stderr


def test_a_tenant_submits_over_tcp_and_its_member_jails_it(peers, tmp):
    """A token's holder submits to a; the job runs on b, as its owner, in
    an empty directory there (confined, as a remote job); its output is
    read through a; another owner cannot see it, read it or stop it."""
    a, b = peers("a", "p4"), peers("b", "p4")
    joined(a, 2)
    joined(b, 2)
    alice, bob = a.token_for("alice"), a.token_for("bob")
    req = {"argv": ["sh", "-c", "pwd; ls -A | wc -l; echo hi; "
                    "exec sleep 60"], "share": 0.25, "server": "b"}
    # what does not travel is refused with the field it names
    for extra, field in (({"cwd": "/tmp"}, b"cwd:"),):
        st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                            dict(req, **extra))
        assert st == 400 and o["error"].encode().startswith(field), o
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice, req)
    assert st == 201, o
    jid = o["id"]
    rec = wait_for(lambda: (lambda j: j if j.get("state") == "running"
                            else None)((jobs(a) or {}).get(jid, {})), 30,
                   0.1, what="it to run on b")
    assert rec["member"] == "b" and rec["owner"] == "alice"
    assert rec.get("confined") is True
    # on b: alice's local job, jailed in an empty directory of its own
    local = [j for j in b.json("ps", "-a", "--json")
             if j.get("owner") == "alice"]
    assert len(local) == 1 and local[0]["confined"] is True, local
    work = os.path.join(b.home, "jobs", local[0]["id"], "work")

    def out():
        st, _, data = https(a.port, "GET", "/v1/cluster/jobs/%s/log?"
                            "from=0&raw=1" % jid, token=alice)
        return st == 200 and b"hi\n" in data and data
    data = wait_for(out, 30, 0.2, what="its output through a")
    assert data.startswith(("%s\n0\nhi\n" % work).encode()), data

    # alice sees it in the cluster's listing; bob does not, nor reads or
    # stops it: 404, as for a job that does not exist
    st, ls = https_json(a, "GET", "/v1/cluster/jobs", alice)
    assert st == 200 and [j["id"] for j in ls] == [jid]
    st, ls = https_json(a, "GET", "/v1/cluster/jobs", bob)
    assert st == 200 and ls == []
    for method, path in (("GET", "/v1/cluster/jobs/%s" % jid),
                         ("GET", "/v1/cluster/jobs/%s/log" % jid),
                         ("POST", "/v1/cluster/jobs/%s/stop" % jid)):
        st, o = https_json(a, method, path, bob)
        assert st == 404 and b"hi" not in json.dumps(o).encode(), (path, o)
    assert (jobs(a) or {})[jid]["state"] == "running"
    st, o = https_json(a, "POST", "/v1/cluster/jobs/%s/stop" % jid, alice)
    assert st == 200, o
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
             "stopped", 30, 0.1, what="it to stop")
    # an ended job's whole log, relayed over TLS at once (the relay's end
    # waits for its chunks to go out)
    st, _, data = https(a.port, "GET", "/v1/cluster/jobs/%s/log?from=0&"
                        "raw=1" % jid, token=alice)
    assert st == 200 and data.startswith(("%s\n0\nhi\n" % work).encode())


def test_usage_merges_every_members_books(peers):
    """GET /v1/usage on a member: each live member's rows, marked with
    their member, each member applying the owner filter; a member that
    does not answer is named."""
    a = peers("a", "p5")
    b = peers("b", "p5", extra="CLUSTER_LEASE=60\n")
    _usage_on_two(a, b)


def _usage_on_two(a, b):
    joined(a, 2)
    joined(b, 2)
    alice, bob = a.token_for("alice"), a.token_for("bob")
    # alice: a job on a (local, over TCP) and a cluster job on b
    st, o = https_json(a, "POST", "/v1/jobs", alice,
                        {"argv": ["true"], "share": 0.5})
    assert st == 201, o
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                        {"argv": ["true"], "share": 0.5, "server": "b"})
    assert st == 201, o
    jid = o["id"]
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
             "exited", 30, 0.1, what="alice's job on b")
    # and the host's own user, on b
    assert b.gmux("run", "--share", "0.25", "--", "true").returncode == 0

    def rows(token):
        st, o = https_json(a, "GET", "/v1/usage", token)
        assert st == 200, o
        return o
    o = wait_for(lambda: (lambda o: o if len(o["rows"]) == 2 else None)
                 (rows(alice)), 30, 0.2, what="alice's rows on a and b")
    assert sorted((r["host"], r["owner"]) for r in o["rows"]) == [
        ("a", "alice"), ("b", "alice")]
    assert o["total"]["jobs"] == 2
    assert sorted(o["members"]["answered"]) == ["a", "b"]
    assert o["members"]["missing"] == []
    o = rows(bob)
    assert o["rows"] == [] and o["total"]["jobs"] == 0
    # the admin (a's own socket) sees every owner, on every member
    out = a.json("usage", "--json")
    mine = [r for r in out["rows"] if r["owner"] != "alice"]
    assert len(mine) == 1 and mine[0]["host"] == "b", out
    assert sorted(r["host"] for r in out["rows"] if r["owner"] ==
                  "alice") == ["a", "b"]
    # here=1: a's books alone
    st, o = https_json(a, "GET", "/v1/usage?here=1", alice)
    assert st == 200 and len(o["rows"]) == 1 and "host" not in o["rows"][0]

    # b dies; its record lives on (a 60 s lease): a says b did not answer
    b.kill9()
    r = a.gmux("usage")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines()[1].split()[0] == "HOST"
    assert b"gmux usage: member b did not answer" in r.stderr, r.stderr
    st, o = https_json(a, "GET", "/v1/usage", alice)
    assert [m["name"] for m in o["members"]["missing"]] == ["b"]
    assert [r["host"] for r in o["rows"]] == ["a"]


@pytest.mark.skipif(os.geteuid() != 0, reason="accounts need root")
def test_a_tenants_cluster_job_runs_as_its_account(peers, tmp):
    """With TENANT_ACCOUNTS=1, a token's cluster job runs on its member as
    the owner's account there, the UID the cluster allocated."""
    import pwd
    import random
    prefix = "gp%04x-" % random.randrange(0x10000)
    conf = ("TENANT_ACCOUNTS=1\nTENANT_ACCOUNT_PREFIX=%s\n"
            "TENANT_UID_RANGE=230000-230999\n" % prefix)
    os.chmod(tmp, 0o711)    # the accounts pass through to their homes
    try:
        a = peers("a", "p6", extra=conf + "TENANT_HOME_ROOT=%s/ha\n" % tmp)
        b = peers("b", "p6", extra=conf + "TENANT_HOME_ROOT=%s/hb\n" % tmp)
        joined(a, 2)
        joined(b, 2)
        alice = a.token_for("alice")
        st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                            {"argv": ["sh", "-c", "id -u; pwd"],
                             "share": 0.25, "server": "b"})
        assert st == 201, o
        jid = o["id"]
        rec = wait_for(lambda: (lambda j: j if j.get("state") in
                                ("exited", "failed") else None)
                       ((jobs(a) or {}).get(jid, {})), 60, 0.2,
                       what="its end")
        st, _, out = https(a.port, "GET", "/v1/cluster/jobs/%s/log?from=0"
                           "&raw=1" % jid, token=alice)
        assert rec["state"] == "exited" and st == 200, (rec, st, out)
        uid = pwd.getpwnam(prefix + "alice").pw_uid
        assert 230000 <= uid <= 230999
        assert out.decode().splitlines()[0] == str(uid)
        assert os.path.isdir(os.path.join(tmp, "hb", prefix + "alice"))
        assert not os.path.exists(os.path.join(tmp, "ha", prefix + "alice"))
    finally:
        for p in pwd.getpwall():
            if p.pw_name.startswith(prefix):
                subprocess.run(["userdel", "-r", "-f", p.pw_name],
                               capture_output=True)
                subprocess.run(["groupdel", p.pw_name], capture_output=True)


def test_a_members_new_key_is_taken_and_its_old_one_refused(peers, tmp):
    """Pins rotate: b's key made again; its new record's pin is what a
    checks b by and takes b's calls by; the old key is no one's."""
    a, b = peers("a", "p7"), peers("b", "p7")
    joined(a, 2)
    old = [open(f, "rb").read() for f in _cert(b)]
    b.stop()
    for f in _cert(b):
        os.unlink(f)
    b.start(fake=b.fake, addr="127.0.0.1:%d" % b.port)
    assert open(_cert(b)[1], "rb").read() != old[1]     # a new key
    alice = a.token_for("alice")

    def answered():
        st, o = https_json(a, "GET", "/v1/usage", alice)
        return st == 200 and sorted(o["members"]["answered"]) == ["a", "b"]
    wait_for(answered, 30, 0.2, what="a to call b by its new pin")
    st, body = _as(a, "alice", cert=_cert(b))
    assert st == 200, body
    for f, data in zip((os.path.join(tmp, "old.pem"),
                        os.path.join(tmp, "old.key")), old):
        with open(f, "wb") as fh:
            fh.write(data)
    st, body = _as(a, "alice", cert=(os.path.join(tmp, "old.pem"),
                                      os.path.join(tmp, "old.key")))
    assert st == 403, body


def test_a_slow_reader_of_a_relayed_log_holds_back_its_member(peers, tmp):
    """A log relayed from b through a to a client that stops reading: a
    stops reading b (a took all of b's 64 MiB into its memory before)."""
    import socket
    from test_cluster_shell import read_held_back
    a, b = peers("a", "p6"), peers("b", "p6")
    joined(a, 2)
    joined(b, 2)
    r = submit(a, tmp, "sh", "-c", "head -c 67108864 /dev/urandom",
               flags=("--share", "0.25", "--server", "b"))
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
             "exited", 60, 0.1, what="%s to end" % jid)
    c = socket.socket(socket.AF_UNIX)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    c.settimeout(60)
    c.connect(a.socket)
    c.sendall(("GET /v1/cluster/jobs/%s/log?from=0 HTTP/1.1\r\nHost: "
               "gmux\r\nConnection: close\r\n\r\n" % jid).encode())
    got = b""
    while len(got) < 1 << 20:
        got += c.recv(65536)
    assert got.startswith(b"HTTP/1.1 200 "), got[:200]
    got = read_held_back(a, c, len(got))    # a must not take it all
    assert got > 64 << 20, got              # all of it, once read
