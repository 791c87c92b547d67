"""A remote job's tree without a copy per run (docs/remote.md, "The job's
tree"): where the kernel allows it, a job runs over an overlay of the
stored tree of its manifest, made once, so a re-run grows the host's disk
by what the job writes; where it does not (or REMOTE_OVERLAY=0), in a copy
of its own.  --pull reads what the job left, as the job saw it.  An ended
job's work tree goes after REMOTE_WORK_RETENTION unless a pull is
pending, and a stored tree when no work tree needs it."""

import hashlib
import json
import os
import time

import pytest

from conftest import wait_for
from remotelib import https_json, job_tree, stored_tree


def host_and_client(make_daemon, make_client, **env):
    d = make_daemon()
    for k, v in env.items():
        d.env["GMUX_" + k] = v
    target = d.serve_tls()
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    return d, c, target.split("@")[0]


def disk(*paths):
    """Bytes of disk under the paths (blocks, not sizes; an inode with
    several links counts once), links not followed."""
    seen = {}
    for path in paths:
        for top, dirs, files in os.walk(path):
            for n in dirs + files:
                try:
                    st = os.lstat(os.path.join(top, n))
                except FileNotFoundError:
                    continue
                seen[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return sum(seen.values())


def tree(root, n=200, size=10000):
    for i in range(n):
        sub = os.path.join(root, "d%02d" % (i % 10))
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "f%03d" % i), "wb") as f:
            f.write(os.urandom(size))


def need_overlay(d, jid):
    if stored_tree(d.home, jid) is None:
        log = open(os.path.join(d.home, "gmux.log")).read()
        pytest.skip("no overlay here: %s" % [
            ln for ln in log.splitlines() if "overlay_ready" in ln])


def test_a_rerun_grows_the_disk_by_what_it_writes(make_daemon, make_client):
    d, c, _ = host_and_client(make_daemon, make_client)
    tree(c.work)                                    # 200 files, 2 MB
    assert c.gmux("run", "--", "true").returncode == 0
    need_overlay(d, "j1")
    jobs = os.path.join(d.home, "jobs")
    trees = os.path.join(d.home, "trees")
    blobs = os.path.join(d.home, "blobs")
    # The first run: the stored tree's files are the store's own.
    print("stored tree beyond the blobs: %d bytes" % (
        disk(blobs, trees) - disk(blobs)))
    assert disk(blobs, trees) - disk(blobs) < 200000
    before = disk(jobs) + disk(trees)
    for i in range(3):
        r = c.gmux("run", "--", "sh", "-c", "cat d0*/f* | wc -c; "
                   "head -c 1000 /dev/zero > out.bin")
        assert r.returncode == 0 and r.stdout == b"2000000\n", r
    grown = disk(jobs) + disk(trees) - before
    # Three runs: each its small files and one 1000-byte write, no tree.
    print("host disk growth per unchanged re-run: %d bytes" % (grown // 3))
    assert grown < 3 * 100000, grown
    assert [n for n in os.listdir(trees) if n not in ("tmp", "objects")] \
        == [os.path.basename(stored_tree(d.home, "j1"))]
    for j in ("j2", "j3", "j4"):
        assert stored_tree(d.home, j) == stored_tree(d.home, "j1")
        assert os.listdir(job_tree(d.home, j)) == ["out.bin"]
        # The mount point is empty: the tree was never copied there.
        assert os.listdir(os.path.join(jobs, j, "work")) == []


def test_an_unchanged_rerun_reads_no_blob(make_daemon, make_client):
    """The stored tree is the tree: a re-run neither reads the manifest
    nor the blobs again (the store may have evicted them)."""
    d, c, _ = host_and_client(make_daemon, make_client)
    with open(os.path.join(c.work, "a.txt"), "w") as f:
        f.write("a\n")
    assert c.gmux("run", "--", "cat", "a.txt").stdout == b"a\n"
    need_overlay(d, "j1")
    blobs = os.path.join(d.home, "blobs")
    digest = hashlib.sha256(b"a\n").hexdigest()
    os.unlink(os.path.join(blobs, digest[:2], digest))
    r = c.gmux("run", "--", "cat", "a.txt")
    assert (r.returncode, r.stdout) == (0, b"a\n"), r
    assert stored_tree(d.home, "j2") == stored_tree(d.home, "j1")


def test_a_changed_tree_shares_what_did_not_change(make_daemon,
                                                   make_client):
    d, c, _ = host_and_client(make_daemon, make_client)
    tree(c.work)                                    # 200 files, 2 MB
    with open(os.path.join(c.work, "run.sh"), "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(os.path.join(c.work, "run.sh"), 0o755)
    assert c.gmux("run", "--", "./run.sh").stdout == b"ran\n"
    need_overlay(d, "j1")
    trees = os.path.join(d.home, "trees")
    before = disk(trees)
    with open(os.path.join(c.work, "d03", "f003"), "wb") as f:
        f.write(b"changed\n")
    time.sleep(0.05)
    r = c.gmux("run", "--", "sh", "-c", "cat d03/f003; ./run.sh")
    assert r.stdout == b"changed\nran\n", r
    one, two = stored_tree(d.home, "j1"), stored_tree(d.home, "j2")
    assert one != two
    # One file's content and the directories: not a second tree.
    grown = disk(trees) - before
    print("stored trees' growth for one changed file: %d bytes" % grown)
    assert grown < 200000, grown
    a = os.stat(os.path.join(one, "d05", "f005"))
    b = os.stat(os.path.join(two, "d05", "f005"))
    # Two trees, objects/ and the store's own blob: one inode.
    assert (a.st_ino, a.st_nlink) == (b.st_ino, 4)
    assert os.stat(os.path.join(two, "run.sh")).st_mode & 0o777 == 0o755
    assert os.stat(os.path.join(two, "d05", "f005")).st_mode & 0o777 == \
        os.stat(os.path.join(c.work, "d05", "f005")).st_mode & 0o777 | 0o600


def test_pull_reads_the_tree_as_the_job_left_it(make_daemon, make_client):
    d, c, _ = host_and_client(make_daemon, make_client)
    os.makedirs(os.path.join(c.work, "out", "old"))
    for name in ("keep.txt", "change.txt", "gone.txt", "old/x.txt"):
        with open(os.path.join(c.work, "out", name), "w") as f:
            f.write("before %s\n" % name)
    # Changed, removed, a directory made again, a new file.
    script = ("echo after > out/change.txt; rm out/gone.txt; "
              "rm -r out/old; mkdir out/old; echo y > out/old/y.txt; "
              "echo new > out/new.txt")
    r = c.gmux("run", "--pull", "out/", "--", "sh", "-c", script)
    assert r.returncode == 0, r
    need_overlay(d, "j1")
    assert open(os.path.join(c.work, "out", "change.txt")).read() == \
        "after\n"
    assert open(os.path.join(c.work, "out", "new.txt")).read() == "new\n"
    assert open(os.path.join(c.work, "out", "old", "y.txt")).read() == "y\n"
    # What the host lists: the job's view, not the stored tree's.
    code, reply = https_json(d.port, "POST", "/v1/jobs/j1/pull",
                             json.dumps({"globs": ["out/"]}).encode(),
                             token=token_of(c), ctype="application/json")
    assert code == 200, reply
    names = sorted(ln.split()[-1] for ln in
                   reply["manifest"].splitlines()[1:])
    assert names == ["out/change.txt", "out/keep.txt", "out/new.txt",
                     "out/old/y.txt"], names
    # The stored tree is as it came.
    stored = stored_tree(d.home, "j1")
    assert open(os.path.join(stored, "out", "gone.txt")).read() == \
        "before gone.txt\n"
    assert os.path.exists(os.path.join(stored, "out", "old", "x.txt"))


def token_of(c):
    remotes = json.load(open(os.path.join(c.home, "remotes.json")))
    return remotes["remotes"][0]["target"].split("@")[0]


def test_without_an_overlay_a_job_gets_a_copy(make_daemon, make_client):
    d, c, _ = host_and_client(make_daemon, make_client, REMOTE_OVERLAY="0")
    with open(os.path.join(c.work, "a.txt"), "w") as f:
        f.write("a\n")
    r = c.gmux("run", "--pull", "b.txt", "--", "sh", "-c",
               "cat a.txt; echo b > b.txt")
    assert (r.returncode, r.stdout) == (0, b"a\n"), r
    assert open(os.path.join(c.work, "b.txt")).read() == "b\n"
    work = os.path.join(d.home, "jobs", "j1", "work")
    assert sorted(os.listdir(work)) == ["a.txt", "b.txt"]
    assert stored_tree(d.home, "j1") is None
    assert not os.path.exists(os.path.join(d.home, "trees"))
    log = open(os.path.join(d.home, "gmux.log")).read()
    assert "jobs' trees: copies: no overlay: REMOTE_OVERLAY=0" in log or \
        "jobs' trees: copies: REMOTE_OVERLAY=0" in log, log


def test_an_ended_jobs_tree_goes_unless_a_pull_is_pending(make_daemon,
                                                          make_client):
    d, c, _ = host_and_client(make_daemon, make_client,
                              REMOTE_WORK_RETENTION="2s")
    with open(os.path.join(c.work, "a.txt"), "w") as f:
        f.write("a\n")
    assert c.gmux("run", "--", "sh", "-c", "echo x > x.txt").returncode == 0
    token = token_of(c)
    # A job whose client will pull (as `gmux run --pull` says), not yet.
    body = json.dumps({"argv": ["sh", "-c", "echo r > r.txt"],
                       "pull": True}).encode()
    code, j = https_json(d.port, "POST", "/v1/jobs", body, token=token,
                         ctype="application/json")
    assert code == 201, j
    pending = j["id"]
    d.wait_state(pending, "exited")
    j1 = os.path.join(d.home, "jobs", "j1")
    stored = stored_tree(d.home, "j1")
    wait_for(lambda: not os.path.exists(os.path.join(j1, "work")), 20,
             what="j1's work tree to go")
    for part in ("upper", "ovl", "tree"):
        assert not os.path.exists(os.path.join(j1, part))
    # The job is still listed; its log is kept; only its tree went.
    assert d.job("j1")["state"] == "exited"
    assert os.path.exists(os.path.join(j1, "log"))
    if stored is not None:
        wait_for(lambda: not os.path.exists(stored), 20,
                 what="the stored tree no job needs to go")
        objects = os.path.join(d.home, "trees", "objects")
        wait_for(lambda: os.listdir(objects) == [], 20,
                 what="its files to go")
    code, err = https_json(d.port, "POST", "/v1/jobs/j1/pull",
                           json.dumps({"globs": ["x.txt"]}).encode(),
                           token=token, ctype="application/json")
    assert code == 404 and "REMOTE_WORK_RETENTION" in err["error"], err
    # The pending pull kept its tree; once pulled, it goes too.
    work = os.path.join(d.home, "jobs", pending, "work")
    time.sleep(3)
    assert os.path.exists(os.path.join(work, "r.txt"))
    code, reply = https_json(d.port, "POST", "/v1/jobs/%s/pull" % pending,
                             json.dumps({"globs": ["r.txt"]}).encode(),
                             token=token, ctype="application/json")
    assert code == 200 and reply["files"] == 1, reply
    wait_for(lambda: not os.path.exists(work), 20,
             what="the pulled job's tree to go")


def test_a_job_over_its_tree_outlives_the_daemon(make_daemon, make_client):
    """The overlay lives in the keeper's namespaces, not the daemon's: a
    kill -9 of the daemon loses neither the job nor its tree."""
    d, c, _ = host_and_client(make_daemon, make_client)
    with open(os.path.join(c.work, "in.txt"), "w") as f:
        f.write("in\n")
    r = c.gmux("run", "-d", "--", "sh", "-c",
               "while [ ! -e go ]; do sleep 0.05; done 2>/dev/null; "
               "cat in.txt > out.txt; echo done")
    jid = r.stdout.decode().strip().split(":")[-1]
    d.wait_state(jid, "running")
    wait_for(lambda: d.job(jid).get("pid"), what="its pid")
    need_overlay(d, jid)
    d.kill9()
    d.start(addr="127.0.0.1:%d" % d.port)
    assert d.job(jid)["state"] == "running"
    # It goes on in its tree once it sees "go" there: only its own mount
    # namespace has that tree, so the test reaches it through /proc.
    pid = wait_for(lambda: d.job(jid).get("pid"), what="its pid")
    with open("/proc/%d/root%s/go" % (pid, os.path.join(
            d.home, "jobs", jid, "work")), "w") as f:
        f.write("")
    d.wait_state(jid, "exited")
    assert c.gmux("logs", "gpu1:" + jid).stdout == b"done\n"
    code, reply = https_json(d.port, "POST", "/v1/jobs/%s/pull" % jid,
                             json.dumps({"globs": ["out.txt"]}).encode(),
                             token=token_of(c), ctype="application/json")
    assert code == 200 and reply["files"] == 1, reply
    assert open(os.path.join(job_tree(d.home, jid), "out.txt")).read() == \
        "in\n"


def test_what_a_stopped_daemon_left_half_made_goes(make_daemon, make_client):
    """A stored tree is flushed before it is put in place; what a daemon
    left in trees/tmp (a tree being made or removed) may not have reached
    the disk: it goes at the next start, with the files only it used."""
    d, c, _ = host_and_client(make_daemon, make_client)
    with open(os.path.join(c.work, "a.txt"), "w") as f:
        f.write("a\n")
    assert c.gmux("run", "--", "true").returncode == 0
    need_overlay(d, "j1")
    d.kill9()
    trees = os.path.join(d.home, "trees")
    half = os.path.join(trees, "tmp", "%s.9" % ("0" * 64))
    os.makedirs(half)
    orphan = os.path.join(trees, "objects", "%s.644" % ("1" * 64))
    with open(orphan, "w") as f:
        f.write("torn")
    os.link(orphan, os.path.join(half, "f"))
    kept = os.listdir(os.path.join(trees, "objects"))
    d.start(addr="127.0.0.1:%d" % d.port)
    assert c.gmux("run", "--", "cat", "a.txt").stdout == b"a\n"
    wait_for(lambda: not os.path.exists(orphan), 20, what="the orphan")
    assert not os.path.exists(half)
    assert set(kept) - {os.path.basename(orphan)} <= \
        set(os.listdir(os.path.join(trees, "objects")))
