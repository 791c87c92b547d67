"""The books through the daemon, on a clock the test moves: exact figures
across stop, a daemon kill -9 and restart, and a job that ends while no
daemon runs; /metrics; the chain verifies; pruning exports first."""

import csv
import json
import os
import time

import pytest

from conftest import T0, wait_for

HOUR = 3600 * 1000


def usage(d, by="owner", since="2026-11-01", until="2026-11-02"):
    r = d.gmux("usage", "--since", since, "--until", until, "--by", by,
               "--json", check=0)
    return json.loads(r.stdout)


def row(u, key):
    return next(r for r in u["rows"] if str(r[u["by"]]) == key)


def test_usage_exact_over_stop(clocked):
    d = clocked
    d.start(fake="2xH100:80G")
    d.gmux("run", "-d", "--share", "0.25", "--mem", "20G", "--", "sleep",
           "1000", check=0)
    d.gmux("run", "-d", "--share", "0.5", "--card", "1", "--", "sleep",
           "1000", check=0)
    d.set_clock(T0 + HOUR)
    d.gmux("stop", "--grace", "0", "j1", check=0)
    d.set_clock(T0 + 2 * HOUR)
    d.gmux("stop", "--grace", "0", "j2", check=0)
    u = usage(d, by="job")
    assert row(u, "j1")["share_seconds"] == pytest.approx(900)
    assert row(u, "j2")["share_seconds"] == pytest.approx(3600)
    assert u["total"]["share_seconds"] == pytest.approx(4500)
    assert row(u, "j1")["mem_gib_hours"] == pytest.approx(20)
    by_card = usage(d, by="card")
    assert row(by_card, "1")["share_seconds"] == pytest.approx(3600)
    # a window that clips the intervals
    u = usage(d, by="owner", since="2026-11-01T00:30:00",
              until="2026-11-01T01:30:00")
    assert u["total"]["share_seconds"] == pytest.approx(0.25 * 1800 +
                                                        0.5 * 3600)
    r = d.gmux("usage", "--verify")
    assert r.returncode == 0 and b"intact" in r.stdout


def test_usage_survives_kill9_and_restart(clocked):
    d = clocked
    d.start()
    d.gmux("run", "-d", "--share", "0.25", "--", "sleep", "1000", check=0)
    d.gmux("run", "-d", "--share", "0.5", "--", "sh", "-c",
           "while [ ! -e stop ]; do sleep 0.05; done", check=0)
    d.set_clock(T0 + 600 * 1000)
    d.kill9()
    # j2 ends while no daemon runs, at T0 + 20 minutes
    with open(os.path.join(d.home, "clock"), "w") as f:
        f.write(str(T0 + 1200 * 1000))
    open(os.path.join(os.getcwd(), "stop"), "w").close()
    try:
        time.sleep(0.5)
    finally:
        os.unlink(os.path.join(os.getcwd(), "stop"))
    d.start()
    d.set_clock(T0 + 1800 * 1000)
    d.gmux("stop", "--grace", "0", "j1", check=0)
    u = usage(d, by="job")
    assert row(u, "j1")["share_seconds"] == pytest.approx(0.25 * 1800)
    assert row(u, "j2")["share_seconds"] == pytest.approx(0.5 * 1200)
    assert d.gmux("usage", "--verify").returncode == 0


def test_metrics_page(clocked):
    d = clocked
    d.start()
    d.gmux("run", "-d", "--share", "0.25", "--", "sleep", "1000", check=0)
    d.set_clock(T0 + HOUR)
    code, text = d.curl("GET", "/metrics")
    assert code == 200
    lines = text.splitlines()
    assert 'gmux_card_share_allocated{card="0"} 0.25' in lines
    assert 'gmux_jobs{state="running"} 1' in lines
    assert any(l.startswith("gmux_usage_share_seconds_total{owner=") and
               float(l.split()[-1]) == pytest.approx(900) for l in lines)
    assert "gmux_queue_length 0" in lines


def test_prune_exports_then_removes(clocked):
    d = clocked
    d.start()
    d.gmux("run", "-d", "--share", "0.5", "--", "sleep", "1000", check=0)
    d.set_clock(T0 + HOUR)
    d.gmux("stop", "--grace", "0", "j1", check=0)
    d.set_clock(T0 + 3 * 24 * HOUR)
    r = d.gmux("usage", "--prune-before", "2026-11-02", check=0)
    path = r.stdout.decode().split(" to ")[1].split(",")[0]
    assert path.startswith(os.path.join(d.home, "exports"))
    rows = list(csv.DictReader(open(path)))
    assert len(rows) == 1 and rows[0]["job"] == "1"
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert usage(d)["total"]["share_seconds"] == 0
    assert d.gmux("usage", "--verify").returncode == 0
    r = d.gmux("usage", "--prune-before", "someday")
    assert r.returncode == 1


def test_the_books_record_each_jobs_fence(clocked):
    d = clocked
    d.start()
    d.gmux("run", "-d", "--share", "0.25", "--deny-net", "--", "sleep",
           "1000", check=0)
    d.gmux("run", "-d", "--share", "0.25", "--allow", "127.0.0.1:9", "--",
           "sleep", "1000", check=0)
    d.gmux("run", "-d", "--share", "0.25", "--", "sleep", "1000", check=0)
    d.set_clock(T0 + HOUR)
    for j in ("j1", "j2", "j3"):
        d.gmux("stop", "--grace", "0", j, check=0)
    d.set_clock(T0 + 3 * 24 * HOUR)
    r = d.gmux("usage", "--prune-before", "2026-11-02", check=0)
    path = r.stdout.decode().split(" to ")[1].split(",")[0]
    fences = {row["job"]: row["fence"] for row in csv.DictReader(open(path))}
    assert fences == {"1": "deny-net", "2": "allow 127.0.0.1:9", "3": "none"}


def test_usage_bad_input(daemon):
    daemon.start()
    assert daemon.gmux("usage", "--by", "colour").returncode == 2
    r = daemon.gmux("usage", "--since", "yesterdayish")
    assert r.returncode == 2 and b"yesterdayish" in r.stderr
    code, body = daemon.curl("GET", "/v1/usage?by=nope")
    assert code == 400 and "error" in json.loads(body)


def test_retention_forgets_old_jobs_not_the_books(clocked):
    d = clocked
    d.env["GMUX_JOB_RETENTION_DAYS"] = "2"
    d.start()
    d.gmux("run", "--share", "0.5", "--", "true", check=0)
    d.gmux("run", "-d", "--share", "0.25", "--", "sleep", "1000", check=0)
    assert os.path.isdir(os.path.join(d.home, "jobs", "j1"))
    d.stop()
    with open(os.path.join(d.home, "clock"), "w") as f:
        f.write(str(T0 + 3 * 24 * HOUR))
    d.start()
    wait_for(lambda: not os.path.exists(os.path.join(d.home, "jobs", "j1")),
             what="j1 to be pruned")
    ids = [j["id"] for j in d.json("ps", "-a", "--json")]
    assert ids == ["j2"]
    d.gmux("stop", "--grace", "0", "j2", check=0)


def test_the_last_date_and_a_second_prune(daemon):
    """until=9999-12-31 was printed as 1970-01-01, a prune before it named
    its export ledger-before-1970-..., and a second prune got 409."""
    daemon.start()
    u = usage(daemon, since="2026-11-01", until="9999-12-31")
    assert u["until_utc"].startswith("9999-12-31"), u
    paths = []
    for _ in range(2):
        r = daemon.gmux("usage", "--prune-before", "9999-12-31", check=0)
        paths.append(r.stdout.decode().split(" to ")[1].split(",")[0])
    assert "ledger-before-9999-12-31" in paths[0], paths
    assert paths[0] != paths[1] and os.path.exists(paths[1]), paths
