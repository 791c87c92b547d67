"""The scheduler through the daemon and the real CLI, on fake cards: the
queue (positions, reasons, --no-wait, --timeout, refusals), priorities and
aging, preemption with and without --requeue, burst ceilings, several
cards, resize, explain, the queue across restarts, Ctrl-C of a queued run,
and what the books record of it all (docs/scheduling.md)."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import T0, wait_for

MIN = 60 * 1000
HOUR = 60 * MIN
G = 1 << 30


class Gate:
    """A job that runs until the test opens its gate (a file)."""

    def __init__(self, tmp_path, name="gate"):
        self.path = str(tmp_path / name)

    def cmd(self):
        return ["sh", "-c", "while [ ! -e %s ]; do sleep 0.02; done" %
                self.path]

    def open(self):
        open(self.path, "w").close()


def run_d(d, *args):
    """gmux run -d ARGS; returns the job's id."""
    r = d.gmux("run", "-d", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip()


def jobs(d):
    return {j["id"]: j for j in d.json("ps", "-a", "--json")}


def queue(d):
    """The queued jobs' ids in queue order, from ps --json's positions."""
    q = [j for j in d.json("ps", "--json") if j["state"] == "queued"]
    return [j["id"] for j in sorted(q, key=lambda j: j["position"])]


def recorder(order, name):
    """A whole-card job that appends its name to the file order."""
    return ["--share", "1", "--", "sh", "-c", "echo %s >> %s" %
            (name, order)]


def log(d, jid):
    """The job's output so far ("" while there is no such job yet)."""
    return d.gmux("logs", jid).stdout.decode()


def usage(d, by="job"):
    r = d.gmux("usage", "--since", "2026-11-01", "--until", "2026-11-02",
               "--by", by, "--json", check=0)
    return {r[by]: r for r in json.loads(r.stdout)["rows"]}


def ledger_rows(d, job):
    """The closed intervals of job number `job`: (card, seats, ceiling, mem,
    start_ms, end_ms), oldest first."""
    db = sqlite3.connect(os.path.join(d.home, "state.db"))
    try:
        return db.execute("SELECT card, seats, ceiling, mem, start_ms, end_ms"
                          " FROM ledger WHERE job = ? ORDER BY start_ms, "
                          "card", (job,)).fetchall()
    finally:
        db.close()


# -- the queue


def test_attached_run_waits_then_streams_and_exits_with_its_code(daemon,
                                                                 tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    run_d(daemon, "--share", "0.75", "--", *gate.cmd())
    p = daemon.popen("run", "--share", "0.5", "--", "sh", "-c",
                     "echo out; echo err >&2; exit 7",
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        daemon.wait_state("j2", "queued")
        # said while it waits, before anything runs
        first = p.stderr.readline().decode()
        assert first == ("gmux: j2 queued at position 1, waiting for 0.5 of "
                         "a card (first in the queue; card 0 kept for it)\n")
        time.sleep(0.2)
        assert p.poll() is None and daemon.job("j2")["state"] == "queued"
        gate.open()
        out, err = p.communicate(timeout=15)
    finally:
        p.kill()
    assert p.returncode == 7
    assert out == b"out\n"
    assert err == b"gmux: j2 started\nerr\n"
    j = daemon.job("j2")
    assert j["state"] == "exited" and j["exit_code"] == 7
    assert j["reason"] is None and j["position"] is None


def test_ps_shows_positions_and_reasons_as_they_are_now(daemon, tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    run_d(daemon, "--share", "0.75", "--", *gate.cmd())
    run_d(daemon, "--share", "0.5", "--", "true")                   # j2
    run_d(daemon, "--share", "0.5", "--", "true")                   # j3
    # a higher priority arrival goes first: everyone behind moves down
    run_d(daemon, "--share", "0.5", "--priority", "7", "--", "true")  # j4
    q = {j["id"]: j for j in daemon.json("ps", "--json")}
    assert [(q[i]["position"], q[i]["reason"]) for i in ("j4", "j2", "j3")] \
        == [(1, "waiting for 0.5 of a card (first in the queue; card 0 kept "
             "for it)"),
            (2, "waiting for 0.5 of a card"),
            (3, "waiting for 0.5 of a card")]
    assert q["j1"]["position"] is None and q["j1"]["reason"] is None
    table = daemon.gmux("ps", check=0).stdout.decode().splitlines()
    states = {l.split()[0]: l.split()[5:7] for l in table[1:5]}
    assert states == {"j1": ["running", "0s"], "j4": ["queued", "#1"],
                      "j2": ["queued", "#2"], "j3": ["queued", "#3"]}
    assert table[5:] == [
        "j2: waiting for 0.5 of a card",
        "j3: waiting for 0.5 of a card",
        "j4: waiting for 0.5 of a card (first in the queue; card 0 kept "
        "for it)"]
    # the head leaves: the others move up
    daemon.gmux("stop", "j4", check=0)
    assert queue(daemon) == ["j2", "j3"]
    assert daemon.job("j2")["reason"].endswith("(first in the queue; card 0 "
                                               "kept for it)")


def test_no_wait_refuses_with_one_line(daemon, tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    run_d(daemon, "--share", "0.75", "--", *gate.cmd())
    for detach in ([], ["-d"]):
        r = daemon.gmux("run", *detach, "--no-wait", "--share", "0.5", "--",
                        "echo", "never")
        assert r.returncode == 125
        assert r.stdout == b""
        assert r.stderr == (b"gmux run: no room now for 0.5 of a card "
                            b"(--no-wait)\n")
    # what fits still starts at once
    r = daemon.gmux("run", "--no-wait", "--share", "0.25", "--", "echo", "ok")
    assert r.returncode == 0 and r.stdout == b"ok\n"
    assert sorted(jobs(daemon)) == ["j1", "j2"]


def test_timeout_bounds_the_wait(daemon, tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    run_d(daemon, "--share", "1", "--", *gate.cmd())
    t = time.monotonic()
    r = daemon.gmux("run", "--timeout", "1s", "--share", "0.5", "--", "echo",
                    "never")
    took = time.monotonic() - t
    assert r.returncode == 125
    assert 1.0 <= took < 5, took
    assert r.stdout == b""
    err = r.stderr.decode().splitlines()
    assert err[0].startswith("gmux: j2 queued at position 1")
    assert err[1:] == ["gmux run: j2 failed: did not start within 1s "
                       "(--timeout)"]
    j = daemon.job("j2")
    assert j["state"] == "failed" and j["started"] is None
    assert j["reason"] == "did not start within 1s (--timeout)"
    assert j["exit_code"] is None
    # a detached one too; and one that starts in time is not touched
    run_d(daemon, "--timeout", "1s", "--share", "0.5", "--", "true")
    run_d(daemon, "--timeout", "10s", "--share", "0.5", "--", "true")
    daemon.wait_state("j3", "failed", timeout=5)
    gate.open()
    daemon.wait_state("j4", "exited")


def test_a_timed_out_head_lets_the_next_start(daemon, tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    run_d(daemon, "--share", "0.75", "--", *gate.cmd())
    run_d(daemon, "--share", "0.5", "--timeout", "1s", "--", "true")  # j2
    run_d(daemon, "--share", "0.25", "--", "sleep", "100")            # j3
    # j3 would fit, but the card is kept for j2, first in the queue
    assert daemon.job("j3")["reason"] == "waiting for 0.25 of a card " \
        "(card 0 is held for j2)"
    daemon.wait_state("j2", "failed", timeout=5)
    assert daemon.wait_state("j3", "running", timeout=2)["card"] == 0


@pytest.mark.parametrize("args,why", [
    (["--share", "0.5", "--mem", "90G"],
     "needs 90G of memory; the largest card has 80G"),
    (["--share", "0.5", "--cards", "3"], "needs 3 cards; this host has 2"),
    (["--share", "0.5", "--card", "3"], "needs card 3; this host has 2 cards"),
    (["--share", "0.5", "--cards", "2", "--card", "1"],
     "asks for 2 cards but is pinned to card 1"),
])
def test_impossible_requests_are_refused_at_once(daemon, tmp_path, args, why):
    daemon.start(fake="2xH100:80G")
    gate = Gate(tmp_path)
    run_d(daemon, "--share", "1", "--cards", "2", "--", *gate.cmd())
    t = time.monotonic()
    r = daemon.gmux("run", *args, "--", "true")
    assert time.monotonic() - t < 2
    assert r.returncode == 125
    assert r.stderr.decode() == "gmux run: %s\n" % why
    assert list(jobs(daemon)) == ["j1"]


def test_refusal_codes_over_the_api(daemon, tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    run_d(daemon, "--share", "1", "--", *gate.cmd())
    code, body = daemon.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "share": 0.5, "mem": 90 * G}))
    assert code == 422
    assert json.loads(body)["error"] == ("needs 90G of memory; the largest "
                                         "card has 80G")
    code, body = daemon.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "share": 0.5, "no_wait": True}))
    assert code == 409
    assert "no room now for 0.5 of a card" in json.loads(body)["error"]
    code, body = daemon.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "share": 0.5}))
    assert code == 201
    j = json.loads(body)
    assert j["state"] == "queued" and j["position"] == 1


# -- priorities and aging


def test_priority_orders_the_queue_and_the_starts(daemon, tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    order = str(tmp_path / "order")
    run_d(daemon, "--share", "1", "--", *gate.cmd())
    for name, prio in (("j2", 3), ("j3", 5), ("j4", 9), ("j5", 5),
                       ("j6", 0), ("j7", 9)):
        assert run_d(daemon, "--priority", str(prio),
                     *recorder(order, name)) == name
    want = ["j4", "j7", "j3", "j5", "j2", "j6"]
    assert queue(daemon) == want
    assert daemon.job("j2")["priority"] == 3
    gate.open()
    for jid in want:
        daemon.wait_state(jid, "exited")
    assert open(order).read().split() == want
    starts = jobs(daemon)
    assert sorted(want, key=lambda i: starts[i]["started"]) == want


def test_aging_lets_a_long_wait_pass_higher_priority(clocked, tmp_path):
    d = clocked
    d.start()
    gate = Gate(tmp_path)
    run_d(d, "--share", "1", "--", *gate.cmd())
    run_d(d, "--share", "0.5", "--priority", "3", "--", "true")     # j2
    d.set_clock(T0 + 5 * MIN, tick=False)
    # 5 minutes of waiting are one level: j2 is at 4, j3 at 5
    run_d(d, "--share", "0.5", "--priority", "5", "--", "true")     # j3
    d.set_clock(T0 + 20 * MIN, tick=False)
    # j2 is at 7 now, j4 starts at 5: j2 goes first
    run_d(d, "--share", "0.5", "--priority", "5", "--", "true")     # j4
    run_d(d, "--share", "0.5", "--priority", "9", "--", "true")     # j5
    assert queue(d) == ["j5", "j3", "j2", "j4"]
    text = d.gmux("explain", "j2", check=0).stdout.decode()
    assert "  priority 3, effective 7.0 after 20m of waiting; ahead of all " \
        "new work in 10m\n" in text
    assert "  ahead of it: j5 and j3\n" in text
    d.set_clock(T0 + 31 * MIN, tick=False)
    text = d.gmux("explain", "j2", check=0).stdout.decode()
    assert "no new work can pass it" in text
    run_d(d, "--share", "0.5", "--priority", "9", "--", "true")     # j6
    assert queue(d) == ["j5", "j3", "j2", "j6", "j4"]


# -- preemption


VICTIM = ("trap 'echo got TERM; %s' TERM; echo run; "
          "while :; do sleep 0.02; done")


def test_preemption_terms_waits_the_grace_then_kills(daemon):
    daemon.start()
    run_d(daemon, "--share", "1", "--preemptible", "--priority", "1",
          "--grace", "0.4s", "--", "sh", "-c", VICTIM % "echo ignored")
    wait_for(lambda: "run" in log(daemon, "j1"), what="j1 to run")
    t = time.monotonic()
    r = daemon.gmux("run", "--share", "0.5", "--priority", "9", "--", "echo",
                    "urgent")
    took = time.monotonic() - t
    assert r.returncode == 0 and r.stdout == b"urgent\n"
    assert b"waiting for j1 to leave card 0 (preempted for it)" in r.stderr
    assert took >= 0.4, took
    v = daemon.job("j1")
    assert v["state"] == "preempted"
    assert v["exit_code"] == 137            # it ignored TERM: killed
    assert v["reason"] == "preempted for j2 (priority 9) on card 0"
    assert log(daemon, "j1") == "run\ngot TERM\nignored\n"
    u = daemon.job("j2")
    assert u["started"] >= v["ended"]


def test_preempted_victim_that_leaves_on_term_keeps_its_exit_code(daemon):
    daemon.start(fake="2xH100:80G")
    # two candidates on two cards: the younger one is pushed off
    run_d(daemon, "--share", "1", "--preemptible", "--priority", "1",
          "--", "sh", "-c", VICTIM % "exit 3")
    p = daemon.popen("run", "--share", "1", "--preemptible", "--priority",
                     "1", "--", "sh", "-c", VICTIM % "exit 3",
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: "run" in log(daemon, "j2"), what="j2 to run")
        run_d(daemon, "--share", "1", "--priority", "2", "--", "sleep",
              "100")
        out, err = p.communicate(timeout=15)
    finally:
        p.kill()
    v = daemon.wait_state("j2", "preempted")
    assert v["exit_code"] == 3
    assert v["reason"] == "preempted for j3 (priority 2) on card 1"
    # the attached run ends with the victim's exit code, and says why
    assert p.returncode == 3
    assert out == b"run\ngot TERM\n"
    # (before it, sh may say "Terminated" of its sleep, killed with it)
    assert err.decode().splitlines()[-1] == "gmux run: j2 preempted for j3 " \
        "(priority 2) on card 1"
    assert daemon.wait_state("j3", "running")["card"] == 1
    assert daemon.job("j1")["state"] == "running"


def test_requeued_victim_runs_again_when_room_frees(daemon, tmp_path):
    daemon.start()
    mark = tmp_path / "mark"
    script = ("if [ -e %s ]; then echo second; exit 0; fi; touch %s; " %
              (mark, mark)) + VICTIM % "exit 3"
    p = daemon.popen("run", "--share", "1", "--preemptible", "--requeue",
                     "--priority", "1", "--", "sh", "-c", script,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: "run" in log(daemon, "j1"), what="j1 to run")
        gate = Gate(tmp_path)
        run_d(daemon, "--share", "0.5", "--priority", "9", "--", *gate.cmd())
        daemon.wait_state("j2", "running")
        j = daemon.wait_state("j1", "queued")
        assert j["reason"] == "waiting for 1 of a card (first in the queue; " \
            "card 0 kept for it)"
        assert j["position"] == 1 and j["exit_code"] is None
        time.sleep(0.2)
        assert daemon.job("j1")["state"] == "queued"
        gate.open()
        out, err = p.communicate(timeout=15)
    finally:
        p.kill()
    j = daemon.wait_state("j1", "exited")
    assert j["exit_code"] == 0
    assert log(daemon, "j1") == "run\ngot TERM\nsecond\n"
    # the attached client saw both runs and the last one's exit code
    assert out == b"run\ngot TERM\nsecond\n"
    assert p.returncode == 0, err


def test_attached_requeue_survives_a_reconnect_between_runs(daemon,
                                                           tmp_path):
    """The client sees the first run's exit frame, loses the daemon, and
    must still follow the job into its second run."""
    daemon.start()
    mark = tmp_path / "mark"
    script = ("if [ -e %s ]; then echo second; exit 0; fi; touch %s; " %
              (mark, mark)) + VICTIM % "exit 3"
    p = daemon.popen("run", "--share", "1", "--preemptible", "--requeue",
                     "--priority", "1", "--", "sh", "-c", script,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: "run" in log(daemon, "j1"), what="j1 to run")
        gate = Gate(tmp_path)
        run_d(daemon, "--share", "0.5", "--priority", "9", "--", *gate.cmd())
        daemon.wait_state("j1", "queued")
        daemon.kill9()
        daemon.start()
        gate.open()
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert out == b"run\ngot TERM\nsecond\n", err
    assert p.returncode == 0, err


def test_a_queued_job_can_be_resized_and_keeps_its_place(daemon):
    daemon.start()
    run_d(daemon, "--share", "0.75", "--", "sleep", "100")
    run_d(daemon, "--share", "0.5", "--", "true")
    run_d(daemon, "--share", "0.5", "--", "true")
    assert queue(daemon) == ["j2", "j3"]
    r = daemon.gmux("resize", "j3", "--share", "0.25")
    assert r.returncode == 0, r.stderr
    j = daemon.job("j3")
    assert j["share"] == 0.25 and j["state"] == "queued"
    assert queue(daemon) == ["j2", "j3"]
    r = daemon.gmux("resize", "j2", "--share", "0.5", "--mem", "90G")
    assert r.returncode == 1 and b"90G" in r.stderr
    daemon.gmux("stop", "--grace", "0", "j1", check=0)
    # both fit together now: 0.5 and 0.25
    assert daemon.wait_state("j2", "exited")["share"] == 0.5
    assert daemon.wait_state("j3", "exited")["share"] == 0.25


def test_not_preemptible_and_equal_priority_are_never_pushed_off(daemon):
    daemon.start(fake="2xH100:80G")
    run_d(daemon, "--share", "1", "--priority", "0", "--", "sleep", "100")
    run_d(daemon, "--share", "1", "--priority", "5", "--preemptible", "--",
          "sleep", "100")
    run_d(daemon, "--share", "1", "--priority", "9", "--card", "0", "--",
          "true")                                                   # j3
    run_d(daemon, "--share", "1", "--priority", "5", "--card", "1", "--",
          "true")                                                   # j4
    time.sleep(0.5)
    js = jobs(daemon)
    assert js["j1"]["state"] == "running" and js["j2"]["state"] == "running"
    assert js["j1"]["preempting_for"] is None
    assert js["j2"]["preempting_for"] is None
    assert js["j3"]["reason"] == "waiting for 1 of card 0 (first in the " \
        "queue; card 0 kept for it)"
    assert js["j4"]["reason"] == "waiting for 1 of card 1"
    # one level more does push the preemptible one off
    run_d(daemon, "--share", "1", "--priority", "6", "--card", "1", "--",
          "true")                                                   # j5
    daemon.wait_state("j2", "preempted")
    daemon.wait_state("j5", "exited")
    assert daemon.job("j1")["state"] == "running"


# -- burst


def test_burst_ceiling_rises_and_falls(daemon):
    daemon.start()

    def ceil(jid):
        return daemon.job(jid)["ceilings"]
    run_d(daemon, "--share", "0.25", "--burst", "--", "sleep", "100")
    assert ceil("j1") == {"0": 1.0}
    # new work takes capacity back, and starts
    run_d(daemon, "--share", "0.5", "--", "sleep", "100")
    assert daemon.job("j2")["state"] == "running"
    assert ceil("j1") == {"0": 0.5} and ceil("j2") == {"0": 0.5}
    run_d(daemon, "--share", "0.25", "--", "sleep", "100")
    assert daemon.job("j3")["state"] == "running"
    assert ceil("j1") == {"0": 0.25}
    c = daemon.json("cards", "--json")[0]
    assert c["guaranteed"] == 1.0 and c["burst"] == 0
    # and gets it back as work leaves
    daemon.gmux("stop", "--grace", "0", "j2", check=0)
    daemon.wait_state("j2", "stopped")
    assert ceil("j1") == {"0": 0.75}
    c = daemon.json("cards", "--json")[0]
    assert c["guaranteed"] == 0.5 and c["burst"] == 0.5
    # a second burst job shares the idle seats
    run_d(daemon, "--share", "0.1", "--burst", "--", "sleep", "100")
    # idle: 1 - 0.25 - 0.25 - 0.1 = 0.4, half each
    assert ceil("j1") == {"0": 0.45} and ceil("j4") == {"0": 0.3}
    assert ceil("j3") == {"0": 0.25}
    # a restart tells the same ceilings again
    daemon.kill9()
    daemon.start()
    assert ceil("j1") == {"0": 0.45} and ceil("j4") == {"0": 0.3}
    daemon.gmux("stop", "--grace", "0", "j4", check=0)
    daemon.wait_state("j4", "stopped")
    assert ceil("j1") == {"0": 0.75}


def test_a_start_that_fails_leaves_no_stale_ceiling(daemon):
    """j2 leaves, j3 is admitted and j1's ceiling rises to what is idle
    beside j3; j3's start fails (its directory cannot be made), so j1's
    ceiling must end at all that is idle, not at the value decided while
    j3 was there."""
    daemon.start()
    run_d(daemon, "--share", "0.5", "--burst", "--", "sleep", "100")
    run_d(daemon, "--share", "0.5", "--", "sleep", "100")
    run_d(daemon, "--share", "0.25", "--", "true")
    assert daemon.job("j1")["ceilings"] == {"0": 0.5}
    assert daemon.job("j3")["state"] == "queued"
    # jobs/ a symlink loop: making jobs/j3 fails (ELOOP) in job_start.
    jobs_dir = os.path.join(daemon.home, "jobs")
    os.rename(jobs_dir, jobs_dir + ".real")
    os.symlink("jobs", jobs_dir)
    try:
        daemon.gmux("stop", "--grace", "0", "j2", check=0)
        j3 = daemon.wait_state("j3", "failed")
    finally:
        os.unlink(jobs_dir)
        os.rename(jobs_dir + ".real", jobs_dir)
    assert "jobs/j3" in j3["reason"], j3
    assert daemon.job("j1")["ceilings"] == {"0": 1.0}
    daemon.gmux("stop", "--grace", "0", "j1", check=0)


# -- several cards


def test_two_cards_for_one_job(daemon):
    daemon.start(fake="2xH100:80G")
    r = daemon.gmux("run", "--cards", "2", "--share", "1", "--", "sh", "-c",
                    "echo $CUDA_VISIBLE_DEVICES $GMUX_SHARE $GMUX_MEM")
    assert r.returncode == 0
    assert r.stdout.decode().split() == ["0,1", "1", str(80 * G)]
    j = daemon.job("j1")
    assert j["cards"] == [0, 1] and j["ncards"] == 2
    assert j["ceilings"] == {"0": 1.0, "1": 1.0}
    # one card busy: it waits, and starts on both when it is free
    run_d(daemon, "--share", "0.5", "--card", "1", "--", "sleep", "100")
    run_d(daemon, "--cards", "2", "--share", "1", "--", "sleep", "100")
    j = daemon.job("j3")
    assert j["state"] == "queued"
    assert j["reason"] == "waiting for 2 cards with 1 free each (first in " \
        "the queue; cards 0, 1 kept for it)"
    daemon.gmux("stop", "--grace", "0", "j2", check=0)
    j = daemon.wait_state("j3", "running")
    assert j["cards"] == [0, 1]
    cards = daemon.json("cards", "--json")
    assert [c["share_free"] for c in cards] == [0, 0]


def test_cards_of_different_sizes_each_get_their_own_cap(clocked):
    # the default cap is a share of each card's memory: 40G of 80G on card
    # 0, 20G of 40G on card 1; enforcement and the books get each
    d = clocked
    d.start(fake="1xH100:80G,1xA100:40G")
    r = d.gmux("run", "--cards", "2", "--share", "0.5", "--", "sh", "-c",
               "echo $CUDA_VISIBLE_DEVICES")
    assert r.stdout == b"0,1\n"
    run_d(d, "--cards", "2", "--share", "0.5", "--", "sleep", "1000")
    cards = d.json("cards", "--json")
    assert [c["mem_free"] for c in cards] == [40 * G, 20 * G]
    d.set_clock(T0 + HOUR, tick=False)
    d.kill9()
    d.start(fake="1xH100:80G,1xA100:40G")
    d.gmux("resize", "j2", "--share", "0.25", check=0)
    d.set_clock(T0 + 2 * HOUR, tick=False)
    d.gmux("stop", "--grace", "0", "j2", check=0)
    d.wait_state("j2", "stopped")
    assert ledger_rows(d, 2) == [
        (0, 50, 50, 40 * G, T0, T0 + HOUR),
        (1, 50, 50, 20 * G, T0, T0 + HOUR),
        (0, 25, 25, 20 * G, T0 + HOUR, T0 + 2 * HOUR),
        (1, 25, 25, 10 * G, T0 + HOUR, T0 + 2 * HOUR)]
    assert usage(d)["j2"]["mem_gib_hours"] == pytest.approx(60 + 30)


# -- resize


def test_resize_grows_shrinks_and_refuses(daemon, tmp_path):
    daemon.start()
    run_d(daemon, "--share", "0.25", "--", "sleep", "100")          # j1
    run_d(daemon, "--share", "0.25", "--mem", "10G", "--", "sleep", "100")

    def terms(jid):
        j = daemon.job(jid)
        return j["share"], j["mem"] // G, j["ceilings"]
    r = daemon.gmux("resize", "j1", "--share", "0.5")
    assert r.returncode == 0 and r.stdout == b"j1: share 0.5, mem 40G\n"
    assert terms("j1") == (0.5, 40, {"0": 0.5})     # a default cap follows
    r = daemon.gmux("resize", "j1", "--share", "0.9")
    assert r.returncode == 1
    assert r.stderr == (b"gmux resize: cannot grow to 0.9: card 0 has 0.25 "
                        b"free, 0.4 more is needed\n")
    assert terms("j1") == (0.5, 40, {"0": 0.5})
    r = daemon.gmux("resize", "j2", "--mem", "90G")
    assert r.returncode == 1
    assert r.stderr == (b"gmux resize: cannot grow to 90G of memory: card 0 "
                        b"has 80G\n")
    r = daemon.gmux("resize", "j2", "--mem", "50G")
    assert r.returncode == 1
    assert r.stderr == (b"gmux resize: cannot grow to 50G of memory: card 0 "
                        b"has 30G free, 40G more is needed\n")
    r = daemon.gmux("resize", "j2", "--mem", "30G")
    assert r.returncode == 0
    assert terms("j2") == (0.25, 30, {"0": 0.25})   # an explicit cap stays
    r = daemon.gmux("resize", "j2", "--share", "0.5")
    assert r.returncode == 0
    assert terms("j2") == (0.5, 30, {"0": 0.5})
    # shrinking always works, and the room goes to the queue at once
    run_d(daemon, "--share", "0.5", "--", "sleep", "100")            # j3
    assert daemon.job("j3")["state"] == "queued"
    r = daemon.gmux("resize", "j1", "--share", "0.1")
    assert r.returncode == 0
    assert terms("j1") == (0.1, 8, {"0": 0.1})
    r = daemon.gmux("resize", "j2", "--share", "0.1", "--mem", "8G")
    assert r.returncode == 0
    daemon.wait_state("j3", "running")
    c = daemon.json("cards", "--json")[0]
    assert c["share_free"] == 0.3 and c["mem_free"] == 24 * G
    # a card kept for the first in the queue cannot be grown on
    run_d(daemon, "--share", "0.5", "--", "sleep", "100")            # j4
    r = daemon.gmux("resize", "j1", "--share", "0.2")
    assert r.returncode == 1
    assert r.stderr == (b"gmux resize: cannot grow on card 0: it is held "
                        b"for j4, first in the queue\n")
    # nothing to resize
    assert daemon.gmux("resize", "j9", "--share", "0.1").returncode == 1
    assert daemon.gmux("resize", "j1").returncode == 2
    daemon.gmux("stop", "--grace", "0", "j3", check=0)
    daemon.wait_state("j3", "stopped")
    r = daemon.gmux("resize", "j3", "--share", "0.1")
    assert r.returncode == 1 and b"j3 is stopped" in r.stderr
    code, body = daemon.curl("PATCH", "/v1/jobs/j1", '{"share": 1.5}')
    assert code == 400


def test_a_default_cap_still_follows_the_share_after_a_restart(daemon):
    daemon.start()
    run_d(daemon, "--share", "0.25", "--", "sleep", "100")
    run_d(daemon, "--share", "0.25", "--mem", "10G", "--", "sleep", "100")
    daemon.kill9()
    daemon.start()
    daemon.gmux("resize", "j1", "--share", "0.5", check=0)
    daemon.gmux("resize", "j2", "--share", "0.5", check=0)
    assert daemon.job("j1")["mem"] == 40 * G
    assert daemon.job("j2")["mem"] == 10 * G
    assert daemon.json("cards", "--json")[0]["mem_free"] == 30 * G


def test_resize_is_billed_from_the_resize_time(clocked):
    d = clocked
    d.start()
    run_d(d, "--share", "0.25", "--", "sleep", "1000")
    d.set_clock(T0 + HOUR, tick=False)
    d.gmux("resize", "j1", "--share", "0.5", check=0)
    d.set_clock(T0 + 2 * HOUR, tick=False)
    d.gmux("resize", "j1", "--share", "0.1", "--mem", "4G", check=0)
    d.set_clock(T0 + 3 * HOUR, tick=False)
    d.gmux("stop", "--grace", "0", "j1", check=0)
    d.wait_state("j1", "stopped")
    u = usage(d)["j1"]
    assert u["share_seconds"] == pytest.approx(900 + 1800 + 360)
    assert u["mem_gib_hours"] == pytest.approx(20 + 40 + 4)
    assert ledger_rows(d, 1) == [
        (0, 25, 25, 20 * G, T0, T0 + HOUR),
        (0, 50, 50, 40 * G, T0 + HOUR, T0 + 2 * HOUR),
        (0, 10, 10, 4 * G, T0 + 2 * HOUR, T0 + 3 * HOUR)]


# -- explain


def test_explain_queued_and_running(daemon, tmp_path):
    daemon.start(fake="2xH100:80G")
    run_d(daemon, "--share", "0.75", "--", "sleep", "100")
    run_d(daemon, "--share", "0.8", "--", "sleep", "100")
    run_d(daemon, "--share", "0.5", "--priority", "3", "--", "true")  # j3
    run_d(daemon, "--share", "0.5", "--priority", "2", "--burst", "--",
          "true")                                                     # j4
    text = daemon.gmux("explain", "j4", check=0).stdout.decode()
    lines = text.splitlines()
    assert lines[0] == "j4 is queued at position 2 of 2, waiting for 0.5 " \
        "of a card"
    assert lines[1] == "  asks for 0.5 of 1 card, its share of memory, " \
        "priority 2, burst"
    assert re.fullmatch(r"  priority 2, effective 2\.0 after 0s of waiting; "
                        r"ahead of all new work in 3[45]m", lines[2])
    assert "  card 0: 0.25 free, 20G of 80G memory free; held for j3" in lines
    assert "  card 1: 0.2 free, 16G of 80G memory free; it does not fit" \
        in lines
    assert lines[-1] == "  ahead of it: j3"
    text = daemon.gmux("explain", "3", check=0).stdout.decode()
    assert text.startswith("j3 is queued at position 1 of 2, waiting for "
                           "0.5 of a card (first in the queue; card 0 kept "
                           "for it)\n")
    text = daemon.gmux("explain", "j2", check=0).stdout.decode()
    assert text == ("j2 is running on card 1 (for 0s)\n"
                    "  card 1: 0.8 guaranteed, up to 0.8, 64G of memory\n")
    o = daemon.json("explain", "--json", "j1")
    assert o["id"] == "j1" and o["explain"].startswith("j1 is running")
    daemon.gmux("stop", "--grace", "0", "j1", check=0)
    daemon.wait_state("j3", "exited")
    text = daemon.gmux("explain", "j1", check=0).stdout.decode()
    assert text == "j1 stopped with exit code 143\n"
    r = daemon.gmux("explain", "j99")
    assert r.returncode == 1 and r.stderr == b"gmux explain: no job j99\n"


# -- restart


@pytest.mark.parametrize("how", ["kill9", "stop"])
def test_queue_survives_a_restart_in_order(daemon, tmp_path, how):
    daemon.start()
    gate = Gate(tmp_path)
    order = str(tmp_path / "order")
    run_d(daemon, "--share", "1", "--", *gate.cmd())
    for name, prio in (("j2", 3), ("j3", 5), ("j4", 7), ("j5", 5),
                       ("j6", 3)):
        run_d(daemon, "--priority", str(prio), *recorder(order, name))
    want = ["j4", "j3", "j5", "j2", "j6"]
    before = {j["id"]: (j["position"], j["reason"])
              for j in daemon.json("ps", "--json")}
    assert queue(daemon) == want
    if how == "kill9":
        daemon.kill9()
    else:
        daemon.stop()
    daemon.start()
    after = {j["id"]: (j["position"], j["reason"])
             for j in daemon.json("ps", "--json")}
    assert after == before
    assert daemon.job("j1")["state"] == "running"
    gate.open()
    for jid in want:
        daemon.wait_state(jid, "exited")
    assert open(order).read().split() == want


def test_a_preemption_in_progress_survives_kill9(daemon):
    daemon.start()
    run_d(daemon, "--share", "0.5", "--burst", "--", "sleep", "100")  # j1
    run_d(daemon, "--share", "0.5", "--preemptible", "--priority", "1",
          "--grace", "10s", "--", "sh", "-c", "trap 'sleep 1; exit 3' TERM;"
          " echo run; while :; do sleep 0.02; done")                  # j2
    wait_for(lambda: "run" in log(daemon, "j2"), what="j2 to run")
    run_d(daemon, "--share", "0.5", "--priority", "9", "--", "sleep",
          "100")                                                      # j3
    run_d(daemon, "--share", "0.25", "--", "true")                    # j4
    assert daemon.job("j2")["preempting_for"] == 3
    before = {j["id"]: (j["position"], j["reason"], j["ceilings"])
              for j in daemon.json("ps", "--json")}
    daemon.kill9()
    daemon.start()
    after = {j["id"]: (j["position"], j["reason"], j["ceilings"])
             for j in daemon.json("ps", "--json")}
    assert after == before
    assert after["j3"][:2] == (1, "waiting for j2 to leave card 0 "
                               "(preempted for it)")
    assert daemon.wait_state("j2", "preempted")["exit_code"] == 3
    assert daemon.wait_state("j3", "running")["card"] == 0
    # j1's burst went to j3; j4 waits for room
    assert daemon.job("j1")["ceilings"] == {"0": 0.5}
    assert daemon.job("j4")["state"] == "queued"


# -- Ctrl-C


def test_ctrl_c_cancels_a_queued_run(daemon, tmp_path):
    daemon.start()
    gate = Gate(tmp_path)
    ran = tmp_path / "ran"
    run_d(daemon, "--share", "1", "--", *gate.cmd())
    p = daemon.popen("run", "--share", "0.5", "--", "touch", str(ran),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        daemon.wait_state("j2", "queued")
        p.stderr.readline()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert b"stopping j2" in err
    j = daemon.job("j2")
    assert j["state"] == "stopped" and j["started"] is None
    assert j["position"] is None
    assert queue(daemon) == []
    gate.open()
    daemon.wait_state("j1", "exited")
    time.sleep(0.3)
    assert not ran.exists()
    assert daemon.job("j2")["state"] == "stopped"


# -- the books


def test_ledger_closes_a_victim_when_it_exits(clocked, tmp_path):
    d = clocked
    d.start()
    release = tmp_path / "release"
    victim = ("trap 'while [ ! -e %s ]; do sleep 0.02; done; exit 3' TERM; "
              "echo run; while :; do sleep 0.02; done" % release)
    run_d(d, "--share", "0.5", "--preemptible", "--priority", "1",
          "--grace", "30s", "--", "sh", "-c", victim)
    run_d(d, "--share", "0.25", "--", "sleep", "1000")
    wait_for(lambda: "run" in log(d, "j1"), what="j1 to run")
    d.set_clock(T0 + HOUR, tick=False)
    run_d(d, "--share", "0.75", "--priority", "9", "--", "sleep", "1000")
    assert d.job("j1")["preempting_for"] == 3
    # the victim holds its share through its grace, until it is gone
    d.set_clock(T0 + HOUR + 10 * MIN, tick=False)
    release.touch()
    d.wait_state("j1", "preempted")
    d.wait_state("j3", "running")
    d.set_clock(T0 + 2 * HOUR, tick=False)
    d.gmux("stop", "--grace", "0", "j2", "j3", check=0)
    d.wait_state("j3", "stopped")
    assert ledger_rows(d, 1) == [(0, 50, 50, 40 * G, T0, T0 + 70 * MIN)]
    assert ledger_rows(d, 3) == [(0, 75, 75, 60 * G, T0 + 70 * MIN,
                                  T0 + 2 * HOUR)]
    u = usage(d)
    assert u["j1"]["share_seconds"] == pytest.approx(0.5 * 70 * 60)
    assert u["j3"]["share_seconds"] == pytest.approx(0.75 * 50 * 60)
    assert u["j2"]["share_seconds"] == pytest.approx(0.25 * 2 * 3600)


def test_ledger_bills_a_burst_guarantee_and_records_its_ceiling(clocked):
    d = clocked
    d.start()
    run_d(d, "--share", "0.25", "--burst", "--", "sleep", "1000")
    d.set_clock(T0 + HOUR, tick=False)
    run_d(d, "--share", "0.5", "--", "sleep", "1000")
    d.set_clock(T0 + 2 * HOUR, tick=False)
    d.gmux("stop", "--grace", "0", "j2", check=0)
    d.wait_state("j2", "stopped")
    d.set_clock(T0 + 3 * HOUR, tick=False)
    d.gmux("stop", "--grace", "0", "j1", check=0)
    d.wait_state("j1", "stopped")
    assert ledger_rows(d, 1) == [
        (0, 25, 100, 20 * G, T0, T0 + HOUR),
        (0, 25, 50, 20 * G, T0 + HOUR, T0 + 2 * HOUR),
        (0, 25, 100, 20 * G, T0 + 2 * HOUR, T0 + 3 * HOUR)]
    u = usage(d)
    assert u["j1"]["share_seconds"] == pytest.approx(0.25 * 3 * 3600)
    assert u["j2"]["share_seconds"] == pytest.approx(0.5 * 3600)
