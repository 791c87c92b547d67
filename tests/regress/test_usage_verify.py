"""gmux usage --verify goes where every other command goes (issue 16,
item 6): on a client, to the configured hosts (or --remote NAME), each
host checking its own chain (GET /v1/usage/verify, off its loop); never
the client's own books, and no state.db is made on the client."""

import os
import sqlite3



def hosts_and_client(make_daemon, make_client):
    ds = []
    c = make_client()
    for name in ("gpu1", "gpu2"):
        d = make_daemon()
        d.serve_tls()
        assert c.add(name, d.target).returncode == 0
        d.gmux("run", "--share", "0.5", "--", "sleep", "1.2", check=0)
        ds.append(d)
    return ds, c


def test_verify_on_a_client_checks_each_hosts_books(make_daemon,
                                                    make_client):
    (d1, d2), c = hosts_and_client(make_daemon, make_client)
    r = c.gmux("usage", "--verify")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("gpu1: the books are intact: ")
    assert lines[1].startswith("gpu2: the books are intact: ")
    assert int(lines[0].split()[-3]) >= 1
    assert not os.path.exists(os.path.join(c.home, "state.db"))
    r = c.gmux("usage", "--verify", "--remote", "gpu2")
    assert r.returncode == 0 and r.stdout.startswith(b"gpu2: "), r
    # A host whose books were tampered with says so; the other is fine.
    d2.stop()
    db = sqlite3.connect(os.path.join(d2.home, "state.db"))
    db.execute("DROP TRIGGER IF EXISTS ledger_append_only")
    db.execute("UPDATE ledger SET seats = 99")
    db.commit()
    db.close()
    d2.start(addr="127.0.0.1:%d" % d2.port)
    r = c.gmux("usage", "--verify")
    assert r.returncode == 1, r
    assert b"gpu1: the books are intact" in r.stdout
    assert b"gmux usage: gpu2: the books are broken: " in r.stderr
    assert not os.path.exists(os.path.join(c.home, "state.db"))


def test_verify_here_uses_the_daemon_and_never_makes_books(daemon,
                                                          make_client):
    daemon.start()
    daemon.gmux("run", "--share", "0.5", "--", "sleep", "1.2", check=0)
    r = daemon.gmux("usage", "--verify")
    assert r.returncode == 0 and r.stdout.startswith(
        b"the books are intact: "), r
    code, text = daemon.curl("GET", "/v1/usage/verify")
    assert code == 200 and '"intact": true' in text.replace('":true',
                                                            '": true')
    # A machine with neither a daemon nor books: an error, nothing made.
    c = make_client()
    r = c.gmux("usage", "--verify")
    assert r.returncode == 1
    assert b"no books here" in r.stderr
    assert not os.path.exists(os.path.join(c.home, "state.db"))
