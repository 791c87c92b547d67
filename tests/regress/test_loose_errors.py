"""The loose errors of issue 16 (item 9), each with the one-line error
and exit code it must get: --pull patterns out of the job's tree, a pull
that matched nothing or something, share 0 with memory, a --since that is
not a time, attach's name, the largest card of any host, old failures
under ps -a, what resize says, and top's queued memory."""

import json
import os

from conftest import T0
from remotelib import https_json


def host_and_client(make_daemon, make_client, fake="1xH100:80G"):
    d = make_daemon()
    d.serve_tls(fake=fake)
    c = make_client()
    assert c.add("gpu1", d.target).returncode == 0
    return d, c


def one_line(r):
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_pull_patterns_stay_in_the_jobs_tree(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    for bad in ("../x", "/etc/passwd", "out/../../x"):
        r = c.gmux("run", "--pull", bad, "--", "true")
        assert r.returncode == 2, r.stderr
        assert "relative to the job's tree" in one_line(r)
    assert c.json("ps", "-a", "--json") == []       # nothing was started
    # The host refuses them too.
    c.gmux("run", "--", "true", check=0)
    token = d.target.split("@")[0]
    code, o = https_json(d.port, "POST", "/v1/jobs/j1/pull",
                         json.dumps({"globs": ["../x"]}).encode(), token,
                         "application/json")
    assert code == 400 and "relative to the job's tree" in o["error"], o


def test_a_pull_says_what_it_fetched_or_that_nothing_matched(make_daemon,
                                                             make_client):
    d, c = host_and_client(make_daemon, make_client)
    r = c.gmux("run", "--pull", "nomatch/*", "--", "true")
    assert r.returncode == 0, r.stderr
    assert one_line(r) == "gmux run: --pull: nothing matched 'nomatch/*'"
    job = "mkdir -p out; echo hi > out/a; echo yo > out/b"
    r = c.gmux("run", "--pull", "out/", "--", "sh", "-c", job)
    assert r.returncode == 0, r.stderr
    assert one_line(r) == ("gmux run: --pull: 2 files matched (6B): "
                           "fetched 2 (6B), 0 already here")
    r = c.gmux("run", "--pull", "out/", "--", "sh", "-c", job)
    assert one_line(r) == ("gmux run: --pull: 2 files matched (6B): "
                           "fetched 0 (0B), 2 already here")


def test_share_0_with_memory_is_a_usage_error(daemon, make_daemon,
                                              make_client):
    daemon.start()
    for args in (("run",), ("run", "-d")):
        r = daemon.gmux(*args, "--share", "0", "--mem", "20G", "--", "true")
        assert r.returncode == 2, r
        assert "share 0" in one_line(r)
    d, c = host_and_client(make_daemon, make_client)
    r = c.gmux("run", "--share", "0", "--mem", "20G", "--", "true")
    assert r.returncode == 2, r
    assert "share 0" in one_line(r)


def test_usage_since_not_a_time(daemon, make_daemon, make_client):
    daemon.start()
    d, c = host_and_client(make_daemon, make_client)
    for who in (daemon, c):
        for flag in ("--since", "--until"):
            r = who.gmux("usage", flag, "yesterday")
            assert r.returncode == 2, r
            line = one_line(r)
            assert line.startswith("gmux usage: %s: 'yesterday' is not a "
                                   "time" % flag), line
        r = who.gmux("usage", "--since", "1h", "--until", "2h")
        assert r.returncode == 2 and "before" in one_line(r)
        assert who.gmux("usage", "--since", "1h").returncode == 0


def test_attach_says_attach(daemon):
    daemon.start()
    r = daemon.gmux("attach", "j99")
    assert r.returncode != 0
    assert one_line(r).startswith("gmux attach: "), r.stderr


def test_too_much_memory_names_the_largest_card_anywhere(make_daemon,
                                                         make_client):
    small, c = host_and_client(make_daemon, make_client, fake="1xL4:24G")
    big = make_daemon()
    big.serve_tls(fake="1xH100:80G")
    assert c.add("big", big.target).returncode == 0
    r = c.gmux("run", "--mem", "100G", "--", "true")
    assert r.returncode == 125, r
    assert one_line(r) == ("gmux run: no card could ever hold it: it needs "
                           "100G of memory; the largest card of any host "
                           "has 80G (big)")


def test_ps_a_says_old_failures_once(clocked):
    clocked.start()
    r = clocked.gmux("run", "--", "/nonexistent/x")
    assert r.returncode == 127
    out = clocked.gmux("ps", "-a", check=0).stdout.decode()
    assert "j1: /nonexistent/x: No such file or directory" in out
    clocked.set_clock(T0 + 11 * 60 * 1000)
    out = clocked.gmux("ps", "-a", check=0).stdout.decode()
    assert "No such file" not in out, out
    assert "(1 earlier failure: why in gmux ps -a --json)" in out
    assert "No such file" in clocked.job("j1")["reason"]


def test_resize_says_share_and_memory(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--share", "0.25", "--mem", "10G", "--",
                "sleep", "100", check=0)
    r = daemon.gmux("resize", "j1", "--mem", "12G")
    assert r.returncode == 0, r
    assert r.stdout == b"j1: share 0.25, mem 12G\n"


def test_top_shows_no_memory_for_a_queued_job_without_a_cap(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--share", "1", "--", "sleep", "100", check=0)
    daemon.gmux("run", "-d", "--share", "0.5", "--", "sleep", "100", check=0)
    out = daemon.gmux("top", "--once", check=0).stdout.decode()
    row = [l for l in out.splitlines() if l.startswith("j2 ")][0]
    assert row.split()[4] == "-", row
    assert "0B" not in row
