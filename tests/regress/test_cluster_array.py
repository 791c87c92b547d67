"""Arrays on a cluster (docs/cluster.md, "Arrays"): submitted over TCP
with a token, one record (y/ID) until elements start; the leader queues
elements ID_N as ordinary jobs, never more live than the %N limit; each
element has GMUX_ARRAY_* and SLURM_ARRAY_*; owners are kept apart; a stop
ends the array whole."""

import json
import os
import shutil
import time

import pytest

from conftest import wait_for
from clusterlib import client_of, https_json, joined
from clusterlib import members, tmp  # noqa
from remotelib import https

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

SCRIPT = ('echo "start $(date +%s%N)"; '
          'echo "env $GMUX_ARRAY_JOB_ID $GMUX_ARRAY_INDEX $GMUX_ARRAY_COUNT '
          '$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT '
          '$SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX '
          '${SLURM_ARRAY_TASK_STEP:-none}"; sleep 0.3; '
          'echo "end $(date +%s%N)"')


def _live_elements(etcd, cid, aid):
    """The element keys of aid in q/, a/ and r/ now, read from etcd."""
    keys = etcd.get_prefix("/gmux/%s/" % cid)
    return [k for k, v in keys.items()
            if k.split("/")[3] in ("q", "a", "r") and
            json.loads(v).get("element", {}).get("of") == aid]


def test_an_array_over_tcp_runs_its_elements_within_its_limit(members,
                                                                etcd):
    a, b = members("a", "y1", tls=True), members("b", "y1", tls=True)
    joined(a, 2)
    joined(b, 2)
    alice, bob = a.token_for("alice"), a.token_for("bob")
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["sh", "-c", SCRIPT], "share": 0.25,
                        "array": "1-9:2%2"})
    assert st == 201 and o["state"] == "array", o
    aid = o["id"]
    assert o["array"] == {"count": 5, "limit": 2, "next": 0}
    # one record: y/ID, and the elements as they start, never over 2 live
    y = json.loads(etcd.get_prefix("/gmux/y1/y/%s" % aid)
                   ["/gmux/y1/y/%s" % aid])
    assert y["owner"] == "alice" and y["req"]["array"] == "1-9:2%2"
    most = 0

    def done():
        nonlocal most
        most = max(most, len(_live_elements(etcd, "y1", aid)))
        st, o = https_json(a, "GET", "/v1/cluster/jobs/%s" % aid, alice)
        assert st == 200, o
        return o["state"] in ("exited", "failed") and o
    rec = wait_for(done, 120, 0.05, what="the array to end")
    assert rec["state"] == "exited", rec
    assert rec["elements"] == {"count": 5, "queued": 0, "assigned": 0,
                               "running": 0, "ended": 5, "failed": 0}
    assert 1 <= most <= 2, most
    # the listing (gmux ps, gmux cluster ps) says the array's state too
    st, listing = https_json(a, "GET", "/v1/cluster/jobs", alice)
    assert {j["id"]: j["state"] for j in listing}[aid] == "exited", listing

    # each element: its variables, its output; never more than 2 at once
    spans = []
    for i in (1, 3, 5, 7, 9):
        eid = "%s_%d" % (aid, i)
        st, o = https_json(a, "GET", "/v1/cluster/jobs/%s" % eid, alice)
        assert st == 200 and o["state"] == "exited", o
        assert o["owner"] == "alice" and o["element"]["index"] == i
        st, _, out = https(a.port, "GET", "/v1/cluster/jobs/%s/log?from=0"
                           "&raw=1" % eid, token=alice)
        assert st == 200, out
        lines = dict(x.split(" ", 1) for x in out.decode().splitlines()
                     if x.split(" ", 1)[0] in ("start", "env", "end"))
        assert lines["env"] == "%s %d 5 %s %d 5 1 9 2" % (aid, i, aid, i)
        spans.append((int(lines["start"]), int(lines["end"])))
    for t, _ in spans:
        assert sum(1 for s, e in spans if s <= t <= e) <= 2, spans

    # owners apart: bob sees none of it, reads or stops none of it
    st, ls = https_json(a, "GET", "/v1/cluster/jobs", bob)
    assert st == 200 and ls == [], ls
    for path in ("/v1/cluster/jobs/%s" % aid,
                 "/v1/cluster/jobs/%s_1" % aid,
                 "/v1/cluster/jobs/%s_1/log" % aid):
        st, o = https_json(a, "GET", path, bob)
        assert st == 404, (path, o)
    st, o = https_json(a, "POST", "/v1/cluster/jobs/%s/stop" % aid, bob)
    assert st == 404, o
    st, ls = https_json(a, "GET", "/v1/cluster/jobs", alice)
    assert sorted(j["id"] for j in ls) == sorted(
        [aid] + ["%s_%d" % (aid, i) for i in (1, 3, 5, 7, 9)]), ls
    # an ended array is not stopped again
    st, o = https_json(a, "POST", "/v1/cluster/jobs/%s/stop" % aid, alice)
    assert st == 409, o


def test_a_big_array_is_one_record_and_stops_whole(members, etcd):
    a = members("a", "y2", tls=True)
    joined(a, 1)
    alice = a.token_for("alice")
    # the baseline, in the same run: one job, submitted the same way
    t0 = time.monotonic()
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["true"], "share": 0.25})
    one = time.monotonic() - t0
    assert st == 201, o
    t0 = time.monotonic()
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["sleep", "60"], "share": 0.25,
                        "array": "0-9999"})
    took = time.monotonic() - t0
    assert st == 201, o
    aid = o["id"]
    print("10,000-element array submitted over TLS in %.1f ms; one job "
          "in %.1f ms (x%.2f)" % (took * 1000, one * 1000, took / one))
    # elements come as the leader places them: 4 share the one card (0.25
    # each), and at most 4 more wait in the queue
    wait_for(lambda: len([k for k in _live_elements(etcd, "y2", aid)
                          if k.split("/")[3] == "r"]) == 4, 60, 0.1,
             what="4 elements running")
    live = _live_elements(etcd, "y2", aid)
    assert 4 <= len(live) <= 8, live
    keys = etcd.get_prefix("/gmux/y2/")
    assert len([k for k in keys if "/%s_" % aid in k]) <= 8
    st, o = https_json(a, "GET", "/v1/cluster/jobs/%s" % aid, alice)
    assert st == 200 and o["state"] == "running", o
    assert o["elements"]["running"] == 4 and o["elements"]["count"] == 10000

    st, o = https_json(a, "POST", "/v1/cluster/jobs/%s/stop" % aid, alice)
    assert st == 200, o

    def stopped():
        st, o = https_json(a, "GET", "/v1/cluster/jobs/%s" % aid, alice)
        return o["state"] == "stopped" and o
    rec = wait_for(stopped, 60, 0.1, what="the array to stop")
    assert rec["elements"]["queued"] == rec["elements"]["running"] == 0
    assert 4 <= rec["elements"]["ended"] <= 8, rec
    assert rec["array"]["stopped"] is True
    # and no element is queued after it
    assert _live_elements(etcd, "y2", aid) == []


def test_gmux_submit_of_an_array_from_a_client(members, make_client, tmp):
    """gmux submit job.gmux with #GMUX --array from a machine with a
    token: the member's cluster takes it, each element runs it in the
    client's tree (synced to the member asked) and is read with gmux
    logs."""
    a, b = members("a", "y3", tls=True), members("b", "y3", tls=True)
    joined(a, 2)
    joined(b, 2)
    c, alice = client_of(a, make_client)
    job = os.path.join(c.work, "job.gmux")
    with open(job, "w") as f:
        f.write("#!/bin/sh\n#GMUX --array 0-3%2 --share 0.25\n"
                "#SBATCH --job-name=sweep\n"
                'echo "$GMUX_ARRAY_INDEX/$SLURM_ARRAY_TASK_COUNT $1 '
                '$(basename $PWD) $(cat seeds.txt)"\n')
    with open(os.path.join(c.work, "seeds.txt"), "w") as f:
        f.write("s42\n")
    r = c.gmux("submit", "job.gmux", "arg1")
    assert r.returncode == 0, r.stderr
    aid = r.stdout.decode().strip()
    assert aid.startswith("a."), aid

    def done():
        st, o = https_json(a, "GET", "/v1/cluster/jobs/%s" % aid, alice)
        return st == 200 and o["state"] in ("exited", "failed") and o
    rec = wait_for(done, 120, 0.1, what="the array to end")
    assert rec["state"] == "exited" and rec["owner"] == "alice", rec
    assert rec["req"]["name"] == "sweep"
    for i in range(4):
        r = c.gmux("logs", "%s_%d" % (aid, i))
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode() == "%d/4 arg1 work s42\n" % i, r.stdout
    # --wait waits for every element, then says each (it was refused)
    r = c.gmux("submit", "--wait", "job.gmux", timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    wid = out[0]
    assert wid.startswith("a.") and wid != aid, out
    assert "4/4 done" in r.stdout.decode(), out
    assert "%s: exited, 4 elements" % wid in out, out
    assert sorted(x.split()[:3] for x in out if x.startswith(wid + "_")) \
        == [[wid + "_%d" % i, "exited", "0"] for i in range(4)], out


def _array_when(a, aid, token, pred, timeout, what):
    """Waits until pred holds of array aid's record; returns it."""
    def get():
        st, o = https_json(a, "GET", "/v1/cluster/jobs/%s" % aid, token)
        assert st == 200, o
        return pred(o) and o
    return wait_for(get, timeout, 0.2, what=what)


def test_one_stop_ends_an_array_of_hundreds_of_live_elements(members, etcd):
    """etcd takes 128 operations a Txn: a stop of an array with 200 live
    elements ends all of them, the stops past the first Txn written in
    Txns of their own (it needed a second stop)."""
    a = members("a", "y4", fake="2xH100:80G", tls=True)
    joined(a, 1)
    alice = a.token_for("alice")
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["sleep", "600"], "share": 0.01,
                        "array": "0-199%200"})
    assert st == 201, o
    aid = o["id"]

    _array_when(a, aid, alice, lambda o: o["elements"]["running"] == 200,
                300, "200 elements running")
    st, o = https_json(a, "POST", "/v1/cluster/jobs/%s/stop" % aid, alice)
    assert st == 200 and o["stop"] is True and "more" not in o, o
    rec = _array_when(a, aid, alice, lambda o: o["state"] == "stopped",
                      180, "every element to stop")
    el = rec["elements"]
    assert (el["count"], el["ended"]) == (200, 200), rec
    assert el["queued"] == el["assigned"] == el["running"] == 0, rec
    assert _live_elements(etcd, "y4", aid) == []
    # each ended stopped, and its member took its stop key away
    keys = etcd.get_prefix("/gmux/y4/")
    assert not [k for k in keys if k.startswith("/gmux/y4/s/")], keys
    ends = [json.loads(v) for k, v in keys.items()
            if k.startswith("/gmux/y4/e/%s_" % aid)]
    assert len(ends) == 200
    assert {e["state"] for e in ends} == {"stopped"}, ends[:3]


def test_the_queue_shows_an_arrays_waiting_elements(members, etcd):
    """GET /v1/cluster/queue (gmux queue on a member) has a row for an
    array's elements not queued yet, with what they wait for: its %N
    limit, or its queued elements ahead of them (it showed only the queued
    elements, and no waits_for for the array)."""
    a = members("a", "y5", tls=True)
    joined(a, 1)
    alice = a.token_for("alice")
    st, lim = https_json(a, "POST", "/v1/cluster/jobs", alice,
                         {"argv": ["sleep", "120"], "share": 0.25,
                          "array": "0-9%2"})
    assert st == 201, lim
    wait_for(lambda: len([k for k in _live_elements(etcd, "y5", lim["id"])
                          if k.split("/")[3] == "r"]) == 2, 60, 0.1,
             what="2 elements running")
    # the card holds 2 more of 0.25; then 4 wait in the queue, the rest
    # in the array
    st, full = https_json(a, "POST", "/v1/cluster/jobs", alice,
                          {"argv": ["sleep", "120"], "share": 0.25,
                           "array": "0-9"})
    assert st == 201, full

    def rows():
        st, q = https_json(a, "GET", "/v1/cluster/queue", alice)
        assert st == 200, q
        by = {j["id"]: j for j in q}
        # settled: 2 of it run beside lim's 2, 4 queued, 4 in the array
        return (full["id"] in by and lim["id"] in by and
                len([i for i in by if i.startswith(full["id"] + "_")])
                == 4 and by[full["id"]]["waiting"] == 4 and
                by[full["id"]]["elements"]["running"] == 2 and by)
    by = wait_for(rows, 60, 0.1, what="the arrays' rows in the queue")
    assert by[lim["id"]]["waiting"] == 8
    assert by[lim["id"]]["waits_for"] == \
        "its limit: 2 of its elements live (%2)"
    assert by[full["id"]]["waiting"] == 4
    assert by[full["id"]]["waits_for"] == "its 4 queued elements, first"
    assert by["%s_2" % full["id"]]["waits_for"].startswith("no member has "
                                                            "room")
    # the CLI shows them
    out = a.gmux("queue", check=0).stdout.decode()
    assert "its limit: 2 of its elements live (%2)" in out, out
    for x in (lim, full):
        st, o = https_json(a, "POST", "/v1/cluster/jobs/%s/stop" % x["id"],
                           alice)
        assert st == 200, o


def test_a_gang_array_is_refused(members):
    a = members("a", "y6", tls=True)
    joined(a, 1)
    alice = a.token_for("alice")
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["true"], "share": 0.25, "nodes": 2,
                        "array": "0-3"})
    assert st == 400, o
    assert o["error"] == ("array: a gang (nodes 2) is not an array's "
                          "element: submit the gang once per index"), o
