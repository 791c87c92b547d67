"""Every change of a job's state goes through one place (job-state.c): it
is logged at debug, so a daemon's log holds each job's whole life as an
unbroken chain of transitions ending where the job is.  A transition made
anywhere else breaks its job's chain."""

import os
import re
import subprocess

from conftest import wait_for

LINE = re.compile(r"job_set_state: (j\d+) (\w+) -> (\w+)")


def chains(d):
    """Each job's logged states in order: {"j1": ["queued", "running"]}."""
    out = {}
    with open(os.path.join(d.home, "gmux.log")) as f:
        for m in LINE.finditer(f.read()):
            jid, was, now = m.groups()
            seen = out.setdefault(jid, ["queued"])
            assert was == seen[-1], (jid, seen, was, now)
            seen.append(now)
    return out


def run_d(d, *args):
    r = d.gmux("run", "-d", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip()


def test_every_transition_is_logged_in_order(daemon, tmp_path):
    daemon.start("-v")
    gate = str(tmp_path / "gate")
    hold = ["sh", "-c", "while [ ! -e %s ]; do sleep 0.02; done" % gate]
    a = run_d(daemon, "--share", "1", "--", *hold)              # runs
    daemon.wait_state(a, "running")
    b = run_d(daemon, "--share", "1", "--", "true")             # waits
    c = run_d(daemon, "--share", "1", "--", "true")             # waits
    daemon.gmux("stop", c, check=0)                             # cancelled
    t = run_d(daemon, "--share", "1", "--timeout", "0.3s", "--", "true")
    daemon.wait_state(t, "failed")                              # refused
    open(gate, "w").close()
    daemon.wait_state(a, "exited")
    daemon.wait_state(b, "exited")
    s = run_d(daemon, "--share", "1", "--", "sleep", "100")
    daemon.wait_state(s, "running")
    daemon.gmux("stop", s, check=0)
    daemon.wait_state(s, "stopped")
    # a preempted --requeue victim goes back to the queue, then runs again
    mark = tmp_path / "mark"
    v = run_d(daemon, "--share", "1", "--preemptible", "--requeue",
              "--priority", "1", "--", "sh", "-c",
              "[ -e %s ] && exit 0; touch %s; sleep 100" % (mark, mark))
    daemon.wait_state(v, "running")
    wait_for(mark.exists, what="the victim's first run")
    u = run_d(daemon, "--share", "1", "--priority", "9", "--", "true")
    daemon.wait_state(u, "exited")
    daemon.wait_state(v, "exited")
    want = {
        a: ["queued", "running", "exited"],
        b: ["queued", "queued", "running", "exited"],
        c: ["queued", "queued", "stopped"],
        t: ["queued", "queued", "failed"],
        s: ["queued", "queued", "running", "stopped"],
        v: ["queued", "queued", "running", "queued", "running", "exited"],
        u: ["queued", "queued", "running", "exited"],
    }
    got = chains(daemon)
    for jid, states in want.items():
        # (how often it was told it waits depends on the passes)
        assert dedup(got.get(jid, [])) == dedup(states), (jid, got.get(jid))
        assert got[jid][-1] == daemon.job(jid)["state"]


def dedup(states):
    return [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]


def test_a_restart_keeps_every_chain_whole(daemon):
    daemon.start("-v")
    a = run_d(daemon, "--", "sleep", "100")
    daemon.wait_state(a, "running")
    daemon.stop()
    daemon.start("-v")
    daemon.gmux("stop", a, check=0)
    daemon.wait_state(a, "stopped")
    assert dedup(chains(daemon)[a]) == ["queued", "running", "stopped"]


def test_a_follower_sees_it_wait_then_start(daemon, tmp_path):
    daemon.start("-v")
    gate = str(tmp_path / "gate")
    a = run_d(daemon, "--share", "1", "--", "sh", "-c",
              "while [ ! -e %s ]; do sleep 0.02; done" % gate)
    daemon.wait_state(a, "running")
    p = daemon.popen("run", "--share", "1", "--", "echo", "hi",
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: any(j["state"] == "queued"
                         for j in daemon.json("ps", "--json")),
             what="the second job to wait")
    open(gate, "w").close()
    out, err = p.communicate(timeout=15)
    assert p.returncode == 0 and out == b"hi\n"
    assert b"started" in err, err
