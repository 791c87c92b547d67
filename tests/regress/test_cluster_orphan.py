"""The keeper's fence (docs/cluster.md, "Faults"): a member's daemon killed
-9 while its keeper keeps a --requeue cluster job running.  The leader
places the job again once the member has been gone its lease and the
grace; the keeper, with no daemon for nearly that long, has stopped its
copy first, so nothing runs twice: each run writes a line to one file,
and the test reads the order."""

import os
import time
import shutil

import pytest

from conftest import wait_for
from clusterlib import (VERBOSE, cluster_state, jobs, leader,  # noqa
                        members, submit, tmp)

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

JOB = ('echo "start $$" >> %s; trap \'echo "term $$" >> %s; exit 0\' TERM; '
       'while :; do sleep 0.1; done')


def lines(path):
    try:
        with open(path) as f:
            return f.read().split("\n")[:-1]
    except FileNotFoundError:
        return []


def starts(path):
    return [x for x in lines(path) if x.startswith("start ")]


def _state(d, jid, state, member, timeout=60):
    def get():
        j = (jobs(d) or {}).get(jid, {})
        return j if j.get("state") == state and \
            j.get("member") == member else None
    return wait_for(get, timeout, 0.1,
                    what="%s to be %s on %s" % (jid, state, member))


def first_run(members, tmp, cid, extra=""):
    """Member b of cluster cid, leading, running the --requeue job."""
    runs = os.path.join(tmp, "runs")
    b = members("b", cid, extra=extra)
    wait_for(lambda: leader(b) == "b", 30, 0.1, what="b to lead")
    r = submit(b, tmp, "sh", "-c", JOB % (runs, runs),
               flags=("--share", "0.25", "--requeue"))
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    _state(b, jid, "running", "b")
    wait_for(lambda: len(lines(runs)) == 1, 30, 0.1, what="the first run")
    return b, jid, runs


def test_keeper_stops_its_job_before_the_requeue(members, tmp):
    b, jid, runs = first_run(members, tmp, "o1")
    first = lines(runs)[0]
    a = members("a", "o1")
    wait_for(lambda: len(cluster_state(a)) == 2, 30, 0.1, what="2 members")
    b.kill9()                   # the daemon only: its keeper runs on
    _state(a, jid, "running", "a")
    wait_for(lambda: len(starts(runs)) == 2, 30, 0.1, what="the second run")
    got = lines(runs)
    pid = first.split()[1]
    # the first copy ended before the second began
    assert got[:2] == [first, "term %s" % pid], got
    assert len(got) == 3 and got[2] == starts(runs)[1] != first, got
    assert not os.path.exists("/proc/%s" % pid)
    said = b""
    for n in os.listdir(os.path.join(b.home, "jobs")):
        log = os.path.join(b.home, "jobs", n, "log")
        if os.path.exists(log):
            with open(log, "rb") as f:
                said += f.read()
    assert b"no daemon for long: stopped before its cluster" in said
    a.gmux("cluster", "stop", jid, check=0)
    wait_for(lambda: len(lines(runs)) == 4, 30, 0.1, what="the stop")
    assert len(starts(runs)) == 2


def test_a_daemon_back_in_time_keeps_the_job(members, tmp):
    """The daemon restarted soon after its kill -9 takes the job over as
    ever: past the keeper's deadline (lease 10 s + grace 2 s - 1 s), the
    one copy still runs, never stopped."""
    b, jid, runs = first_run(members, tmp, "o2", "CLUSTER_LEASE=10\n")
    pid = lines(runs)[0].split()[1]
    b.kill9()
    b.start(*VERBOSE, fake=b.fake)
    local = [j for j in b.json("ps", "--json") if j["state"] == "running"]
    assert len(local) == 1, local
    deadline = time.monotonic() + 10 + 2 - 1 + 3
    while time.monotonic() < deadline:
        assert lines(runs) == ["start %s" % pid], lines(runs)
        time.sleep(0.2)
    assert os.path.exists("/proc/%s" % pid)
    assert _state(b, jid, "running", "b")
    b.gmux("cluster", "stop", jid, check=0)
    wait_for(lambda: len(lines(runs)) == 2, 30, 0.1, what="the stop")
