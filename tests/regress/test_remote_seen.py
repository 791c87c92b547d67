"""What the description promises a client sees (issue 16, item 7): gmux
remote ls shows what is free on each host (cards, share and memory free,
jobs, version, round trip); gmux version shows each reachable host's
version; a remote gmux run says on stderr which host it went to when
there was a choice, one line, and -q silences it."""

import json
import os

from conftest import free_port

G = 1024 ** 3


def two_hosts(make_daemon, make_client):
    d1 = make_daemon()
    d1.serve_tls(fake="2xH100:80G")
    d2 = make_daemon()
    d2.serve_tls(fake="1xL4:24G")
    c = make_client()
    assert c.add("gpu1", d1.target).returncode == 0
    assert c.add("gpu2", d2.target).returncode == 0
    d1.gmux("run", "-d", "--share", "0.5", "--mem", "20G", "--", "sleep",
            "100", check=0)
    return d1, d2, c


def test_remote_ls_shows_what_is_free_on_each_host(make_daemon,
                                                   make_client):
    d1, d2, c = two_hosts(make_daemon, make_client)
    dead = d2.target.rsplit(":", 1)[0] + ":%d#%s" % (free_port(), d2.pin)
    assert c.add("gone", dead, "--no-check").returncode == 0
    r = c.gmux("remote", "ls")
    assert r.returncode == 0, r.stderr
    rows = [l.split() for l in r.stdout.decode().splitlines()]
    assert rows[0][:5] == ["NAME", "HOST", "PIN", "DEFAULT", "CARDS"], rows
    g1 = [x for x in rows if x[0] == "gpu1"][0]
    assert g1[3] == "*" and g1[4:8] == ["2", "1.50", "140G/160G", "1"], g1
    assert g1[8] == "0.1.0" or g1[8][0].isdigit()
    assert g1[9].endswith("ms")
    g2 = [x for x in rows if x[0] == "gpu2"][0]
    assert g2[3:7] == ["1", "1.00", "24G/24G", "0"], g2   # (no DEFAULT)
    gone = [x for x in rows if x[0] == "gone"][0]
    assert gone[3:] == ["-"] * 6, gone
    assert b"skipping gone: " in r.stderr
    a = {e["name"]: e for e in c.json("remote", "ls", "--json")}
    assert a["gpu1"]["share_free"] == 1.5 and a["gpu1"]["jobs"] == 1
    assert a["gpu1"]["mem_free"] == 140 * G and a["gpu1"]["cards"] == 2
    assert a["gpu2"]["rtt_ms"] > 0 and "version" in a["gpu2"]
    assert "error" in a["gone"] and "version" not in a["gone"]
    assert d1.target.split("@")[0] not in r.stdout.decode()


def test_version_shows_each_hosts(make_daemon, make_client):
    d1, d2, c = two_hosts(make_daemon, make_client)
    r = c.gmux("version")
    lines = r.stdout.decode().splitlines()
    assert lines[0].startswith("gmux ")
    v = lines[0].split()[1]
    assert lines[1:] == ["gpu1 %s (api 1)" % v, "gpu2 %s (api 1)" % v], lines
    r = c.gmux("version", "--remote", "gpu2")
    assert r.stdout.decode().splitlines()[1:] == ["gpu2 %s (api 1)" % v]


def test_run_says_where_it_went_unless_quiet(make_daemon, make_client):
    d1, d2, c = two_hosts(make_daemon, make_client)
    # 0.75 leaves 0.25 on gpu1's free card as on gpu2's L4: a tie, which
    # the default (gpu1) wins.
    r = c.gmux("run", "--share", "0.75", "--", "true")
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode().splitlines() == [
        "gmux run: on gpu1:j2 (chosen of 2 hosts)"], r.stderr
    r = c.gmux("run", "-q", "--share", "0.75", "--", "true")
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    # One host: no choice, nothing said.
    r = c.gmux("run", "--remote", "gpu2", "--", "true")
    assert r.returncode == 0 and r.stderr == b"", r.stderr
