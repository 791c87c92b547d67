"""Synced trees for cluster jobs from other machines (docs/cluster.md,
"Trees"): a client's gmux cluster submit syncs its directory to the member
it talks to; a job placed on another member runs in that tree there,
fetched from the first over a member's call, jailed; a tree that escapes
its directory is refused."""

import os
import shutil

import pytest

from conftest import wait_for
from clusterlib import VERBOSE, client_of, https_json, joined, jobs
from clusterlib import members, tmp  # noqa
from remotelib import https, manifest, sha

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")


def _ended(a, jid):
    return wait_for(lambda: (lambda j: j if j.get("state") in
                             ("exited", "failed", "stopped") else None)
                    ((jobs(a) or {}).get(jid, {})), 60, 0.1,
                    what="%s to end" % jid)


def test_a_clients_tree_runs_on_another_member(members, make_client):
    a, b = members("a", "tr1", tls=True), members("b", "tr1", tls=True)
    joined(a, 2)
    joined(b, 2)
    c, alice = client_of(a, make_client)
    os.makedirs(os.path.join(c.work, "sub"))
    with open(os.path.join(c.work, "data.txt"), "w") as f:
        f.write("hello\n")
    with open(os.path.join(c.work, "sub", "x.txt"), "w") as f:
        f.write("x" * 100000 + "\n")
    cmd = ("cat data.txt; wc -c < sub/x.txt; ls -A | sort | tr '\\n' ' '; "
           "echo; echo out > made.txt; cat made.txt")
    for member in ("b", "a"):   # fetched from a; then a's own
        r = c.gmux("cluster", "submit", "--share", "0.25", "--server",
                   member, "--", "sh", "-c", cmd)
        assert r.returncode == 0, r.stderr
        jid = r.stdout.decode().strip()
        rec = _ended(a, jid)
        assert rec["state"] == "exited" and rec["member"] == member, rec
        assert rec["tree"] == {"from": "a"} and rec["owner"] == "alice"
        r = c.gmux("cluster", "logs", jid)
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode() == ("hello\n100001\ndata.txt sub \nout\n"), \
            r.stdout
    # the client's directory is its own: nothing came back into it
    assert sorted(os.listdir(c.work)) == ["data.txt", "sub"]
    # b keeps the tree as alice's, in its own store
    blobs = os.path.join(b.home, "blobs")
    assert os.path.isdir(blobs)


def test_a_tree_that_escapes_is_refused(members, tmp):
    a = members("a", "tr2", tls=True)
    joined(a, 1)
    alice = a.token_for("alice")
    good = sha(b"abc")
    bad = manifest([("f", 644, 3, good, "../escaped")])
    # stored as a plain blob, wanted by a manifest of alice's first
    st, _, data = https(a.port, "POST", "/v1/sync/manifest", manifest(
        [("f", 644, len(bad), sha(bad), "m")]), token=alice,
        ctype="text/x-gmux-manifest")
    assert st == 200, data
    st, _, data = https(a.port, "PUT", "/v1/blobs/" + sha(bad), bad,
                        token=alice)
    assert st == 201, data
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["true"], "share": 0.25,
                        "manifest": sha(bad)})
    assert st == 400 and o["error"], o
    assert not os.path.exists(os.path.join(a.home, "escaped"))
    assert not os.path.exists(os.path.join(a.home, "jobs", "escaped"))
    # a tree never synced: 412, naming what is missing
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["true"], "share": 0.25,
                        "manifest": sha(b"nothing")})
    assert st == 412 and o["missing"] == [sha(b"nothing")], o
    assert (jobs(a) or {}) == {}


def _hwm(d):
    with open("/proc/%d/status" % d.pid()) as f:
        return [int(x.split()[1]) << 10 for x in f
                if x.startswith("VmHWM:")][0]


def test_a_large_file_of_a_tree_is_never_whole_in_a_members_memory(
        members, make_client):
    """The member that runs the job fetches a 64 MiB file of its tree from
    the entry in parts, stored as they come: it held each blob whole in
    memory (its peak grew by twice the file).  Under ASan, b's freed
    memory is reused at once (its quarantine would hold 256 MiB of it)."""
    a, b = members("a", "tr5", tls=True), members("b", "tr5", start=False)
    b.env["ASAN_OPTIONS"] += ":quarantine_size_mb=0"
    b.serve_tls(*VERBOSE)
    joined(a, 2)
    joined(b, 2)
    c, alice = client_of(a, make_client)
    data = os.urandom(1 << 20) * 64
    with open(os.path.join(c.work, "big.bin"), "wb") as f:
        f.write(data)
    import hashlib
    want = hashlib.sha256(data).hexdigest()
    before = _hwm(b)
    r = c.gmux("cluster", "submit", "--share", "0.25", "--server", "b",
               "--", "sh", "-c", "sha256sum big.bin", timeout=120)
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    rec = _ended(a, jid)
    assert rec["state"] == "exited" and rec["member"] == "b", rec
    out = c.gmux("cluster", "logs", jid).stdout.decode()
    assert out.split()[0] == want, out
    grew = _hwm(b) - before
    print("b's peak RSS grew by %.1f MiB" % (grew / 1048576))
    assert grew < 16 << 20, grew


def test_a_tree_its_member_cannot_keep_fails_the_job_saying_why(
        members, make_client):
    """A tree larger than b's store is refused by b's own checks (those of
    a client's upload), the job failed saying why; b goes on serving."""
    a = members("a", "tr6", tls=True)
    b = members("b", "tr6", tls=True, extra="BLOB_STORE_SIZE=32M\n")
    joined(a, 2)
    joined(b, 2)
    c, alice = client_of(a, make_client)
    with open(os.path.join(c.work, "big.bin"), "wb") as f:
        f.write(os.urandom(1 << 20) * 48)
    r = c.gmux("cluster", "submit", "--share", "0.25", "--server", "b",
               "--", "true", timeout=120)
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    rec = _ended(a, jid)
    assert rec["state"] == "failed" and rec["member"] == "b", rec
    assert rec["reason"] == (
        "its tree: the directory holds 48M in 1 entries; this host keeps "
        "at most 32M: add large paths to .gmuxignore"), rec
    assert os.listdir(os.path.join(b.home, "blobs", "tmp")) == []
    assert b.gmux("ps").returncode == 0
