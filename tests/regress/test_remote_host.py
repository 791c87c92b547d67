"""A remote host under load: it copies a job's tree off its loop (the job
waits, "preparing its files", and everything else is served meanwhile)."""

import fcntl
import hashlib
import os
import statistics
import time

from conftest import wait_for


def big_tree(root, dirs, files=100):
    """dirs x files small files."""
    for i in range(dirs):
        sub = os.path.join(root, "d%03d" % i)
        os.makedirs(sub)
        for k in range(files):
            with open(os.path.join(sub, "f%05d" % k), "wb") as f:
                f.write(b"%d %d\n" % (i, k) * 64)


def host_and_client(make_daemon, make_client, *args):
    d = make_daemon()
    target = d.serve_tls(*args)
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    return d, c


def lock_free(home):
    with open(os.path.join(home, "gmux.pid")) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def host_job(d, jid):
    return next(j for j in d.json("ps", "-a", "--json") if j["id"] == jid)


def test_the_tree_is_copied_off_the_loop(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    big_tree(c.work, 40)
    r = c.gmux("run", "-d", "--", "sh", "-c", "find . -type f | wc -l",
               check=0)
    assert r.stdout.strip() == b"gpu1:j1"
    # The job exists at once and waits for its files; the host answers.
    took, preparing = [], 0
    while True:
        t = time.monotonic()
        job = host_job(d, "j1")
        took.append(time.monotonic() - t)
        if job["state"] != "queued":
            break
        assert job["reason"] == "preparing its files", job
        preparing += 1
    print("gmux ps while 4,000 files are copied: %d calls, median %.1f ms, "
          "max %.1f ms" % (len(took), statistics.median(took) * 1000,
                           max(took) * 1000))
    assert preparing >= 3, took
    assert statistics.median(took) < 0.1, took
    assert max(took) < 0.5, took
    d.wait_state("j1", "exited")
    assert c.gmux("logs", "gpu1:j1", check=0).stdout.strip() == b"4000"
    # Stopped while its files are copied: it never runs, its copy goes.
    r = c.gmux("run", "-d", "--", "touch", "/tmp/never", check=0)
    assert r.stdout.strip() == b"gpu1:j2"
    c.gmux("stop", "gpu1:j2", check=0)
    job = host_job(d, "j2")
    assert job["state"] == "stopped" and job["exit_code"] is None, job
    work = os.path.join(d.home, "jobs", "j2", "work")
    wait_for(lambda: not os.path.exists(work), 20, what="j2's copy to go")
    assert host_job(d, "j2")["started"] is None


def test_a_tree_that_cannot_be_made_fails_its_job(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    with open(os.path.join(c.work, "a.txt"), "w") as f:
        f.write("a\n")
    c.gmux("run", "--", "true", check=0)
    # The store's file of a.txt goes behind the daemon's back: the tree is
    # found complete (nothing is sent) but cannot be made.
    blobs = os.path.join(d.home, "blobs")
    digest = hashlib.sha256(b"a\n").hexdigest()
    os.unlink(os.path.join(blobs, digest[:2], digest))
    r = c.gmux("run", "--", "true")
    assert r.returncode == 125
    assert r.stderr.startswith(b"gmux run: gpu1:j2 failed: its files "
                               b"could not be prepared: a.txt"), r.stderr
    job = host_job(d, "j2")
    assert job["state"] == "failed", job
    assert job["reason"].startswith("its files could not be prepared: "
                                    "a.txt"), job
    assert not os.path.exists(os.path.join(d.home, "jobs", "j2", "work"))
    assert d.gmux("ps").returncode == 0


def test_a_restart_while_preparing_fails_the_job(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    big_tree(c.work, 60)
    c.gmux("run", "--", "true", check=0)            # the blobs are there
    r = c.gmux("run", "-d", "--", "true", check=0)
    assert r.stdout.strip() == b"gpu1:j2"
    assert host_job(d, "j2")["reason"] == "preparing its files"
    d.kill9()
    # Its copying thread may outlive the killed main thread for a moment,
    # holding the daemon's lock: the next daemon starts once it is gone.
    wait_for(lambda: lock_free(d.home), 10, what="the old daemon's lock")
    d.start(addr="127.0.0.1:%d" % d.port)
    job = host_job(d, "j2")
    assert job["state"] == "failed" and "preparing" in job["reason"], job
    work = os.path.join(d.home, "jobs", "j2", "work")
    wait_for(lambda: not os.path.exists(work), 20, what="j2's copy to go")
    assert c.gmux("run", "--", "true").returncode == 0
