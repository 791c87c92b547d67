"""Cluster jobs beyond the basics (docs/cluster.md): an end written the
moment its local job ends, placement on a job's directives across members,
gangs, and a job's output and terminal through any member."""

import json
import os
import shutil

import pytest

from conftest import _kill_keepers, wait_for
from clusterlib import (VERBOSE, cluster_state, jobs, leader,  # noqa
                        members, submit, tmp)

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")


def _ended(d, jid, state="exited"):
    return wait_for(lambda: (lambda j: j if j.get("state") == state else
                             None)((jobs(d) or {}).get(jid, {})), 30, 0.1,
                    what="%s to be %s" % (jid, state))


def test_end_written_when_the_local_job_ends(members, tmp):
    """The cluster hears of a local job's end from job_set_state, not from
    its tick: with the tick slowed to 4 s, the end record is written within
    a second of the local job's end."""
    a = members("a", "u1", start=False, extra="CLUSTER_LEASE=30\n")
    a.env["GMUX_TEST_CLUSTER_TICK_MS"] = "4000"
    a.start(*VERBOSE, fake=a.fake)
    wait_for(lambda: leader(a) == "a", 30, 0.1, what="a to lead")
    for _ in range(2):
        jid = submit(a, tmp, "true").stdout.decode().strip()
        rec = _ended(a, jid)
        local = [x for x in a.json("ps", "-a", "--json")
                 if x["state"] == "exited" and x.get("ended")]
        end = max(x["ended"] for x in local)
        assert 0 <= rec["ended"] - end < 1000, (rec["ended"], end)


def _state(d, jid, state, timeout=30):
    return wait_for(lambda: (lambda j: j if j.get("state") == state else
                             None)((jobs(d) or {}).get(jid, {})), timeout,
                    0.1, what="%s to be %s" % (jid, state))


def _id(r):
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip()


def test_placement_on_directives(members, tmp):
    """--gpus TYPE:N, --server, --partition, --cpus and --ram (reserved),
    --mode exclusive place across members; what no member could hold is
    refused with the reason."""
    members("a", "u2", "1xH100:80G", extra="TAGS=big,fast\n")
    b = members("b", "u2", "1xA10:24G")
    wait_for(lambda: len(cluster_state(b)) == 2, 15, 0.1, what="2 members")
    ncpu = cluster_state(b)[0]["cpus"]
    refused = {("--gpus", "rtx4090:1"): "no member has a GPU of type rtx4090",
               ("--gpus", "h100:2"): "no member has 2 GPUs of type h100",
               ("--server", "zz"): "no member is named zz",
               ("--partition", "slow"): "no member has the tag slow",
               ("--cpus", str(ncpu + 1)): "no member has %d CPUs" % (ncpu + 1),
               ("--ram", "64T"): "no member has 64T of RAM",
               ("--mode", "overcommit", "--share", "0.1"):
               "mode: overcommit admits on measured memory use, and no "
               "member measures its cards' (fake cards do not)",
               # it said "a job with share 0 has no card", not what to do
               ("--mode", "overcommit"):
               "mode: overcommit shares a card, and a job with share 0 has "
               "none: give its compute share with --share (e.g. --share "
               "0.5; its memory is admitted on measured use)"}
    for flags, why in refused.items():
        r = submit(b, tmp, "true", flags=flags)
        assert r.returncode != 0 and why.encode() in r.stderr, (flags,
                                                               r.stderr)
    t = _id(submit(b, tmp, "true", flags=("--gpus", "a10:1")))
    s = _id(submit(b, tmp, "true", flags=("--server", "a")))
    p = _id(submit(b, tmp, "true", flags=("--partition", "fast")))
    assert [_state(b, x, "exited")["member"] for x in (t, s, p)] == \
        ["b", "a", "a"]
    # an exclusive job waits for a's card while a shared one holds part of it
    k = _id(submit(b, tmp, "sleep", "60", flags=("--server", "a",
                                                 "--share", "0.1")))
    _state(b, k, "running")
    x = _id(submit(b, tmp, "true", flags=("--server", "a", "--mode",
                                          "exclusive")))
    q = json.loads(b.gmux("cluster", "queue", "--json", check=0).stdout)
    assert [j["id"] for j in q] == [x]
    # CPUs are reserved: two jobs of every CPU go on two members, a
    # third waits for one of them
    c = [_id(submit(b, tmp, "sleep", "60", flags=("--share", "0", "--cpus",
                                                  str(ncpu))))
         for _ in range(3)]
    on = sorted(_state(b, y, "running")["member"] for y in c[:2])
    assert on == ["a", "b"]
    assert (jobs(b) or {})[c[2]]["state"] == "queued"
    b.gmux("cluster", "stop", k)
    assert _state(b, x, "exited")["member"] == "a"
    b.gmux("cluster", "stop", c[0])
    _state(b, c[2], "running")
    for y in c[1:]:
        b.gmux("cluster", "stop", y, check=0)


def _gang(d, gid, state=None):
    def get():
        code, text = d.curl("GET", "/v1/cluster/jobs/%s" % gid)
        if code != 200:
            return None
        o = json.loads(text)
        return o if state is None or o.get("state") == state else None
    return wait_for(get, 30, 0.1, what="gang %s %s" % (gid, state))


def test_gang_whole_or_none(members, tmp):
    """--nodes N: N parts on N members at once, each with its RANK,
    WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK, NODE_RANK; placed
    whole or not at all; a failed part ends the gang with its exit code."""
    from conftest import free_port
    ds = [members(n, "u3", "1xH100:80G",
                  extra="ADDR=127.0.0.1:%d\n" % free_port()) for n in "abc"]
    wait_for(lambda: len(cluster_state(ds[0])) == 3, 20, 0.1,
             what="3 members")
    r = submit(ds[0], tmp, "true", flags=("--share", "0.5", "--nodes", "4"))
    assert r.returncode != 0
    assert (b"nodes: a gang of 4 needs 4 members that could hold a part; "
            b"3 could") in r.stderr
    out = os.path.join(tmp, "ranks")
    gid = _id(submit(ds[0], tmp, "sh", "-c", "echo $RANK $WORLD_SIZE "
                     "$LOCAL_RANK $NODE_RANK $MASTER_ADDR $MASTER_PORT "
                     "$GMUX_GANG_ID >> %s" % out,
                     flags=("--share", "0.5", "--nodes", "2")))
    g = _gang(ds[1], gid, "exited")
    assert g["exit_code"] == 0 and len(g["parts"]) == 2
    assert len({p["member"] for p in g["parts"]}) == 2
    lines = sorted(x.split() for x in open(out).read().splitlines())
    assert [x[:4] for x in lines] == [["0", "2", "0", "0"],
                                      ["1", "2", "0", "1"]]
    assert {x[4] for x in lines} == {"127.0.0.1"}
    assert len({x[5] for x in lines}) == 1 and 29500 <= int(lines[0][5])
    assert {x[6] for x in lines} == {gid}
    # whole or none: with a's card taken, a gang of 3 waits, none of it
    # placed, while a job queued after it runs
    blk = _id(submit(ds[0], tmp, "sleep", "60",
                     flags=("--share", "1", "--server", "a")))
    _state(ds[0], blk, "running")
    g3 = _id(submit(ds[0], tmp, "true", flags=("--share", "0.5", "--nodes",
                                               "3")))
    after = _id(submit(ds[0], tmp, "true", flags=("--share", "0.5")))
    _state(ds[0], after, "exited")
    js = jobs(ds[0])
    assert js[g3]["state"] == "queued"
    assert not [x for x in js if x.startswith(g3 + "-")]
    ds[0].gmux("cluster", "stop", g3)
    # a part that fails ends the gang: the other is stopped
    gid = _id(submit(ds[1], tmp, "sh", "-c", "if [ $RANK = 1 ]; then exit 3;"
                     " fi; sleep 60", flags=("--share", "0.5", "--nodes",
                                             "2")))
    g = _gang(ds[2], gid, "exited")
    assert g["exit_code"] == 3
    states = sorted(p["state"] for p in g["parts"])
    assert states == ["exited", "stopped"], g["parts"]
    # a placed gang is stopped whole, from any member
    gid = _id(submit(ds[1], tmp, "sleep", "60", flags=("--share", "0.5",
                                                       "--nodes", "2")))
    wait_for(lambda: [p["state"] for p in
                      _gang(ds[1], gid).get("parts", [])] ==
             ["running", "running"], 30, 0.1, what="the gang to run")
    r = ds[2].gmux("cluster", "stop", gid, check=0)
    assert r.stdout.decode().strip() == "%s: stopping" % gid
    g = _gang(ds[0], gid, "stopped")
    assert [p["state"] for p in g["parts"]] == ["stopped", "stopped"]
    r = ds[2].gmux("cluster", "stop", gid)
    assert r.returncode == 1 and b"has ended" in r.stderr
    ds[0].gmux("cluster", "stop", blk)


def test_etcd_leader_killed(tmp):
    """kill -9 of etcd's own raft leader while gmux members run jobs: the
    two etcd members left keep the quorum, the gmux members go on through
    them, and every job accepted runs exactly once."""
    from clusterlib import Etcd, member
    e = Etcd(3).start()
    ds = []
    try:
        out = os.path.join(tmp, "ran")
        for n, f in (("a", "1xH100:80G"), ("b", "1xA10:24G")):
            ds.append(member(tmp, e, n, "u4", f))
            ds[-1].start(*VERBOSE, fake=f)
        wait_for(lambda: len(cluster_state(ds[1])) == 2 and leader(ds[1]),
                 20, 0.1, what="2 members and a leader")
        cmd = ("sh", "-c", "echo $GMUX_CLUSTER_JOB >> %s; sleep 0.5" % out)
        ids = [_id(submit(ds[i % 2], tmp, *cmd)) for i in range(4)]
        print("\nkilled etcd's leader, e%d" % e.kill_leader())
        for i in range(4):
            # a request that met the dead etcd member gets a 503 (it is
            # retried on the next URL the next time): it wrote nothing
            r = wait_for(lambda: (lambda r: r if r.returncode == 0 else
                                  None)(submit(ds[i % 2], tmp, *cmd)), 20,
                         0.1, what="a submission after the kill")
            ids.append(_id(r))
        for x in ids:
            _state(ds[0], x, "exited", 60)
        ran = open(out).read().split()
        assert sorted(ran) == sorted(ids), "a job lost or run twice"
    finally:
        try:
            for d in ds:
                if d.running is not None:
                    d.stop()
                _kill_keepers(d.home)
        finally:
            e.stop()    # also when a member died (its stop fails the test)


def test_gang_member_left(members, tmp):
    """A member that leaves (killed -9: its lease lapses) while it runs a
    part of a gang: past the lease and the grace the leader ends the gang
    failed with the reason, and its other part is stopped."""
    from conftest import free_port
    ds = {n: members(n, "u5", f, extra="ADDR=127.0.0.1:%d\n" % free_port())
          for n, f in (("a", "2xH100:80G"), ("b", "1xH100:80G"),
                       ("c", "1xH100:80G"))}
    wait_for(lambda: len(cluster_state(ds["a"])) == 3 and
             leader(ds["a"]) == "a", 30, 0.1, what="a leading 3 members")
    gid = _id(submit(ds["a"], tmp, "sleep", "120",
                     flags=("--share", "0.5", "--nodes", "2")))
    g = wait_for(lambda: (lambda g: g if [p["state"] for p in
                                          g.get("parts", [])] ==
                          ["running", "running"] else None)(
        _gang(ds["a"], gid)), 30, 0.1, what="the gang to run")
    gone = [p["member"] for p in g["parts"] if p["member"] != "a"][0]
    ds[gone].kill9()
    g = _gang(ds["a"], gid, "failed")
    assert g["reason"] == "member %s left" % gone
    assert g["exit_code"] == -1
    states = {p["member"]: p["state"] for p in g["parts"]}
    assert len(states) == 2 and states.pop(gone) == "failed"
    assert list(states.values()) == ["stopped"]


def test_gang_ports_differ_on_one_master(members, tmp):
    """Gangs whose rank 0 share a MASTER_ADDR (every member here serves
    127.0.0.1) never share a MASTER_PORT while they run."""
    from conftest import free_port
    ds = [members(n, "u6", "1xH100:80G",
                  extra="ADDR=127.0.0.1:%d\n" % free_port()) for n in "ab"]
    wait_for(lambda: len(cluster_state(ds[0])) == 2, 30, 0.1,
             what="2 members")
    gids = [_id(submit(ds[0], tmp, "sleep", "120",
                       flags=("--share", "0.25", "--nodes", "2")))
            for _ in range(3)]
    gs = [wait_for(lambda: (lambda g: g if len(g.get("parts", [])) == 2
                            else None)(_gang(ds[0], x)), 30, 0.1,
                   what="gang %s placed" % x) for x in gids]
    ports = [{p["gang"]["port"] for p in g["parts"]} for g in gs]
    assert all(len(p) == 1 for p in ports)
    assert len(set.union(*ports)) == 3, ports
    assert {p["gang"]["master"] for g in gs for p in g["parts"]} == \
        {"127.0.0.1"}
    for x in gids:
        ds[0].gmux("cluster", "stop", x, check=0)


def test_queue_says_what_each_waits_for(members, tmp):
    """gmux queue on a member (and --json's waits_for): no member has room
    (the nearest fit and what it lacks: cards, CPUs), a gang waiting for
    members with room; a job that fits behind them is placed."""
    a = members("a", "u7", "1xH100:80G")
    b = members("b", "u7", "1xA10:24G")
    wait_for(lambda: len(cluster_state(b)) == 2, 30, 0.1, what="2 members")
    ncpu = cluster_state(b)[0]["cpus"]
    held = [_id(submit(a, tmp, "sleep", "120",
                       flags=("--share", "1", "--server", n)))
            for n in "ab"]
    cpu = _id(submit(a, tmp, "sleep", "120", flags=(
        "--share", "0", "--cpus", str(ncpu), "--server", "a")))
    for x in held + [cpu]:
        _state(a, x, "running")
    card = _id(submit(a, tmp, "true", flags=("--share", "0.5")))
    gang = _id(submit(a, tmp, "true", flags=("--share", "0.5", "--nodes",
                                             "2")))
    cpus = _id(submit(a, tmp, "true", flags=("--share", "0", "--cpus", "1",
                                             "--server", "a")))
    typed = _id(submit(a, tmp, "true", flags=("--share", "0.5", "--gpus",
                                              "a10:1")))
    q = {x["id"]: x for x in json.loads(b.gmux("queue", "--json").stdout)}
    # the nearest is one that could ever hold it: b's A10, not a's H100
    assert q[typed]["waits_for"] == ("no member has room now; nearest: b, "
                                     "which lacks room on 1 card (0 have "
                                     "it)")
    assert q[card]["waits_for"] == ("no member has room now; nearest: a, "
                                    "which lacks room on 1 card (0 have it)")
    assert q[gang]["waits_for"] == ("a gang of 2 waits for 2 members with "
                                    "room for a part; 0 have")
    assert q[cpus]["waits_for"] == ("no member has room now; nearest: a, "
                                    "which lacks 1 CPUs (0 free)")
    text = b.gmux("queue").stdout.decode()
    assert "WAITS FOR" in text and "nearest: a" in text
    for x in held + [cpu, card, gang, cpus, typed]:
        a.gmux("cluster", "stop", x, check=0)


def test_stops_no_job_is_left_to_take_are_deleted(members, tmp, etcd):
    """The stops s/ of a gang whose member left for good (the part the
    leader ended is never ended by its member) are deleted by the leader
    once no job has held them for the keep (shortened here); they stayed
    in etcd for ever."""
    from conftest import free_port
    ds = {}
    for n, f in (("a", "2xH100:80G"), ("b", "1xH100:80G")):
        ds[n] = members(n, "u30", f, start=False,
                        extra="ADDR=127.0.0.1:%d\n" % free_port())
        ds[n].env["GMUX_TEST_STOP_KEEP_MS"] = "2000"
        ds[n].start(*VERBOSE, fake=f)
    wait_for(lambda: len(cluster_state(ds["a"])) == 2 and
             leader(ds["a"]) == "a", 30, 0.1, what="a leading 2 members")
    gid = _id(submit(ds["a"], tmp, "sleep", "120",
                     flags=("--share", "0.5", "--nodes", "2")))
    wait_for(lambda: (lambda g: g if [p["state"] for p in
                                      g.get("parts", [])] ==
                      ["running", "running"] else None)(
        _gang(ds["a"], gid)), 30, 0.1, what="the gang to run")
    ds["b"].kill9()
    g = _gang(ds["a"], gid, "failed")
    assert g["reason"] == "member b left"
    parts = {p["member"]: p["id"] for p in g["parts"]}
    # a's part ended by a, its stop gone with it; b's taken by no one
    wait_for(lambda: etcd.get_prefix("/gmux/u30/s/") == {}, 60, 0.2,
             what="no stop left in etcd")
    assert "stop of %s: no job left to take it; deleted" % parts["b"] in \
        open(os.path.join(ds["a"].home, "gmux.log")).read()


def _gang_port(gid):
    """The MASTER_PORT the leader tries first for gang gid (cs_port_pick:
    FNV-1a of its id, 29500 + h % 500)."""
    h = 2166136261
    for c in gid.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return 29500 + h % 500


def test_a_gang_whose_master_port_is_taken_gets_another(members, tmp,
                                                        etcd):
    """Another program holds the MASTER_PORT the leader would try first on
    rank 0's host: the members' records say it is held (sampled from
    /proc/net/tcp), so the leader gives the gang the next one, the same on
    every rank, and the gang runs (it failed, "MASTER_PORT N is in use")."""
    import socket
    from conftest import free_port
    ds = [members(n, "u31", "1xH100:80G",
                  extra="ADDR=127.0.0.1:%d\n" % free_port()) for n in "ab"]
    wait_for(lambda: len(cluster_state(ds[0])) == 2, 30, 0.1,
             what="2 members")
    # b's card held: the gang waits, so its port is known before it runs
    hold = _id(submit(ds[0], tmp, "sleep", "120",
                      flags=("--share", "1", "--server", "b")))
    _state(ds[0], hold, "running")
    out = os.path.join(tmp, "ports")
    gid = _id(submit(ds[0], tmp, "sh", "-c", "echo $RANK $MASTER_PORT >> "
                     + out, flags=("--share", "0.5", "--nodes", "2")))
    port = _gang_port(gid)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        s.listen()
    except OSError:
        pass            # another engineer's program holds it: held anyway

    def held():
        recs = etcd.get_prefix("/gmux/u31/m/")
        return len(recs) == 2 and all(
            port in json.loads(v).get("ports_held", [])
            for v in recs.values())
    try:
        wait_for(held, 30, 0.2, what="the members to publish %d" % port)
        ds[0].gmux("cluster", "stop", hold, check=0)
        g = _gang(ds[0], gid, "exited")
        assert g["exit_code"] == 0, g
        ports = {p["gang"]["port"] for p in g["parts"]}
        assert len(ports) == 1 and port not in ports, g["parts"]
        [got] = ports
        assert 29500 <= got <= 29999
        lines = sorted(open(out).read().split("\n")[:-1])
        assert lines == ["0 %d" % got, "1 %d" % got], lines
    finally:
        s.close()
    # the port let go: the records say so again
    wait_for(lambda: not any(port in json.loads(v).get("ports_held", [])
                             for v in etcd.get_prefix("/gmux/u31/m/")
                             .values()), 30, 0.2, what="%d let go" % port)
