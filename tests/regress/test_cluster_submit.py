"""Cluster jobs from gmux submit and gmux run on a client whose remote is a
cluster member (docs/cluster.md, "Jobs from other machines"): a job file
is the cluster's, run in the client's tree; gmux run with a placement
directive is a cluster job followed to its end through the member asked,
Ctrl-C stopping it wherever it is; without one it stays the host's."""

import json
import os
import shutil
import signal
import threading
import time

import pytest

from conftest import wait_for
from clusterlib import client_of, joined
from clusterlib import members, tmp  # noqa

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

B_FAKE = "1xRTX4090:24G"


def _cluster(members, make_client, cid):
    """Members a (an H100) and b (an RTX 4090), and a client of a's with
    alice's token, its remote named lab."""
    a = members("a", cid, tls=True)
    b = members("b", cid, B_FAKE, tls=True)
    joined(a, 2)
    joined(b, 2)
    return a, b, client_of(a, make_client)[0]


def _end(etcd, cid, jid, timeout=60):
    """The job's end record, /gmux/CID/e/ID, once it is there."""
    key = "/gmux/%s/e/%s" % (cid, jid)
    return json.loads(wait_for(lambda: etcd.get_prefix(key).get(key),
                               timeout, 0.1, what="%s to end" % jid))


def _cluster_id(r):
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    assert jid.startswith("a.") and ":" not in jid, jid
    return jid


class _Run:
    """gmux run in the background, its stderr read as it comes."""

    def __init__(self, c, *args):
        self.p = c.popen("run", *args, stdout=-1, stderr=-1)
        self.err = b""
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in iter(self.p.stderr.readline, b""):
            self.err += line

    def said(self, what, timeout=60):
        wait_for(lambda: what.encode() in self.err, timeout, 0.05,
                 what="gmux run to say %r (said %r)" % (what, self.err))

    def id(self):
        self.said("queued in the cluster")
        return self.err.split(b"gmux: ", 1)[1].split()[0].decode()

    def wait(self, timeout=60):
        out = self.p.stdout.read()
        rc = self.p.wait(timeout)
        self.t.join(10)
        return rc, out


def test_a_job_file_from_a_client_is_the_clusters(members, make_client,
                                                   etcd):
    """gmux submit FILE (no --array) to a member: the cluster's job, run
    in the client's tree as its #! line says with its ARGS, placed by its
    directives (it was the host's: lab:jN, on a, which has no RTX 4090)."""
    cid = "cs1"
    a, b, c = _cluster(members, make_client, cid)
    with open(os.path.join(c.work, "job.sh"), "w") as f:
        f.write("#!/bin/sh\n#SBATCH --job-name=train\n"
                "#SBATCH --gres=gpu:rtx4090:1\n"
                'echo "$1 $(cat seed.txt)"\nexit 3\n')
    with open(os.path.join(c.work, "seed.txt"), "w") as f:
        f.write("s7\n")
    jid = _cluster_id(c.gmux("submit", "job.sh", "arg1"))
    rec = _end(etcd, cid, jid)
    assert rec["state"] == "exited" and rec["exit_code"] == 3, rec
    assert rec["member"] == "b" and rec["owner"] == "alice", rec
    assert rec["req"]["name"] == "train", rec
    r = c.gmux("logs", jid)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"arg1 s7\n", r.stdout
    # --server pins a member
    with open(os.path.join(c.work, "any.sh"), "w") as f:
        f.write("#!/bin/sh\necho here\n")
    jid = _cluster_id(c.gmux("submit", "--server", "a", "any.sh"))
    rec = _end(etcd, cid, jid)
    assert rec["member"] == "a" and rec["exit_code"] == 0, rec
    # --wait waits for its end: 1 if it failed (it was refused)
    with open(os.path.join(c.work, "bad.sh"), "w") as f:
        f.write("#!/bin/sh\nexit 5\n")
    r = c.gmux("submit", "--wait", "bad.sh")
    out = r.stdout.decode()
    assert r.returncode == 1 and ": exited, 1 element" in out, (r, out)
    assert [x.split()[1:3] for x in out.splitlines()
            if x.startswith(out.split()[0] + " ")] == [["exited", "5"]], out


def test_run_with_a_placement_directive_is_a_cluster_job(members,
                                                          make_client, etcd):
    """gmux run --gpus rtx4090:1 from the client: placed on b, its stdout,
    stderr and exit code back through a; -d prints the cluster's id; a
    plain gmux run stays the host's (lab:jN)."""
    cid = "cs2"
    a, b, c = _cluster(members, make_client, cid)
    r = c.gmux("run", "--gpus", "rtx4090:1", "--", "sh", "-c",
               "echo out; echo err >&2; exit 7")
    assert r.returncode == 7, r.stderr
    assert r.stdout == b"out\n", r.stdout
    err = r.stderr.decode()
    assert "err\n" in err and " queued in the cluster" in err, err
    jid = err.split("gmux: ", 1)[1].split()[0]
    assert "gmux: %s on b\n" % jid in err, err
    rec = _end(etcd, cid, jid)
    assert (rec["member"], rec["exit_code"], rec["owner"]) == \
        ("b", 7, "alice"), rec
    jid = _cluster_id(c.gmux("run", "-d", "--server", "b", "--", "true"))
    assert _end(etcd, cid, jid)["member"] == "b"
    r = c.gmux("run", "-d", "--", "true")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().startswith("lab:j"), r.stdout
    r = c.gmux("run", "--", "echo", "host")
    assert (r.returncode, r.stdout) == (0, b"host\n"), r.stderr
    assert b"cluster" not in r.stderr, r.stderr


def test_what_a_cluster_run_cannot_do_is_refused(members, make_client,
                                                 etcd):
    """--pull: exit 2, one line saying why; what no member could hold:
    exit 125 with the reason; nothing is queued."""
    cid = "cs3"
    a, b, c = _cluster(members, make_client, cid)
    r = c.gmux("run", "--nodes", "3", "--", "true")
    assert r.returncode == 125, r.stderr
    assert b"a gang of 3 needs 3 members" in r.stderr, r.stderr
    # a file the job would write on its member: refused at once (400),
    # not failed once placed
    r = c.gmux("cluster", "submit", "--output", "o.txt", "--", "true")
    assert r.returncode != 0 and b"output: a remote job's output streams " \
        b"back" in r.stderr, r
    with open(os.path.join(c.work, "out.sh"), "w") as f:
        f.write("#!/bin/sh\n#SBATCH --output=slurm-%j.out\ntrue\n")
    r = c.gmux("submit", "out.sh")
    assert r.returncode != 0 and b"output: a remote job's output" in \
        r.stderr, r
    r = c.gmux("run", "--server", "b", "--pull", "*.txt", "--", "true")
    assert r.returncode == 2, r.stderr
    assert b"--pull is not for cluster jobs" in r.stderr, r.stderr
    assert r.stderr.count(b"\n") == 1, r.stderr
    r = c.gmux("run", "--gpus", "h100:2", "--", "true")
    assert r.returncode == 125, r.stderr
    assert b"no member has 2 GPUs" in r.stderr, r.stderr
    assert etcd.get_prefix("/gmux/%s/q/" % cid) == {}
    assert etcd.get_prefix("/gmux/%s/e/" % cid) == {}


def test_ctrl_c_stops_a_running_cluster_job(members, make_client, etcd):
    """One Ctrl-C while it runs on b: b stops it, gmux run exits 143."""
    cid = "cs4"
    a, b, c = _cluster(members, make_client, cid)
    run = _Run(c, "--server", "b", "--", "sh", "-c",
               "echo started >&2; exec sleep 60")
    jid = run.id()
    run.said("started")
    run.p.send_signal(signal.SIGINT)
    rc, _ = run.wait()
    assert rc == 143, (rc, run.err)
    rec = _end(etcd, cid, jid)
    assert rec["state"] == "stopped" and rec["member"] == "b", rec


def test_ctrl_c_stops_a_queued_cluster_job(members, make_client, etcd):
    """One Ctrl-C while it waits for b's card: it ends stopped, never
    placed, and gmux run exits 130."""
    cid = "cs5"
    a, b, c = _cluster(members, make_client, cid)
    hold = _cluster_id(c.gmux("run", "-d", "--gpus", "rtx4090:1", "--",
                              "sleep", "60"))
    wait_for(lambda: etcd.get_prefix("/gmux/%s/r/b/%s" % (cid, hold)), 30,
             0.1, what="the first job to run on b")
    run = _Run(c, "--gpus", "rtx4090:1", "--", "true")
    jid = run.id()
    key = "/gmux/%s/q/%s" % (cid, jid)
    wait_for(lambda: etcd.get_prefix(key), 30, 0.1, what="it to queue")
    time.sleep(0.5)     # a few polls of its record: still queued
    run.p.send_signal(signal.SIGINT)
    rc, _ = run.wait()
    assert rc == 130, (rc, run.err)
    rec = _end(etcd, cid, jid)
    assert rec["state"] == "stopped" and "member" not in rec, rec
    assert b"stopped" in run.err, run.err
    c.gmux("stop", hold)


def _catches_sigint(pid):
    """Has pid installed a SIGINT handler (SigCgt in /proc/PID/status)?"""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16) & (1 << (2 - 1))
    except OSError:
        pass
    return 0


def _job_made(etcd, cid, seen):
    """Has a job not in seen a key in etcd yet (queued, placed, ended)?"""
    return [k for k in etcd.get_prefix("/gmux/%s/" % cid)
            if k.split("/")[3] in "qre" and k.split("/")[-1] not in seen]


def test_ctrl_c_at_once_still_stops_the_job(members, make_client, etcd):
    """A Ctrl-C as soon as gmux run catches it (during its sync, before
    its POST can have returned), or as soon as the job exists (its reply
    on the way): the job is stopped once its id is known, and gmux run
    exits 130 or 143, never killed by the signal (it died of SIGINT under
    ASan when the handler came after the POST)."""
    cid = "cs6"
    a, b, c = _cluster(members, make_client, cid)
    seen = set()
    for i in range(6):
        p = c.popen("run", "--server", "b", "--", "sleep", "60",
                    stdout=-1, stderr=-1)
        if i % 2 == 0:
            wait_for(lambda: _catches_sigint(p.pid) or p.poll() is not None,
                     30, 0.001, what="gmux run to catch SIGINT")
        else:
            wait_for(lambda: _job_made(etcd, cid, seen) or
                     p.poll() is not None, 30, 0.001, what="the job")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        assert p.returncode in (130, 143), (i, p.returncode, err)
        jid = err.split(b"gmux: ", 1)[1].split()[0].decode()
        assert _end(etcd, cid, jid)["state"] == "stopped", err
        seen.add(jid)


def _on(d, cwd, *args):
    """The CLI on d's own Unix socket, in cwd, as a member's user runs it."""
    import subprocess
    from conftest import GMUX
    return subprocess.run([GMUX] + list(args), env=d.env, cwd=cwd,
                          capture_output=True, timeout=60)


def test_on_a_member_submit_and_run_are_the_clusters(members, etcd, tmp):
    """On a member's own socket (no client, no token), gmux submit FILE
    and gmux run with a placement directive are the cluster's jobs, run
    in this directory on their member (the storage members share: here
    one machine's); they were a's own jobs (a has no RTX 4090)."""
    cid = "cs5"
    a = members("a", cid, tls=True)
    joined(members("b", cid, B_FAKE, tls=True), 2)
    joined(a, 2)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    with open(os.path.join(work, "job.sh"), "w") as f:
        f.write("#!/bin/sh\n#SBATCH --job-name=sweep\n"
                "#GMUX --gpus rtx4090:1\n"
                'echo "$1 $(pwd)" > out.txt\nexit 3\n')
    r = _on(a, work, "submit", "job.sh", "arg1")
    jid = _cluster_id(r)
    rec = _end(etcd, cid, jid)
    assert (rec["member"], rec["exit_code"], rec["req"]["name"]) == \
        ("b", 3, "sweep"), rec
    with open(os.path.join(work, "out.txt")) as f:
        assert f.read() == "arg1 %s\n" % os.path.realpath(work)
    with open(os.path.join(work, "any.sh"), "w") as f:
        f.write("#!/bin/sh\ntrue\n")
    jid = _cluster_id(_on(a, work, "submit", "--server", "a", "any.sh"))
    assert _end(etcd, cid, jid)["member"] == "a"
    r = _on(a, work, "run", "--gpus", "rtx4090:1", "--", "sh", "-c",
            "echo out; echo err >&2; exit 7")
    assert r.returncode == 7, r.stderr
    assert r.stdout == b"out\n", r.stdout
    err = r.stderr.decode()
    assert "err\n" in err and " on b\n" in err, err
    jid = err.split("gmux: ", 1)[1].split()[0]
    assert _end(etcd, cid, jid)["member"] == "b"
    # without a directive, gmux run is still this host's job
    r = _on(a, work, "run", "-d", "--", "true")
    assert r.returncode == 0 and r.stdout.startswith(b"j"), r


def test_gmux_shell_with_a_placement_directive_is_a_cluster_terminal(
        members, etcd, tmp):
    """gmux shell --gpus rtx4090:1 on a member: a terminal placed by the
    cluster (on b, which has the card), attached through a; it was a's
    own job, refused for want of the card."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    cid = "cs6"
    a = members("a", cid, tls=True)
    joined(members("b", cid, B_FAKE, tls=True), 2)
    joined(a, 2)
    r = _on(a, tmp, "shell", "--gpus", "rtx4090:1", "--", "sh", "-c",
            "echo hello-there; sleep 0.5; exit 5")
    err = r.stderr.decode()
    assert r.returncode == 5, err
    assert b"hello-there" in r.stdout, r.stdout
    jid = err.split("gmux: shell ", 1)[1].split()[0]
    assert jid.startswith("a."), err
    assert _end(etcd, cid, jid)["member"] == "b"
    r = _on(a, tmp, "shell", "--nodes", "2", "--server", "b")
    assert r.returncode == 2 and b"--nodes: a terminal is one job" in \
        r.stderr, r.stderr


def _ps_rows(d, *args):
    """gmux ps's cluster part: {id: (state, member)}, or None if absent."""
    out = d.gmux("ps", *args).stdout.decode()
    if "\ncluster " not in out:
        return None
    rows = out.split("\ncluster ", 1)[1].splitlines()[2:]
    return {r.split()[0]: (r.split()[1], r.split()[2]) for r in rows}


def test_gmux_ps_on_a_member_or_its_client_shows_the_clusters_jobs(
        members, make_client, etcd):
    """gmux ps on any member, or on a client whose remote is one, lists
    the cluster's live jobs wherever they run, below the host's own (they
    were only in gmux cluster ps); -a the ended ones too; another owner's
    client sees none of them."""
    cid = "cs8"
    a, b, c = _cluster(members, make_client, cid)
    assert _ps_rows(a) is None      # no cluster job: the host's alone
    r = c.gmux("run", "-d", "--server", "b", "--", "sleep", "60")
    jid = _cluster_id(r)
    r = c.gmux("run", "-d", "--server", "a", "--", "true")
    quick = _cluster_id(r)
    _end(etcd, cid, quick)
    for d in (a, b, c):
        wait_for(lambda: (_ps_rows(d) or {}).get(jid) == ("running", "b"),
                 30, 0.1, what="%s running on b in gmux ps" % jid)
        assert quick not in _ps_rows(d), d.gmux("ps").stdout
        assert (_ps_rows(d, "-a") or {}).get(quick) == ("exited", "a"), \
            d.gmux("ps", "-a").stdout
    assert b"cluster %s (gmux cluster ps):" % cid.encode() in \
        a.gmux("ps").stdout
    bob = client_of(a, make_client, "bob")[0]
    assert _ps_rows(bob, "-a") is None, bob.gmux("ps", "-a").stdout
    assert c.gmux("stop", jid).returncode == 0
    wait_for(lambda: jid not in (_ps_rows(a) or {}), 30, 0.1,
             what="%s gone from gmux ps" % jid)
    assert _ps_rows(a, "-a")[jid] == ("stopped", "b")


def test_gmux_run_follows_a_gang(members, make_client, etcd):
    """gmux run --nodes 2 (it was refused without -d): rank 0's output
    here, the gang's exit code the first failure's, said with its rank and
    member; one Ctrl-C stops every part, exit 130 or 143."""
    cid = "cs9"
    a, b, c = _cluster(members, make_client, cid)
    r = c.gmux("run", "--nodes", "2", "--share", "0.25", "--", "sh", "-c",
               "echo rank $RANK of $WORLD_SIZE $SLURM_PROCID $SLURM_NTASKS; "
               "[ $RANK = 0 ] || { sleep 0.5; exit 3; }; sleep 30",
               timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 3, err
    assert r.stdout == b"rank 0 of 2 0 2\n", (r.stdout, err)
    gid = err.split("gmux: ", 1)[1].split()[0]
    assert "gmux: %s on " % gid in err and "rank 0's output follows" in err
    first = [x for x in err.splitlines() if " first (exit 3)" in x]
    assert first and first[0].startswith("gmux: %s-1 (rank 1 of %s, on "
                                         % (gid, gid)), err
    for k in (0, 1):
        assert _end(etcd, cid, "%s-%d" % (gid, k))["state"] in \
            ("exited", "stopped"), k
    r = c.gmux("run", "--nodes", "2", "--share", "0.25", "--", "sh", "-c",
               "echo rank $RANK; exit 0", timeout=60)
    assert (r.returncode, r.stdout) == (0, b"rank 0\n"), r.stderr
    run = _Run(c, "--nodes", "2", "--share", "0.25", "--", "sh", "-c",
               "echo up; sleep 60")
    run.said("rank 0's output follows")
    gid = run.id()
    wait_for(lambda: len([k for k in etcd.get_prefix("/gmux/%s/r/" % cid)
                          if k.startswith(gid + "-", k.rfind("/") + 1)])
             == 2, 30, 0.05, what="both ranks to run")
    run.p.send_signal(signal.SIGINT)
    rc, out = run.wait()
    assert rc in (130, 143), (rc, run.err)
    for k in (0, 1):
        assert _end(etcd, cid, "%s-%d" % (gid, k))["state"] == "stopped"


def test_logs_follow_a_queued_job_a_gang_and_say_what_an_array_is(
        members, make_client, etcd):
    """gmux logs -f of a queued cluster job waits for it to start, then
    follows it (it exited at once: 'is queued: no output yet'); a gang's
    own id is its rank 0's output (it was 'no cluster job'); an array's
    says its output is its elements'."""
    cid = "cs10"
    a, b, c = _cluster(members, make_client, cid)
    blocker = _cluster_id(c.gmux("run", "-d", "--gpus", "rtx4090:1",
                                 "--share", "1", "--", "sleep", "60"))
    wait_for(lambda: [k for k in etcd.get_prefix("/gmux/%s/r/" % cid)
                      if k.endswith("/" + blocker)], 30, 0.05,
             what="the card taken")
    jid = _cluster_id(c.gmux("run", "-d", "--gpus", "rtx4090:1", "--share",
                             "1", "--", "sh", "-c", "echo late; exit 4"))
    for d in (c, a):
        r = d.gmux("logs", jid)       # not following: said, not waited
        assert r.returncode == 1 and b"is queued" in r.stderr, r
    p = c.popen("logs", "-f", jid, stdout=-1, stderr=-1)
    time.sleep(1.5)
    assert p.poll() is None, p.communicate()    # waits while queued
    assert c.gmux("stop", blocker).returncode == 0
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and out == b"late\n", (p.returncode, out, err)
    assert b"is queued in the cluster; waiting for it to start" in err, err
    gid = _cluster_id(c.gmux("run", "-d", "--nodes", "2", "--share",
                             "0.25", "--", "sh", "-c", "echo rank $RANK"))
    _end(etcd, cid, gid + "-0")
    _end(etcd, cid, gid + "-1")
    for d in (c, a, b):
        r = d.gmux("logs", gid)
        assert (r.returncode, r.stdout) == (0, b"rank 0\n"), r
    r = c.gmux("cluster", "submit", "--array", "0-1", "--share", "0.25",
               "--", "true")
    aid = r.stdout.decode().strip()
    r = c.gmux("logs", aid)
    assert r.returncode == 1 and (b"%s is an array: the output is its "
                                  b"elements' (%s_N)" % (aid.encode(),
                                                         aid.encode())) \
        in r.stderr, r
    # gmux status of a cluster id: its elements, its parts, or itself
    for k in (0, 1):
        _end(etcd, cid, "%s_%d" % (aid, k))
    st = c.json("status", "--json", aid)
    assert (st["state"], st["count"]) == ("exited", 2), st
    assert sorted((e["id"], e["state"], e["exit_code"]) for e in
                  st["elements"]) == [(aid + "_0", "exited", 0),
                                      (aid + "_1", "exited", 0)], st
    st = c.json("status", "--json", gid)
    assert sorted(e["id"] for e in st["elements"]) == [gid + "-0",
                                                       gid + "-1"], st
    assert {e["host"] for e in st["elements"]} == {"a", "b"}, st
    st = c.json("status", "--json", jid)
    assert (st["state"], st["exit_code"], [e["host"] for e in
                                           st["elements"]]) == \
        ("exited", 4, ["b"]), st
    assert c.gmux("status", jid).stdout.startswith(
        b"%s: exited, 1 element\n" % jid.encode())


def test_output_patterns_of_cluster_jobs_are_the_clusters(members, etcd,
                                                         tmp):
    """--output's %j, %A and %a in a cluster job are its cluster id, its
    array's and its index, not the local job's jN: two members with the
    same jN in a shared directory wrote one file (one job's output lost)."""
    cid = "cs11"
    a = members("a", cid, tls=True)
    joined(members("b", cid, B_FAKE, tls=True), 2)
    joined(a, 2)
    work = os.path.join(tmp, "work")
    os.makedirs(os.path.join(work, "outs"))
    for m in ("a", "b"):
        r = _on(a, work, "run", "-q", "--server", m, "--output",
                "outs/slurm-%j.out", "--", "sh", "-c",
                "echo from-%s $SLURM_JOB_ID" % m)
        assert r.returncode == 0, r.stderr
    for m in ("a", "b"):
        got = {f: open(os.path.join(work, "outs", f)).read()
               for f in os.listdir(os.path.join(work, "outs"))
               if ("from-" + m) in open(os.path.join(work, "outs",
                                                     f)).read()}
        assert len(got) == 1, got
        name = list(got)[0]
        assert name.startswith("slurm-a.") and name.endswith(".out"), got
        # SLURM_JOB_ID is the cluster id too (jN repeats across members)
        assert got[name] == "from-%s %s\n" % (m, name[6:-4]), got
    with open(os.path.join(work, "arr.sh"), "w") as f:
        f.write("#!/bin/sh\n#SBATCH --array=0-2 --output=outs/%A_%a.txt\n"
                "echo element $SLURM_ARRAY_TASK_ID\n")
    aid = _cluster_id(_on(a, work, "submit", "arr.sh"))
    for i in range(3):
        _end(etcd, cid, "%s_%d" % (aid, i))
        path = os.path.join(work, "outs", "%s_%d.txt" % (aid, i))
        with open(path) as f:
            assert f.read() == "element %d\n" % i
