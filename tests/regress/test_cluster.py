"""Clusters on etcd (docs/cluster.md): members against a real three-member
etcd, the most capable leads, jobs are placed, claimed and run exactly
once, the leader's kill -9 fails over, and the faults get clear errors
while local jobs keep being served."""

import contextlib
import glob
import json
import re
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import GMUX, _kill_keepers, wait_for
from clusterlib import (VERBOSE, cluster_state, jobs, leader, member,
                        members, submit, tmp)

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

ROUNDS = int(os.environ.get("GMUX_CLUSTER_ROUNDS", "10"))


def test_members_leader_and_a_job(members, tmp, etcd):
    a = members("a", "t1", "2xH100:80G")
    b = members("b", "t1", "1xA10:24G")
    wait_for(lambda: len(cluster_state(b)) == 2, 15, 0.1, what="2 members")
    m = {x["name"]: x for x in cluster_state(b)}
    assert len(m["a"]["cards"]) == 2 and m["b"]["cards"][0]["model"] == "A10"
    assert m["a"]["cpus"] >= 1 and m["a"]["ram"] > 0
    # the most capable (more GPU memory) leads
    assert wait_for(lambda: leader(b) == "a", 15, 0.1, what="a to lead")
    assert m["a"]["leader"] or leader(b) == "a"
    out = os.path.join(tmp, "out")
    r = submit(b, tmp, "sh", "-c", "echo $GMUX_CLUSTER_JOB >> %s" % out)
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    assert jid.startswith("b.") and len(jid) > 4
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") == "exited",
             20, 0.1, what="the job to end")
    j = jobs(a)[jid]
    assert j["exit_code"] == 0 and j["member"] in ("a", "b")
    assert open(out).read().split() == [jid]
    # the member that ran it has it as a local job, with its books
    runner = a if j["member"] == "a" else b
    local = [x for x in runner.json("ps", "-a", "--json")]
    assert any(x["state"] == "exited" for x in local)


def test_refused_at_submission(members, tmp):
    a = members("a", "t2", "1xH100:80G")
    wait_for(lambda: len(cluster_state(a)) == 1, 15, 0.1, what="member")
    r = submit(a, tmp, "true", flags=("--share", "1", "--cards", "4"))
    assert r.returncode != 0
    assert b"no member has 4 GPUs" in r.stderr
    r = submit(a, tmp, "true", flags=("--share", "0.5", "--mem", "90G"))
    assert b"no member has a card with that much memory" in r.stderr


def test_queue_order_and_listing(members, tmp):
    a = members("a", "t3", "1xH100:80G")
    wait_for(lambda: leader(a) == "a", 15, 0.1, what="a to lead")
    blocker = submit(a, tmp, "sleep", "30", flags=("--share", "1"))
    bid = blocker.stdout.decode().strip()
    wait_for(lambda: (jobs(a) or {}).get(bid, {}).get("state") == "running",
             15, 0.1, what="the blocker to run")
    low = submit(a, tmp, "true", flags=("--share", "1", "--priority", "1"))
    high = submit(a, tmp, "true", flags=("--share", "1", "--priority", "9"))
    q = json.loads(a.gmux("cluster", "queue", "--json", check=0).stdout)
    assert [x["id"] for x in q] == [high.stdout.decode().strip(),
                                    low.stdout.decode().strip()]
    assert [x["position"] for x in q] == [1, 2]
    text = a.gmux("cluster", "queue", check=0).stdout.decode()
    assert "POS" in text and high.stdout.decode().strip() in text
    # gmux queue on a member is the cluster's queue (cluster queue: alias)
    q2 = json.loads(a.gmux("queue", "--json", check=0).stdout)
    assert [x["id"] for x in q2] == [x["id"] for x in q]
    text = a.gmux("queue", check=0).stdout.decode()
    assert "POS" in text and high.stdout.decode().strip() in text


def test_name_taken_and_local_jobs_served(members, tmp):
    a = members("dup", "t4")
    wait_for(lambda: len(cluster_state(a)) == 1, 15, 0.1, what="member")
    b = members("dup", "t4", dirname="dup2")
    st = wait_for(lambda: (lambda o: o if o.get("error") else None)(
        _status(b)), 15, 0.1, what="the name to be taken")
    assert "member name dup is taken" in st["error"]
    assert not st["member"]
    r = b.gmux("run", "--", "echo", "local", check=0)
    assert b"local" in r.stdout
    # the second stays out: it submits nothing (its ids would be the
    # first's) and answers no listing, saying why (it queued and read)
    for args in (("cluster", "submit", "--", "true"),
                 ("run", "--server", "dup", "--", "true"),
                 ("cluster", "ls"), ("cluster", "ps")):
        r = b.gmux(*args)
        assert r.returncode != 0, (args, r)
        assert b"member name dup is taken" in r.stderr and \
            b"stays out of cluster t4" in r.stderr, (args, r.stderr)
    assert jobs(a) == {}
    # a restarted at once takes its own record over (its home's origin):
    # a member again before its old lease lapses (it waited the lease and
    # 5 s, its name "taken" meanwhile), and b is still out
    a.stop()
    t0 = time.monotonic()
    a.start(*VERBOSE, fake=a.fake)
    st = wait_for(lambda: (lambda o: o if o.get("member") else None)(
        _status(a)), 15, 0.05, what="a to be a member again")
    assert time.monotonic() - t0 < 2.5 and st["error"] is None, st
    assert "member name dup is taken" in _status(b)["error"]


def _status(d):
    code, text = d.curl("GET", "/v1/cluster")
    assert code == 200
    return json.loads(text)


def test_etcd_unreachable_at_start(tmp):
    d = member(tmp, None, "lonely", "t5")
    d.start()
    try:
        st = wait_for(lambda: (lambda o: o if o.get("error") else None)(
            _status(d)), 15, 0.1, what="an error")
        assert "unreachable" in st["error"]
        r = d.gmux("run", "--", "echo", "still", check=0)
        assert b"still" in r.stdout
        r = d.gmux("cluster", "ls")
        assert r.returncode == 1 and b"unreachable" in r.stderr
        # gmux ps shows the host's jobs and says the cluster's are not
        # to be had now (it left them out silently)
        r = d.gmux("ps", "-a")
        assert r.returncode == 0 and b"still" in r.stdout, r
        assert r.stderr.startswith(b"gmux ps: the cluster's jobs: ") and \
            b"unreachable" in r.stderr, r.stderr
    finally:
        d.stop()
        _kill_keepers(d.home)


def test_bad_settings_are_said_before_an_invite(tmp):
    """A member's bad setting (ETCD not http://HOST:PORT, CLUSTER_ID,
    NAME, CLUSTER_MODE) fails gmux serve --addr naming it, before anything
    is served or an invite printed (it said "serving ... over TLS" and the
    invite, then failed)."""
    from conftest import free_port
    for i, (extra, want) in enumerate((
            ("ETCD=https://127.0.0.1:1\n", "ETCD: https://127.0.0.1:1: "
             "only http:// URLs are supported"),
            ("ETCD=127.0.0.1:1\n", "ETCD: 127.0.0.1:1: only http://"),
            ("CLUSTER_ID=a/b\n", "CLUSTER_ID: not 1-64 of [A-Za-z0-9_-]"),
            ("NAME=no.dots\n", "NAME: 'no.dots' is not 1-63"),
            ("CLUSTER_MODE=leader\n", "CLUSTER_MODE: 'leader' is not "
             "member or standalone"))):
        d = member(tmp, None, "bad%d" % i, "t41", extra=extra)
        r = subprocess.run([GMUX, "serve", "-d", "--fake", "1xH100:80G",
                            "--addr", "127.0.0.1:%d" % free_port()],
                           env=d.env, capture_output=True, timeout=30)
        assert r.returncode != 0, (extra, r)
        assert want in r.stderr.decode(), (extra, r.stderr)
        assert b"gmux remote add" not in r.stdout, (extra, r.stdout)
        assert not os.path.exists(d.socket), extra


def test_corrupt_keys_are_skipped(members, tmp, etcd):
    etcd.put("/gmux/t6/m/bogus", "not json")
    etcd.put("/gmux/t6/q/bad.1", "{\"req\": 3}")
    a = members("a", "t6")
    wait_for(lambda: leader(a) == "a", 15, 0.1, what="a to lead")
    assert [m["name"] for m in cluster_state(a)] == ["a"]
    r = submit(a, tmp, "true")
    jid = r.stdout.decode().strip()
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") == "exited",
             20, 0.1, what="the job to end despite corrupt keys")


def test_a_member_that_left_is_listed_with_when_it_was_last_seen(
        members, etcd):
    """gmux cluster ls -a: a member that stopped (its lease lapsed) is
    listed gone, with when the leader last saw it (nothing said where it
    went before); plain ls and its --json list only live members; back,
    it is live again and g/NAME is gone; a corrupt g/ key is skipped."""
    etcd.put("/gmux/t40/g/x", "not json")
    a, b = members("a", "t40", "2xH100:80G"), members("b", "t40")
    wait_for(lambda: len(cluster_state(a)) == 2 and leader(a) == "a", 15,
             0.1, what="2 members, a leading")
    left = time.time() * 1000
    b.stop()
    _kill_keepers(b.home)

    def gone():
        r = a.gmux("cluster", "ls", "-a", "--json", check=0)
        return r.returncode == 0 and {m["name"]: m for m in json.loads(
            r.stdout) if m.get("gone")}
    g = wait_for(gone, 20, 0.1, what="b listed gone")
    assert list(g) == ["b"], g
    assert left - 1000 < g["b"]["last_seen"] <= time.time() * 1000, g
    assert g["b"]["cards"][0]["model"] == "H100" and "use" not in g["b"]
    assert [m["name"] for m in cluster_state(a)] == ["a"]
    out = a.gmux("cluster", "ls", "-a").stdout.decode().splitlines()
    row = [x.split() for x in out if x.startswith("b ")][0]
    assert row[-1] == "ago" and row[4:6] == ["-", "-"], out
    assert [x.split()[-2] for x in out if x.startswith("a ")] == ["now"]
    b.start(*VERBOSE, fake=b.fake)
    wait_for(lambda: not gone() and len(cluster_state(a)) == 2, 20, 0.1,
             what="b live again")
    assert list(etcd.get_prefix("/gmux/t40/g/")) == ["/gmux/t40/g/x"]
    assert [m["name"] for m in json.loads(a.gmux(
        "cluster", "ls", "-a", "--json").stdout)] == ["a", "b"]


def test_not_a_member(daemon):
    daemon.start()
    code, text = daemon.curl("GET", "/v1/cluster")
    assert code == 200 and json.loads(text)["mode"] == "standalone"
    r = daemon.gmux("cluster", "ls")
    assert r.returncode == 1 and b"not a cluster member" in r.stderr
    r = daemon.gmux("cluster", "queue", "extra")
    assert r.returncode == 2


def test_kill9_leader_failover(members, tmp, etcd):
    """kill -9 the leader while jobs are submitted and finishing, ROUNDS
    times; every job runs exactly once; failover times printed."""
    specs = [("a", "2xH100:80G"), ("b", "1xH100:80G"), ("c", "1xA10:24G")]
    ds = {n: members(n, "t7", f) for n, f in specs}
    wait_for(lambda: len(cluster_state(ds["c"])) == 3, 20, 0.1,
             what="3 members")
    out = os.path.join(tmp, "ran")
    submitted, times = [], []
    for rnd in range(ROUNDS):
        lead = wait_for(lambda: _live_leader(ds), 30, 0.05,
                        what="a leader (round %d)" % rnd)
        others = [d for n, d in ds.items() if n != lead]
        for i in range(3):
            r = submit(others[i % 2], tmp, "sh", "-c",
                       "echo $GMUX_CLUSTER_JOB >> %s; sleep 0.3" % out)
            assert r.returncode == 0, r.stderr
            submitted.append(r.stdout.decode().strip())
        t0 = time.monotonic()
        ds[lead].kill9()
        new = wait_for(lambda: (lambda x: x if x not in (None, lead)
                                else None)(leader(others[0])), 30, 0.02,
                       what="a new leader (round %d)" % rnd)
        times.append(time.monotonic() - t0)
        r = submit(others[0], tmp, "sh", "-c",
                   "echo $GMUX_CLUSTER_JOB >> %s" % out)
        submitted.append(r.stdout.decode().strip())
        ds[lead].start(*VERBOSE, fake=ds[lead].fake)    # back, and rejoins
        assert new != lead
    print("\nfailover after kill -9 of the leader, %d rounds: median %.2f s,"
          " max %.2f s" % (len(times), sorted(times)[len(times) // 2],
                           max(times)))

    def all_ended():
        j = jobs(ds["c"]) or {}
        return all(j.get(x, {}).get("state") == "exited" for x in submitted)
    try:
        wait_for(all_ended, 60 + ROUNDS, 0.5, what="every job to end")
    except AssertionError:
        j = jobs(ds["c"]) or {}
        print("not ended:", [(x, j.get(x)) for x in submitted
                             if j.get(x, {}).get("state") != "exited"])
        raise
    ran = open(out).read().split()
    lost = len(set(submitted) - set(ran))
    twice = len(ran) - len(set(ran))
    print("%d jobs submitted around the kills: %d lost, %d run twice"
          % (len(submitted), lost, twice))
    assert sorted(ran) == sorted(submitted), "a job lost or run twice"
    assert max(times) <= 6.0


def _live_leader(ds):
    for d in ds.values():
        if d.running is None:
            continue
        n = leader(d)
        if n is not None and ds[n].running is not None:
            return n
    return None


class _Urls:
    def __init__(self, urls):
        self.urls = urls


def test_cut_off_member_stops_requeue_jobs_first(tmp, etcd):
    """A member cut off from etcd past its lease stops its --requeue job
    before the leader places it again (never two copies); its other job
    keeps running and is reconciled when it is back."""
    with _b_behind_a_cut(tmp, etcd, "t8", "2xH100:80G") as (a, b, cut):
        wait_for(lambda: len(cluster_state(a)) == 2 and leader(a) == "a",
                 20, 0.1, what="a leading 2 members")
        _cut_off_and_back(a, tmp, cut.set_cut, "")


@contextlib.contextmanager
def _b_behind_a_cut(tmp, etcd, cid, a_fake):
    """Members a (a_fake) on etcd and b (1xH100:80G) through a Cut relay in
    front of it, started; (a, b, the cut); stopped, keepers and all."""
    from clusterlib import Cut
    cut = Cut(etcd.clients[0])
    a = member(tmp, etcd, "a", cid, a_fake)
    b = member(tmp, _Urls(cut.url), "b", cid, "1xH100:80G")
    try:
        a.start(fake=a_fake)
        b.start(fake="1xH100:80G")
        yield a, b, cut
    finally:
        cut.close()
        for d in (a, b):
            if d.running is not None:
                d.stop()
            _kill_keepers(d.home)


def test_cut_off_by_a_network_namespace(tmp):
    """The cut-off of a partition, not a relay's: member b in a network
    namespace of its own, etcd and member a in another, a veth pair between
    them; b's end of the link goes down.  b stops its --requeue job before
    the leader requeues it, its other job keeps running and is reconciled
    when the link is back, and nothing runs twice."""
    with _across_a_veth(tmp, "n1") as (a, ns):
        _cut_off_and_back(a, tmp, ns.set_cut, " (veth down)")


@contextlib.contextmanager
def _across_a_veth(tmp, cid):
    """Members a (with etcd) and b in two network namespaces of the
    test's own, a leading both; skipped, saying why, where none can be
    made."""
    from clusterlib import Netns, etcd_in, start_in
    why = Netns.usable()
    if why is not None:
        pytest.skip(why)
    ns = Netns().start()
    a = member(tmp, _Urls("http://127.0.0.1:2379"), "a", cid, "2xH100:80G")
    b = member(tmp, _Urls("http://%s1:2379" % Netns.NET), "b", cid,
               "1xH100:80G")
    e = etcd_in(ns, tmp)
    try:
        start_in(a, ns.e, "2xH100:80G")
        start_in(b, ns.b, "1xH100:80G")
        wait_for(lambda: len(cluster_state(a)) == 2 and leader(a) == "a",
                 60, 0.1, what="a leading 2 members across the veth")
        yield a, ns
    finally:
        for d in (a, b):
            if d.running is not None:
                d.stop()
            _kill_keepers(d.home)
        e.kill()
        e.wait()
        ns.stop()


def test_gang_requeued_when_its_member_is_cut_off(tmp):
    """A --requeue gang with a part on a member cut off (its link down):
    that member stops its part, the leader (past the lease and the grace)
    stops the other and queues the gang's next attempt, placed once the
    old parts are gone and two members are live again; every part of each
    attempt runs once, the second attempt after the first has stopped."""
    out = os.path.join(tmp, "ran")
    script = ("echo start $GMUX_CLUSTER_JOB $(date +%%s.%%N) >> %s; case "
              "$GMUX_CLUSTER_JOB in *.1) exit 0;; esac; trap 'echo stopped "
              "$GMUX_CLUSTER_JOB $(date +%%s.%%N) >> %s; exit 143' TERM; "
              "sleep 60 & wait" % (out, out))
    with _across_a_veth(tmp, "n2") as (a, ns):
        r = submit(a, tmp, "sh", "-c", script, flags=(
            "--share", "0.5", "--nodes", "2", "--requeue", "--grace", "1s"))
        gid = r.stdout.decode().strip()
        wait_for(lambda: open(out).read().count("start") == 2 if
                 os.path.exists(out) else False, 30, 0.1,
                 what="both parts to start")
        ns.set_cut(True)
        wait_for(lambda: open(out).read().count("stopped") == 2, 30, 0.1,
                 what="both parts of the first attempt to stop")
        wait_for(lambda: (jobs(a) or {}).get(gid, {}).get("state") ==
                 "queued", 30, 0.1, what="the gang to be queued again")
        ns.set_cut(False)
        g = _gang_state(a, gid, "exited")
        assert sorted(p["id"] for p in g["parts"]) == [gid + "-0.1",
                                                       gid + "-1.1"]
        rows = [x.split() for x in open(out).read().splitlines()]
        starts = sorted(x[1] for x in rows if x[0] == "start")
        assert starts == sorted([gid + "-0", gid + "-1", gid + "-0.1",
                                 gid + "-1.1"]), rows
        stopped = [float(x[2]) for x in rows if x[0] == "stopped"]
        again = [float(x[2]) for x in rows if x[1].endswith(".1")]
        assert len(stopped) == 2 and min(again) > max(stopped), rows


def _gang_state(d, gid, state):
    def get():
        code, text = d.curl("GET", "/v1/cluster/jobs/%s" % gid)
        o = json.loads(text) if code == 200 else {}
        return o if o.get("state") == state else None
    return wait_for(get, 60, 0.1, what="gang %s %s" % (gid, state))


def _cut_off_and_back(a, tmp, set_cut, how):
    """b cut off (set_cut) while it runs j and k: it stops j before the
    leader requeues it; back, j runs again once, k is reconciled."""
    log, kf = os.path.join(tmp, "log"), os.path.join(tmp, "k")
    jid, kid = _cut_off_jobs(a, tmp, log, kf)
    set_cut(True)
    t0 = time.monotonic()
    wait_for(lambda: "stopped" in open(log).read(), 30, 0.05,
             what="b to stop its --requeue job")
    stopped_after = time.monotonic() - t0
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
             "queued", 30, 0.1, what="the leader to requeue j")
    requeued_after = time.monotonic() - t0
    print("\ncut off%s: b stopped its --requeue job after %.2f s, the "
          "leader requeued it after %.2f s" % (how, stopped_after,
                                               requeued_after))
    assert stopped_after < requeued_after
    set_cut(False)
    _cut_off_healed(a, jid, kid, log, kf)


def _cut_off_jobs(a, tmp, log, kf):
    """A blocker on a; on b, j (--requeue, logs its runs) and k (not)."""
    blocker = submit(a, tmp, "sleep", "120",
                     flags=("--share", "1", "--cards", "2"))
    bid = blocker.stdout.decode().strip()
    wait_for(lambda: (jobs(a) or {}).get(bid, {}).get("member") == "a"
             and jobs(a)[bid]["state"] == "running", 30, 0.1,
             what="the blocker on a")
    script = ("if [ -e %s/j1 ]; then echo second $(date +%%s.%%N) >> %s;"
              " exit 0; fi; touch %s/j1; echo first $(date +%%s.%%N) >> "
              "%s; trap 'echo stopped $(date +%%s.%%N) >> %s; exit 143' "
              "TERM; sleep 60 & wait" % (tmp, log, tmp, log, log))
    j = submit(a, tmp, "sh", "-c", script,
               flags=("--share", "0.5", "--requeue", "--grace", "1s"))
    k = submit(a, tmp, "sh", "-c", "sleep 9; echo k >> %s" % kf,
               flags=("--share", "0.5"))
    jid, kid = j.stdout.decode().strip(), k.stdout.decode().strip()
    wait_for(lambda: all((jobs(a) or {}).get(x, {}).get("state") ==
                         "running" for x in (jid, kid)), 30, 0.1,
             what="both jobs running on b")
    assert jobs(a)[jid]["member"] == "b"
    wait_for(lambda: os.path.exists(log), 20, 0.05, what="j to start")
    return jid, kid


def _cut_off_healed(a, jid, kid, log, kf):
    """Healed: j runs again once and ends, k (run once) is reconciled."""
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
             "exited", 60, 0.1, what="j to run again and end")
    wait_for(lambda: (jobs(a) or {}).get(kid, {}).get("state") ==
             "exited", 60, 0.1, what="k to be reconciled")
    lines = open(log).read().split("\n")
    kinds = [x.split()[0] for x in lines if x]
    assert kinds == ["first", "stopped", "second"], kinds
    times = [float(x.split()[1]) for x in lines if x]
    assert times[1] < times[2]
    assert open(kf).read() == "k\n"      # k ran once, through the cut


def test_stop_from_any_member(members, tmp):
    a = members("a", "t9", "1xH100:80G")
    b = members("b", "t9", "1xA10:24G")
    wait_for(lambda: len(cluster_state(b)) == 2, 15, 0.1, what="2 members")
    # 60G fits only a's card: it runs there, and is stopped from b
    r = submit(b, tmp, "sleep", "60", flags=("--share", "0.5", "--mem",
                                             "60G"))
    jid = r.stdout.decode().strip()
    wait_for(lambda: (jobs(b) or {}).get(jid, {}).get("state") == "running",
             20, 0.1, what="the job to run")
    assert jobs(b)[jid]["member"] == "a"
    r = b.gmux("cluster", "stop", jid, check=0)
    assert r.stdout.decode().strip() == "%s: stopping" % jid
    wait_for(lambda: (jobs(b) or {}).get(jid, {}).get("state") == "stopped",
             20, 0.1, what="the job to stop")
    # a queued one ends at once (nothing fits: a's card is taken)
    r1 = submit(b, tmp, "sleep", "60", flags=("--share", "1", "--mem", "70G"))
    r2 = submit(b, tmp, "true", flags=("--share", "1", "--mem", "70G"))
    wid = r2.stdout.decode().strip()
    first = r1.stdout.decode().strip()
    wait_for(lambda: (jobs(b) or {}).get(first, {}).get("state") ==
             "running", 20, 0.1, what="the first to run")
    assert jobs(b)[wid]["state"] == "queued"
    r = b.gmux("cluster", "stop", wid, check=0)
    assert r.stdout.decode().strip() == "%s: stopped" % wid
    assert jobs(b)[wid]["state"] == "stopped"
    r = b.gmux("cluster", "stop", wid)
    assert r.returncode == 1 and b"has ended" in r.stderr
    r = b.gmux("cluster", "stop", "nope.1")
    assert r.returncode == 1 and b"no cluster job nope.1" in r.stderr
    b.gmux("cluster", "stop", first, check=0)


def test_gmux_stop_through_a_member_waits_for_the_end(members, tmp):
    """gmux stop of a job placed on another member waits, as a local stop
    does, until the job has ended there (it returned once asked); with
    --no-wait it says the stop was asked."""
    a = members("a", "t30", "1xH100:80G")
    b = members("b", "t30", "1xA10:24G")
    wait_for(lambda: len(cluster_state(b)) == 2, 30, 0.1, what="2 members")
    # the job takes its time to end: it runs 1 s more after SIGTERM
    slow = ("trap 'sleep 1; exit 0' TERM; touch up.$GMUX_JOB_ID; "
            "while :; do sleep 0.1; done")
    ids = []
    for _ in range(2):
        r = submit(b, tmp, "sh", "-c", slow, flags=("--share", "0.5",
                                                    "--server", "a"))
        assert r.returncode == 0, r.stderr
        ids.append(r.stdout.decode().strip())
    wait_for(lambda: len(glob.glob(os.path.join(str(tmp), "up.*"))) == 2,
             30, 0.1, what="both to run, their trap set")
    r = b.gmux("stop", ids[0], check=0)
    assert r.stdout.decode() == ids[0] + "\n"
    assert jobs(b)[ids[0]]["state"] not in ("queued", "assigned",
                                           "running"), jobs(b)[ids[0]]
    r = b.gmux("stop", "--no-wait", ids[1], check=0)
    assert r.stdout.decode() == "%s: stop asked\n" % ids[1]
    wait_for(lambda: (jobs(b) or {}).get(ids[1], {}).get("state") ==
             "stopped", 30, 0.1, what="the second to stop")


def test_clock_off_by_minutes_is_said(members, tmp, etcd):
    d = member(tmp, etcd, "late", "t10")
    d.env["GMUX_TEST_CLOCK"] = str(int(time.time() * 1000) - 10 * 60 * 1000)
    d.env["GMUX_TEST_CLOCK_OK"] = "1"
    d.start()
    try:
        # the warning comes with etcd's first answer, the membership after
        st = wait_for(lambda: (lambda o: o if o.get("warning") and
                               o.get("member") else None)(_status(d)), 15,
                      0.1, what="a warning, and a member")
        assert re.search(r"clock is (599|600|601) s behind etcd.s",
                         st["warning"])
        assert st["member"]             # a warning, not an error
    finally:
        d.stop()
        _kill_keepers(d.home)


def test_idle_member_rewrites_little(members, etcd):
    """Keepalives are not writes; a record is rewritten only when its
    coarse use changed, at most every 5 s."""
    from clusterlib import mod_revision
    a = members("a", "t11")
    wait_for(lambda: mod_revision(etcd, "/gmux/t11/m/a"), 15, 0.1,
             what="the record")
    revs = set()
    end = time.monotonic() + 11
    while time.monotonic() < end:
        revs.add(mod_revision(etcd, "/gmux/t11/m/a"))
        time.sleep(0.2)
    # 11 s idle: at most 2 rewrites (5 s apart), whatever the machine's load
    assert len(revs) <= 3, revs
    st = _status(a)
    assert st["member"] and st["writes"] <= 4     # record, leader, rewrites


def test_job_record_and_logs(members, tmp):
    a = members("a", "t12", "1xH100:80G")
    b = members("b", "t12", "1xA10:24G")
    wait_for(lambda: len(cluster_state(b)) == 2, 15, 0.1, what="2 members")
    # 60G fits only a's card
    r = submit(b, tmp, "sh", "-c", "echo out-$GMUX_CLUSTER_JOB",
               flags=("--share", "0.5", "--mem", "60G"))
    jid = r.stdout.decode().strip()
    wait_for(lambda: (jobs(b) or {}).get(jid, {}).get("state") == "exited",
             20, 0.1, what="the job to end")
    code, text = b.curl("GET", "/v1/cluster/jobs/%s" % jid)
    assert code == 200 and json.loads(text)["member"] == "a"
    assert "local" not in json.loads(text)       # b cannot know it
    code, text = a.curl("GET", "/v1/cluster/jobs/%s" % jid)
    rec = json.loads(text)                        # a, which ran it, does
    assert code == 200 and rec["local"].startswith("j")
    code, text = b.curl("GET", "/v1/cluster/jobs/nope.1")
    assert code == 404 and "no cluster job nope.1" in text
    # its member shows its output; the other would ask it, but these
    # members serve no TLS (test_cluster_peer.py: members that do)
    r = a.gmux("cluster", "logs", jid, check=0)
    assert r.stdout.decode() == "out-%s\n" % jid
    r = b.gmux("cluster", "logs", jid)
    assert r.returncode == 1
    assert b"serves no TLS (ADDR)" in r.stderr, r.stderr
    # the local job is the one the record names
    assert a.job(rec["local"])["state"] == "exited"


def test_member_killed_while_its_job_runs(members, tmp):
    """kill -9 of a member's daemon: its job runs on under its keeper and
    ends meanwhile; the daemon back finds it and writes its end."""
    a = members("a", "t13", "1xH100:80G")
    b = members("b", "t13", "1xA10:24G")
    wait_for(lambda: len(cluster_state(a)) == 2, 15, 0.1, what="2 members")
    out = os.path.join(tmp, "out")
    r = submit(a, tmp, "sh", "-c", "sleep 2; echo done >> %s" % out,
               flags=("--share", "1", "--mem", "20G"))
    jid = r.stdout.decode().strip()
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") == "running",
             20, 0.1, what="the job to run")
    runner = a if jobs(a)[jid]["member"] == "a" else b
    other = b if runner is a else a
    runner.kill9()
    wait_for(lambda: os.path.exists(out), 10, 0.1, what="the job to end")
    time.sleep(0.5)
    runner.start(fake=runner.fake)
    j = wait_for(lambda: (lambda x: x if x.get("state") not in
                          (None, "running") else None)(
        (jobs(other) or {}).get(jid, {})), 30, 0.2, what="its end")
    assert j["state"] == "exited" and j["exit_code"] == 0, j
    assert open(out).read() == "done\n"


def test_the_dashboard_lists_the_members(members, tmp):
    # The dashboard's cluster section (docs/ui.md) is fed by the cluster:
    # /v1/session and the live state carry the members and the leader.
    a = members("a", "t-ui", "2xH100:80G", start=False)
    a.start("--ui", fake="2xH100:80G")
    b = members("b", "t-ui", "1xA10:24G")
    wait_for(lambda: leader(a) == "a", 15, 0.1, what="a to lead")

    def session():
        code, text = a.curl("GET", "/v1/session")
        assert code == 200, text
        return json.loads(text)["cluster"]

    def session_members():
        c = session()
        assert c["id"] == "t-ui"
        return c if len(c["members"]) == 2 and c["leader"] else None
    c = wait_for(session_members, 15, 0.2, what="two members on the page")
    assert c["leader"] == "a"
    m = {x["name"]: x for x in c["members"]}
    assert m["a"]["cards"] == 2 and m["b"]["cards"] == 1
    assert m["a"]["state"] == "up" and "addr" in m["a"]
    # a member that goes leaves the page
    b.stop()
    wait_for(lambda: [x["name"] for x in session()["members"]] == ["a"],
             20, 0.2, what="b to leave the page")


def test_another_daemon_of_the_name_never_runs_its_claims_again(members,
                                                                 tmp, etcd):
    """b's daemon killed (its keeper runs its job on); another daemon
    (another home) configured with NAME=b joins once b's lease lapses: it
    leaves b's claim alone (it moved it back to the queue, and the job ran
    twice); b back (its home) takes the job over and ends it, once."""
    a = members("a", "t42", "1xH100:80G")
    b = members("b", "t42", "1xA10:24G")
    wait_for(lambda: len(cluster_state(a)) == 2, 15, 0.1, what="2 members")
    out = os.path.join(tmp, "ran")
    gate = os.path.join(tmp, "gate")
    r = submit(a, tmp, "sh", "-c", "echo run >> %s; while [ ! -e %s ]; do "
               "sleep 0.1; done" % (out, gate),
               flags=("--share", "0.5", "--server", "b"))
    jid = r.stdout.decode().strip()
    wait_for(lambda: os.path.exists(out), 20, 0.1, what="the job to run")
    b.kill9()
    c = members("b", "t42", "1xA10:24G", dirname="b-other")
    wait_for(lambda: _status(c).get("member"), 30, 0.1,
             what="the other daemon to join as b")
    time.sleep(2)               # its first passes over r/b/
    assert etcd.get_prefix("/gmux/t42/q/%s" % jid) == {}
    assert [k for k in etcd.get_prefix("/gmux/t42/r/b/")] == \
        ["/gmux/t42/r/b/%s" % jid]
    with open(os.path.join(c.home, "gmux.log")) as f:
        assert "%s was claimed by another daemon named b" % jid in f.read()
    assert c.json("ps", "-a", "--json") == []
    c.stop()
    b.start(*VERBOSE, fake=b.fake)
    open(gate, "w").close()
    j = wait_for(lambda: (lambda x: x if x.get("state") == "exited" else
                          None)((jobs(a) or {}).get(jid, {})), 30, 0.2,
                 what="its end")
    assert j["member"] == "b" and j["exit_code"] == 0, j
    assert open(out).read() == "run\n"      # once


def test_a_gang_part_ended_while_its_member_was_away_is_stopped_there(
        members, tmp, etcd):
    """A gang's part on b when b's daemon is killed: the leader ends the
    gang (member b left) and puts the parts' stops; b back finds its part
    still running under its keeper and stops it (it ran on, holding b's
    card, while the cluster counted it free)."""
    a = members("a", "t43", "1xH100:80G")
    b = members("b", "t43", "1xH100:40G")
    wait_for(lambda: len(cluster_state(a)) == 2 and leader(a) == "a", 15,
             0.1, what="2 members, a leading")
    r = submit(a, tmp, "sleep", "300", flags=("--share", "0.5", "--nodes",
                                              "2"))
    gid = r.stdout.decode().strip()
    wait_for(lambda: [x for x in b.json("ps", "--json")
                      if x["state"] == "running"], 30, 0.1,
             what="b's part to run")
    b.kill9()
    wait_for(lambda: a.json("status", "--json", gid)["state"] != "running",
             30, 0.2, what="the gang to end")
    b.start(*VERBOSE, fake=b.fake)
    wait_for(lambda: [x for x in b.json("ps", "-a", "--json")
                      if x["state"] == "stopped"], 30, 0.1,
             what="b's part stopped")
    assert [x for x in b.json("ps", "--json") if x["state"] == "running"] \
        == []


def test_gmux_run_rides_out_its_members_etcd_outage(tmp, etcd):
    """gmux run of a queued cluster job on b, whose etcd goes away for
    7 s (b's cluster routes answer 503): it says so and asks again, then
    follows the job to its exit code (it exited 125 at the first 503, the
    job running on with no one to follow or stop it)."""
    with _b_behind_a_cut(tmp, etcd, "t44", "1xH100:80G") as (a, b, cut):
        wait_for(lambda: len(cluster_state(a)) == 2, 20, 0.1,
                 what="2 members")
        blk = submit(b, tmp, "sleep", "120", flags=(
            "--share", "1", "--server", "b")).stdout.decode().strip()
        wait_for(lambda: (jobs(a) or {}).get(blk, {}).get("state") ==
                 "running", 30, 0.1, what="b's card taken")
        p = b.popen("run", "--server", "b", "--share", "1", "--", "sh",
                    "-c", "exit 6", cwd=tmp, stdout=-1, stderr=-1)
        wait_for(lambda: [j for j, o in (jobs(a) or {}).items()
                          if o.get("state") == "queued"], 30, 0.1,
                 what="the run queued")
        cut.set_cut(True)
        time.sleep(7)
        cut.set_cut(False)
        assert p.poll() is None, p.communicate()
        wait_for(lambda: len(cluster_state(a)) == 2, 30, 0.1,
                 what="b back")
        a.gmux("cluster", "stop", blk)
        out, err = p.communicate(timeout=90)
        assert p.returncode == 6, err
        assert b"asking again" in err, err
