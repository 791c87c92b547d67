"""--mode overcommit across the cluster (docs/cluster.md, "Overcommit"):
a member publishes its card's measured memory in use (a fake nvidia-smi
reports what the test writes), and the leader admits an overcommitted job
on measured free, reserving nothing, where a shared job of the same size
waits; when the measure grows it waits too, and is placed once it shrinks; a use that moves less than a
step is not published again.
A member whose cards measure nothing gets none (test_cluster_jobs: where
no member measures, it is refused at submission)."""

import json
import os
import shutil
import time

import pytest

from conftest import wait_for
from clusterlib import (VERBOSE, cluster_state, jobs, leader,  # noqa
                        members, submit, tmp)
from test_overcommit import TOOL, UUID

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

GIB = 1 << 30


def set_used(dir_, mib):
    with open(os.path.join(dir_, "used.new"), "w") as f:
        f.write("%d\n" % mib)
    os.rename(os.path.join(dir_, "used.new"), os.path.join(dir_, "used"))


def record_used(d, name):
    for m in cluster_state(d) or []:
        if m["name"] == name:
            return m["use"]["cards"][0].get("mem_used")
    return None


def published(d, name, gib):
    """Waits for member name's record to say gib GiB in use on its card."""
    wait_for(lambda: record_used(d, name) == gib * GIB, 40, 0.2,
             what="%s's record to say %d G in use" % (name, gib))


def _id(r):
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip()


def _state(d, jid, state, timeout=40):
    return wait_for(lambda: (lambda j: j if j.get("state") == state else
                             None)((jobs(d) or {}).get(jid, {})), timeout,
                    0.1, what="%s to be %s" % (jid, state))


def waits_for(d, jid):
    q = json.loads(d.gmux("cluster", "queue", "--json", check=0).stdout)
    return {j["id"]: j.get("waits_for") for j in q}.get(jid)


def test_overcommit_placed_on_measured_free(members, tmp):
    tooldir = os.path.join(tmp, "tool")
    os.makedirs(tooldir)
    tool = os.path.join(tooldir, "nvidia-smi")
    with open(tool, "w") as f:
        f.write(TOOL % (tooldir, UUID))
    os.chmod(tool, 0o755)
    set_used(tooldir, 2048)
    a = members("a", "oc1", start=False)
    del a.env["GMUX_NO_DETECT"]
    a.env["PATH"] = "%s:%s" % (tooldir, a.env["PATH"])
    a.start(*VERBOSE, fake=None)
    b = members("b", "oc1", "1xH100:80G")     # fake: measures nothing
    wait_for(lambda: leader(a) is not None, 30, 0.1, what="a leader")
    wait_for(lambda: len(cluster_state(a)) == 2, 30, 0.1, what="2 members")
    published(a, "a", 2)
    # a use that moves less than a step is not published again: a's own
    # measure says 2.5G, its record 2G past its next rewrite (5 s)
    set_used(tooldir, 2560)
    wait_for(lambda: a.json("cards", "--json")[0].get("mem_measured") ==
             2560 << 20, 30, 0.1, what="a to measure 2.5G")
    until = time.monotonic() + 7
    while time.monotonic() < until:
        assert record_used(a, "a") == 2 * GIB
        time.sleep(0.5)
    # a shared job holds every seat of a's card and 8G
    full = _id(submit(a, tmp, "sleep", "600", flags=(
        "--server", "a", "--share", "1", "--mem", "8G")))
    _state(a, full, "running")
    # one of the same size waits for a seat on a (b is pinned out)
    shared = _id(submit(a, tmp, "sleep", "600", flags=(
        "--server", "a", "--share", "0.25", "--mem", "8G")))
    # overcommitted, it goes on a (b's card measures nothing): no seat,
    # nothing reserved, its cap its --mem
    over = _id(submit(a, tmp, "sh", "-c", 'echo "mem=$GMUX_MEM"; '
                      'exec sleep 600', flags=(
                          "--mode", "overcommit", "--share", "0.25",
                          "--mem", "8G")))
    assert _state(a, over, "running")["member"] == "a"
    assert (jobs(a) or {})[shared]["state"] == "queued"
    assert waits_for(a, shared).startswith("no member has room now")
    wait_for(lambda: b"mem=" in a.gmux("cluster", "logs", over).stdout, 30,
             0.1, what="the overcommitted job's output")
    assert b"mem=%d" % (8 * GIB) in a.gmux("cluster", "logs", over).stdout
    # measured use grows: 79.6G - 70G measured - 8G reserved - 8G asked
    set_used(tooldir, 70 * 1024)
    published(a, "a", 70)
    late = _id(submit(a, tmp, "true", flags=(
        "--mode", "overcommit", "--share", "0.25", "--mem", "8G")))
    wait_for(lambda: (waits_for(a, late) or "").startswith(
        "no member has room now; nearest: a"), 30, 0.1,
        what="the late job to wait for room")
    assert (jobs(a) or {})[late]["state"] == "queued"
    # it shrinks: the late job is placed and runs
    set_used(tooldir, 3 * 1024)
    published(a, "a", 3)
    assert _state(a, late, "exited")["member"] == "a"
    for jid in (full, shared, over):
        a.gmux("cluster", "stop", jid, check=0)

