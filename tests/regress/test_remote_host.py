"""A remote host under load and under abuse: it copies a job's tree off its
loop (the job waits, "preparing its files", and everything else is served
meanwhile), and it bounds what a connection that has not shown a token can
cost: the body it may send, the time it may take, how many there are."""

import fcntl
import hashlib
import os
import re
import socket
import ssl
import statistics
import time

from conftest import wait_for
from remotelib import client_context, https_json, rss_kb


def big_tree(root, dirs, files=100):
    """dirs x files small files."""
    for i in range(dirs):
        sub = os.path.join(root, "d%03d" % i)
        os.makedirs(sub)
        for k in range(files):
            with open(os.path.join(sub, "f%05d" % k), "wb") as f:
                f.write(b"%d %d\n" % (i, k) * 64)


def host_and_client(make_daemon, make_client, *args):
    d = make_daemon()
    target = d.serve_tls(*args)
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    return d, c


def lock_free(home):
    with open(os.path.join(home, "gmux.pid")) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def host_job(d, jid):
    return next(j for j in d.json("ps", "-a", "--json") if j["id"] == jid)


def test_the_tree_is_copied_off_the_loop(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    big_tree(c.work, 40)
    r = c.gmux("run", "-d", "--", "sh", "-c", "find . -type f | wc -l",
               check=0)
    assert r.stdout.strip() == b"gpu1:j1"
    # The job exists at once and waits for its files; the host answers.
    took, preparing = [], 0
    while True:
        t = time.monotonic()
        job = host_job(d, "j1")
        took.append(time.monotonic() - t)
        if job["state"] != "queued":
            break
        assert job["reason"] == "preparing its files", job
        preparing += 1
    print("gmux ps while 4,000 files are copied: %d calls, median %.1f ms, "
          "max %.1f ms" % (len(took), statistics.median(took) * 1000,
                           max(took) * 1000))
    assert preparing >= 3, took
    assert statistics.median(took) < 0.1, took
    assert max(took) < 0.5, took
    d.wait_state("j1", "exited")
    assert c.gmux("logs", "gpu1:j1", check=0).stdout.strip() == b"4000"
    # Stopped while its files are copied: it never runs, its copy goes.
    # Each try is a tree the host has not had (one already stored is not
    # made again) of 2,000 new files, so its copy outlasts the stop; a
    # host quick enough to start the job first is tried again, and one
    # stop in five must land while the files are copied.
    for attempt in range(2, 7):
        big_tree(os.path.join(c.work, "new%d" % attempt), 20)
        r = c.gmux("run", "-d", "--", "touch", "/tmp/never", check=0)
        jid = "j%d" % attempt
        assert r.stdout.strip() == b"gpu1:" + jid.encode()
        c.gmux("stop", "gpu1:" + jid, check=0)
        job = d.wait_state(jid, ("stopped", "exited", "failed"))
        if job["started"] is None:
            break
    else:
        raise AssertionError("every job started before its stop")
    assert job["state"] == "stopped" and job["exit_code"] is None, job
    work = os.path.join(d.home, "jobs", jid, "work")
    wait_for(lambda: not os.path.exists(work), 20, what="the copy to go")
    assert host_job(d, jid)["started"] is None


def test_a_tree_that_cannot_be_made_fails_its_job(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    with open(os.path.join(c.work, "a.txt"), "w") as f:
        f.write("a\n")
    c.gmux("run", "--", "true", check=0)
    # The store's file of a.txt goes behind the daemon's back: the tree is
    # found complete (nothing is sent) but cannot be made.
    blobs = os.path.join(d.home, "blobs")
    digest = hashlib.sha256(b"a\n").hexdigest()
    os.unlink(os.path.join(blobs, digest[:2], digest))
    # (A new tree, and a.txt with a new mode: a tree or a file made
    # before is not made again, and would need no blob.)
    os.chmod(os.path.join(c.work, "a.txt"), 0o755)
    r = c.gmux("run", "--", "true")
    assert r.returncode == 125
    assert r.stderr.startswith(b"gmux run: gpu1:j2 failed: its files "
                               b"could not be prepared: a.txt"), r.stderr
    job = host_job(d, "j2")
    assert job["state"] == "failed", job
    assert job["reason"].startswith("its files could not be prepared: "
                                    "a.txt"), job
    assert not os.path.exists(os.path.join(d.home, "jobs", "j2", "work"))
    assert d.gmux("ps").returncode == 0


def test_a_restart_while_preparing_fails_the_job(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    big_tree(c.work, 60)
    c.gmux("run", "--", "true", check=0)            # the blobs are there
    # (A new tree, so that it is made: one made before is not again.)
    with open(os.path.join(c.work, "new.txt"), "w") as f:
        f.write("new\n")
    r = c.gmux("run", "-d", "--", "true", check=0)
    assert r.stdout.strip() == b"gpu1:j2"
    assert host_job(d, "j2")["reason"] == "preparing its files"
    d.kill9()
    # Its copying thread may outlive the killed main thread for a moment,
    # holding the daemon's lock: the next daemon starts once it is gone.
    wait_for(lambda: lock_free(d.home), 10, what="the old daemon's lock")
    d.start(addr="127.0.0.1:%d" % d.port)
    job = host_job(d, "j2")
    assert job["state"] == "failed" and "preparing" in job["reason"], job
    work = os.path.join(d.home, "jobs", "j2", "work")
    wait_for(lambda: not os.path.exists(work), 20, what="j2's copy to go")
    assert c.gmux("run", "--", "true").returncode == 0


def tls_connect(port, timeout=10):
    ctx = client_context()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return ctx.wrap_socket(s)


def upload(port, token, total):
    """PUTs a body of total bytes; returns how many went before the host
    cut the connection (total if it did not), and the status if any."""
    t = tls_connect(port)
    head = "PUT /v1/blobs/%s HTTP/1.1\r\nHost: x\r\n" % ("0" * 64)
    if token is not None:
        head += "Authorization: Bearer %s\r\n" % token
    t.sendall((head + "Content-Length: %d\r\n\r\n" % total).encode())
    chunk, sent = b"x" * 65536, 0
    try:
        while sent < total:
            sent += t.send(chunk[:total - sent])
    except (ssl.SSLError, OSError):
        pass
    try:
        reply = t.recv(4096)
    except (ssl.SSLError, OSError):
        reply = b""
    t.close()
    return sent, reply


def serving(d):
    st, _ = https_json(d.port, "GET", "/v1/version",
                       token=d.target.split("@")[0])
    return st == 200 and d.gmux("ps").returncode == 0


def test_a_body_without_a_token_is_cut_off(make_daemon):
    d = make_daemon()
    token = d.serve_tls().split("@")[0]
    before = rss_kb(d.pid())
    for bad in (None, "A" * 43):
        t = time.monotonic()
        sent, reply = upload(d.port, bad, 100 << 20)
        print("100 MB without a good token: cut after %d bytes, %.2f s" %
              (sent, time.monotonic() - t))
        assert sent < (16 << 20) and reply == b"", (sent, reply)
        assert rss_kb(d.pid()) < before + 16 * 1024
    # A small one gets its 401; a good token may send a large body.
    st, j = https_json(d.port, "PUT", "/v1/blobs/" + "0" * 64, b"x" * 1000)
    assert st == 401 and j["error"] == "a token is needed"
    # (Read whole, then refused: no manifest asked for that blob.)
    sent, reply = upload(d.port, token, 20 << 20)
    assert sent == 20 << 20 and reply.startswith(b"HTTP/1.1 409"), reply
    assert serving(d)


def test_silent_connections_are_dropped_and_capped(make_daemon):
    d = make_daemon()
    d.env["GMUX_AUTH_TIMEOUT"] = "1"
    d.env["GMUX_TCP_CONNECTIONS_MAX"] = "4"
    # (no grace for a handshake under way: the oldest goes at once)
    d.env["GMUX_TCP_ANON_GRACE_MS"] = "0"
    d.serve_tls()
    # Four that say nothing (no TLS handshake, or no request after it).
    quiet = [socket.create_connection(("127.0.0.1", d.port))
             for _ in range(2)]
    quiet += [tls_connect(d.port) for _ in range(2)]
    # (the loop has taken them in: it answered a request since)
    assert d.gmux("ps").returncode == 0
    # A fifth makes room: the oldest without a token is cut at once (a
    # client with a token still gets in); the host answers on its socket.
    s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    t = time.monotonic()
    quiet[0].settimeout(5)
    assert quiet[0].recv(100) == b""
    assert time.monotonic() - t < 0.5
    quiet[0].close()
    quiet[0] = s
    assert d.gmux("ps").returncode == 0
    # The silent ones go after AUTH_TIMEOUT (1 s here), and the host
    # serves TLS again.
    t = time.monotonic()
    for q in quiet:
        q.settimeout(5)
        try:
            assert q.recv(100) == b""
        except (ssl.SSLError, ConnectionResetError):
            pass
        q.close()
    took = time.monotonic() - t
    assert 0.5 < took < 3, took
    assert serving(d)
    # A stream that follows a job is trusted: it is not cut after 1 s.
    c_target = d.target
    token = c_target.split("@")[0]
    r = d.gmux("run", "-d", "--", "sh", "-c", "sleep 2; echo late", check=0)
    jid = r.stdout.decode().strip()
    t = tls_connect(d.port)
    t.sendall(("GET /v1/jobs/%s/log?follow=1 HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer %s\r\n\r\n" % (jid, token)).encode())
    data = b""
    while b"late" not in data:
        chunk = t.recv(65536)
        assert chunk, data
        data += chunk
    t.close()


def session_file(c, target):
    """Where the client keeps its TLS session with target's host and pin."""
    host_port, pin = target.split("@")[1].rsplit("#", 1)
    host, port = host_port.rsplit(":", 1)
    key = hashlib.sha256(("%s %s %s" % (host, port, pin)).encode())
    return os.path.join(c.home, "tls", "sessions", key.hexdigest()[:32])


def handshakes(r):
    return re.findall(rb"tls_handshake: [^:]+:\d+: (\w+)", r.stderr)


def test_commands_resume_the_tls_session(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    path = session_file(c, d.target)
    r = c.gmux("-v", "ps", check=0)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    r = c.gmux("-v", "run", "--", "echo", "hi", check=0)
    assert r.stdout == b"hi\n"
    assert handshakes(r) == [b"session"], r.stderr      # "session resumed"
    # A restarted host cannot open the old ticket: a full handshake, and
    # a new session is kept.
    before = open(path, "rb").read()
    d.stop()
    d.start(addr="127.0.0.1:%d" % d.port)
    r = c.gmux("-v", "ps", check=0)
    assert handshakes(r) == [b"full"], r.stderr
    assert open(path, "rb").read() != before
    assert handshakes(c.gmux("-v", "ps", check=0)) == [b"session"]


def plant(c, src_target, dst_target, mode=0o600):
    """Copies the session kept for src_target to where dst_target's goes."""
    with open(session_file(c, src_target), "rb") as f:
        data = f.read()
    path = session_file(c, dst_target)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    return path, data


def test_a_session_of_another_pin_is_never_offered(make_daemon,
                                                   make_client):
    d, c = host_and_client(make_daemon, make_client)
    c.gmux("ps", check=0)
    # The same host under another pin (as if its key had been replaced),
    # with this host's real session planted where that pin's would be:
    # were it offered, the host would take the ticket and show no
    # certificate.  The client sees the session's certificate is not of
    # the pin, removes the file and makes a full handshake, which fails.
    other = make_daemon()
    wrong = other.serve_tls()
    bad = d.target.rsplit("#", 1)[0] + "#" + wrong.rsplit("#", 1)[1]
    assert c.add("gpu2", bad, "--no-check").returncode == 0
    planted, _ = plant(c, d.target, bad)
    r = c.gmux("-v", "--remote", "gpu2", "ps")
    assert r.returncode == 1 and b"impostor" in r.stderr, r
    assert b"session refused" in r.stderr, r.stderr
    assert handshakes(r) == [], r.stderr
    assert not os.path.exists(planted)
    r = c.gmux("--remote", "gpu2", "ps")
    assert r.returncode == 1 and b"impostor" in r.stderr
    assert c.gmux("--remote", "gpu1", "ps").returncode == 0
    # Another host's session where this host's goes: refused, removed, and
    # a full handshake keeps a session of this host's there.
    c.add("gpu3", wrong)
    c.gmux("--remote", "gpu3", "ps", check=0)
    path, theirs = plant(c, wrong, d.target)
    r = c.gmux("-v", "--remote", "gpu1", "ps")
    assert r.returncode == 0, r
    assert b"session refused" in r.stderr, r.stderr
    assert handshakes(r) == [b"full"], r.stderr
    assert open(path, "rb").read() != theirs
    assert handshakes(c.gmux("-v", "--remote", "gpu1", "ps")) == [b"session"]


def test_a_session_file_others_can_read_is_not_offered(make_daemon,
                                                       make_client):
    d, c = host_and_client(make_daemon, make_client)
    c.gmux("ps", check=0)
    path = session_file(c, d.target)
    os.chmod(path, 0o640)
    r = c.gmux("-v", "ps", check=0)
    assert handshakes(r) == [b"full"], r.stderr
    # Nor is one in a directory others can enter: it is made 0700 again
    # when the next session is kept.
    os.chmod(os.path.dirname(path), 0o755)
    os.unlink(path)
    c.gmux("ps", check=0)
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert handshakes(c.gmux("-v", "ps", check=0)) == [b"session"]
