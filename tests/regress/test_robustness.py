"""Regression tests for what review found in the core: each failed before
its fix."""

import fcntl
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import GMUX, wait_for


def test_command_is_found_in_the_callers_path(daemon, tmp_path):
    daemon.start()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "mytool"
    tool.write_text("#!/bin/sh\necho mine\n")
    tool.chmod(0o755)
    env = dict(daemon.env, PATH="%s:/usr/bin:/bin" % bindir)
    r = subprocess.run([GMUX, "run", "--", "mytool"], env=env,
                       capture_output=True)
    assert r.returncode == 0 and r.stdout == b"mine\n", r.stderr


def test_nonblocking_stdout_loses_nothing(daemon):
    daemon.start()
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) |
                os.O_NONBLOCK)
    p = subprocess.Popen([GMUX, "run", "--", "head", "-c", "2000000",
                          "/dev/zero"], env=daemon.env, stdout=w)
    os.close(w)
    time.sleep(1)
    got = 0
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        got += len(b)
    assert p.wait(30) == 0
    assert got == 2000000


def test_arguments_that_are_not_utf8_are_refused(daemon):
    daemon.start()
    r = subprocess.run([GMUX.encode(), b"run", b"--", b"printf", b"\xff"],
                       env=daemon.env, capture_output=True)
    assert r.returncode == 2 and b"UTF-8" in r.stderr


def test_a_lost_keeper_takes_its_job_with_it(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--", "sleep", "1000", check=0)
    pid = wait_for(lambda: daemon.job("j1").get("pid"), what="pid")
    keeper = int(open("/proc/%d/stat" % pid).read().rpartition(")")[2]
                 .split()[1])
    os.kill(keeper, signal.SIGKILL)
    j = daemon.wait_state("j1", "failed")
    assert "keeper" in j["reason"]
    wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
             open("/proc/%d/stat" % pid).read().rpartition(")")[2]
             .split()[0] == "Z", what="the job to die")


def test_keeper_ignores_term(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--", "sleep", "1000", check=0)
    pid = wait_for(lambda: daemon.job("j1").get("pid"), what="pid")
    keeper = int(open("/proc/%d/stat" % pid).read().rpartition(")")[2]
                 .split()[1])
    os.kill(keeper, signal.SIGTERM)
    time.sleep(0.3)
    assert daemon.job("j1")["state"] == "running"
    daemon.gmux("stop", "--grace", "0", "j1", check=0)


def test_stop_sends_one_term(daemon, tmp_path):
    daemon.start()
    log = tmp_path / "terms"
    script = ("import signal,sys,time\n"
              "n=0\n"
              "def h(*a):\n"
              "    global n\n"
              "    n+=1\n"
              "    open(%r,'a').write('TERM\\n')\n"
              "    if n>1: sys.exit(99)\n"
              "signal.signal(signal.SIGTERM,h)\n"
              "print('ready',flush=True)\n"
              "t=time.time()\n"
              "while time.time()-t<1.5: time.sleep(0.05)\n"
              "sys.exit(0)\n" % str(log))
    daemon.gmux("run", "-d", "--", "/usr/bin/python3", "-c", script, check=0)
    wait_for(lambda: b"ready" in open(os.path.join(
        daemon.home, "jobs", "j1", "log"), "rb").read(), what="ready")
    daemon.gmux("stop", "--grace", "5s", "j1", check=0)
    assert log.read_text() == "TERM\n"
    assert daemon.job("j1")["exit_code"] == 0


def test_logs_from_the_end_of_a_long_log_is_quick(daemon):
    daemon.start()
    daemon.gmux("run", "--", "/usr/bin/python3", "-c",
                "import sys\nfor i in range(400000):\n"
                "    sys.stdout.write('%08d\\n' % i); sys.stdout.flush()",
                check=0)
    size = 400000 * 9
    t = time.monotonic()
    r = daemon.gmux("logs", "--from", str(size - 18), "j1", check=0)
    assert r.stdout == b"00399998\n00399999\n"
    assert time.monotonic() - t < 2


def test_ctrl_c_before_the_job_has_an_id_still_stops_it(daemon):
    daemon.start()
    pid = daemon.pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        p = daemon.popen("run", "--", "sleep", "300", stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        time.sleep(0.2)
    finally:
        os.kill(pid, signal.SIGCONT)
    out, err = p.communicate(timeout=20)
    j = daemon.wait_state("j1", ("stopped", "exited"))
    assert j["state"] == "stopped", (j, err)
    assert p.returncode == 143, err


def test_a_huge_command_line_still_streams(daemon):
    daemon.start()
    args = ["x" * 100000] * 11
    r = daemon.gmux("run", "--", "sh", "-c", "echo $#; exit 3", "sh", *args)
    assert r.returncode == 3 and r.stdout == b"11\n", r.stderr


def test_a_huge_grace_is_refused(daemon):
    daemon.start()
    daemon.gmux("run", "-d", "--", "sleep", "100", check=0)
    code, body = daemon.curl("POST", "/v1/jobs/j1/stop",
                             '{"grace_ms": 9223372036854775000}')
    assert code == 400 and "grace_ms" in json.loads(body)["error"]
    assert daemon.job("j1")["state"] == "running"
    daemon.gmux("stop", "--grace", "0", "j1", check=0)


def test_ended_jobs_forget_the_callers_environment(daemon):
    daemon.start()
    env = dict(daemon.env, MY_SECRET="hunter2")
    subprocess.run([GMUX, "run", "--", "true"], env=env, check=True)
    daemon.wait_state("j1", "exited")
    daemon.stop()
    db = open(os.path.join(daemon.home, "state.db"), "rb").read()
    assert b"hunter2" not in db


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs")
def test_a_full_disk_keeps_the_log_whole(make_daemon):
    d = make_daemon()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs",
                    d.home], check=True)
    try:
        d.start()
        r = d.gmux("run", "--", "sh", "-c",
                   "head -c 2000000 /dev/zero | tr '\\0' x; echo; echo END")
        assert r.returncode == 0
        assert b"lost" in r.stderr
        # every frame in the log is whole: logs reads it to the end
        r = d.gmux("logs", "j1")
        assert r.returncode == 0
        d.stop()
    finally:
        subprocess.run(["umount", "-l", d.home])


def test_a_script_without_a_shebang_runs_under_sh(daemon, tmp_path):
    daemon.start()
    script = tmp_path / "plain"
    script.write_text("echo from sh $1\n")
    script.chmod(0o755)
    r = daemon.gmux("run", "--", str(script), "arg")
    assert r.returncode == 0 and r.stdout == b"from sh arg\n", r.stderr


def test_a_directory_on_path_is_passed_over(daemon, tmp_path):
    daemon.start()
    (tmp_path / "a" / "mytool").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    tool = tmp_path / "b" / "mytool"
    tool.write_text("#!/bin/sh\necho found\n")
    tool.chmod(0o755)
    env = dict(daemon.env, PATH="%s/a:%s/b:/usr/bin:/bin" % (tmp_path,
                                                           tmp_path))
    r = subprocess.run([GMUX, "run", "--", "mytool"], env=env,
                       capture_output=True)
    assert r.returncode == 0 and r.stdout == b"found\n", r.stderr


def test_a_job_does_not_inherit_what_the_daemon_ignores(make_daemon):
    d = make_daemon()
    cmd = [GMUX, "serve", "-d", "--fake", "1xH100:80G"]
    subprocess.run(cmd, env=d.env, check=True, preexec_fn=lambda: (
        signal.signal(signal.SIGQUIT, signal.SIG_IGN),
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)))
    d.running = d.pid()
    r = d.gmux("run", "--", "grep", "SigIgn", "/proc/self/status")
    # the classic signals (1-31); 32 and up are glibc's and the runner's
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[1], 16) & 0x7fffffff == 0, r.stdout


def test_a_keepers_log_lines_go_to_the_daemons_log(make_daemon):
    # A detached daemon logs to gmux.log through a descriptor its keepers
    # close; a keeper logging (here its fence refusing connects, at -v)
    # wrote into whatever took that number, and the job's output was lost.
    d = make_daemon()
    d.start("-v")
    prog = ("import socket\n"
            "for p in (1, 2, 3):\n"
            "    try:\n"
            "        socket.create_connection(('127.0.0.1', p))\n"
            "    except OSError as e:\n"
            "        print('refused', p, e.errno)\n"
            "print('after')\n")
    r = d.gmux("run", "--allow", "127.0.0.1:9", "--", "python3", "-c", prog,
               timeout=30)
    assert r.returncode == 0, r
    assert r.stdout == b"refused 1 111\nrefused 2 111\nrefused 3 111\n" \
        b"after\n", r
    assert b"connection lost" not in r.stderr
    with open(os.path.join(d.home, "gmux.log"), "rb") as f:
        assert b"refused" in f.read()


def test_run_without_a_daemon_says_why(daemon):
    """run -d with no daemon and no host exited 125 saying nothing."""
    for args in (["run", "--", "true"], ["run", "-d", "--", "true"]):
        r = daemon.gmux(*args)
        assert r.returncode == 125, r
        assert b"no gmux daemon serves" in r.stderr, r
        assert len(r.stderr.splitlines()) == 1, r


def test_bad_requests_say_what_is_wrong(daemon, tmp_path):
    """An argv entry over 128 KiB and a nested array were both told
    "must be a string without NUL bytes"; a share of 0.1 came back as
    0.10000000000000001."""
    daemon.start()
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"argv": ["echo", "x" * (129 << 10)],
                               "cwd": str(tmp_path)}))
    code, text = daemon.curl("POST", "/v1/jobs", "@%s" % big)
    assert code == 400, text
    assert json.loads(text)["error"] == "argv[1]: is over 128 KiB"
    code, text = daemon.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["echo", ["a"]], "cwd": str(tmp_path)}))
    assert code == 400, text
    assert json.loads(text)["error"] == "argv[1]: must be a string"
    code, text = daemon.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["echo"], "env": ["A=1", "B"], "cwd": str(tmp_path)}))
    assert code == 400, text
    assert json.loads(text)["error"] == "env[1]: must be a NAME=VALUE string"
    r = daemon.gmux("run", "-d", "--share", "0.1", "--", "sleep", "100",
                    check=0)
    jid = r.stdout.decode().strip()
    code, text = daemon.curl("GET", "/v1/jobs/" + jid)
    assert code == 200 and '"share":0.1,' in text, text
    out = daemon.gmux("ps", "--json", check=0).stdout
    assert b'"share": 0.1,' in out and b"0.1000000" not in out, out


def raw_http(daemon, text):
    """Sends text as it is on the daemon's socket; returns the status
    line, the headers (lower-case names) and the body."""
    import socket
    s = socket.socket(socket.AF_UNIX)
    s.connect(daemon.socket)
    s.sendall(text)
    s.settimeout(10)
    got = b""
    while True:
        try:
            b = s.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        got += b
        head, sep, body = got.partition(b"\r\n\r\n")
        if sep and (b"content-length" not in head.lower() or
                    len(body) >= int(head.lower().split(
                        b"content-length:")[1].split(b"\r\n")[0])):
            break
    s.close()
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in
               (line.partition(":") for line in lines[1:])}
    return lines[0], headers, body


def test_http_strictness(daemon):
    """Two Content-Length headers were read as the first; HEAD got 405
    naming the method "?"; OPTIONS got evhttp's HTML 501; a 405 had no
    Allow."""
    daemon.start()
    st, h, body = raw_http(daemon, b"POST /v1/jobs HTTP/1.1\r\nHost: g\r\n"
                           b"Content-Length: 2\r\nContent-Length: 40\r\n"
                           b"\r\n{}")
    assert st.startswith("HTTP/1.1 400"), (st, body)
    assert b"Content-Length" in body and h.get("connection") == "close"
    st, h, body = raw_http(daemon, b"HEAD /v1/version HTTP/1.1\r\n"
                           b"Host: g\r\nConnection: close\r\n\r\n")
    assert st.startswith("HTTP/1.1 200") and body == b"", (st, body)
    st, h, body = raw_http(daemon, b"OPTIONS /v1/jobs HTTP/1.1\r\n"
                           b"Host: g\r\nConnection: close\r\n\r\n")
    assert st.startswith("HTTP/1.1 204") and body == b"", (st, body)
    assert h["allow"] == "GET, HEAD, POST, OPTIONS", h
    for method in ("DELETE", "TRACE"):
        st, h, body = raw_http(daemon, method.encode() +
                               b" /v1/version HTTP/1.1\r\nHost: g\r\n"
                               b"Connection: close\r\n\r\n")
        assert st.startswith("HTTP/1.1 405"), (st, body)
        assert h["allow"] == "GET, HEAD, OPTIONS", h
        assert json.loads(body)["error"] == \
            "%s is not allowed on /v1/version" % method
    # HEAD of a stream (a job's log) and of /metrics: headers only.
    jid = daemon.gmux("run", "-d", "--", "sleep", "100",
                      check=0).stdout.decode().strip()
    for path in ("/v1/jobs/%s/log?follow=1" % jid, "/metrics"):
        st, h, body = raw_http(daemon, b"HEAD %s HTTP/1.1\r\nHost: g\r\n"
                               b"Connection: close\r\n\r\n" %
                               path.encode())
        assert st.startswith("HTTP/1.1 200") and body == b"", (path, body)
    code, text = daemon.curl("GET", "/v1/version")
    assert code == 200


class LosingProxy:
    """Stands at the daemon's socket path (the daemon's own moved aside):
    hands the first connection's request to the daemon and drops the
    reply, as a daemon killed while it answered would; later connections
    pass through."""

    def __init__(self, path):
        import socket
        import threading
        self.path = path
        self.real = path + ".real"
        os.rename(path, self.real)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(path)
        self.sock.listen(8)
        self.requests = 0
        self.first = b""
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        import socket
        import threading
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.requests += 1
            d = socket.socket(socket.AF_UNIX)
            d.connect(self.real)
            if self.requests == 1:
                threading.Thread(target=self.lose, args=(c, d, self),
                                 daemon=True).start()
                continue
            for a, b in ((c, d), (d, c)):
                threading.Thread(target=self.pipe, args=(a, b),
                                 daemon=True).start()

    @staticmethod
    def pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        try:
            b.shutdown(1)
        except OSError:
            pass

    @staticmethod
    def lose(c, d, proxy):
        c.settimeout(5)
        got = b""
        while b"\r\n\r\n" not in got:
            got += c.recv(65536)
        head, _, body = got.partition(b"\r\n\r\n")
        n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(body) < n:
            body += c.recv(65536)
        proxy.first = head + b"\r\n\r\n" + body
        d.sendall(proxy.first)
        d.recv(65536)                   # the daemon answered; it is lost
        c.close()
        d.close()

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rename(self.real, self.path)


def test_a_lost_reply_makes_no_second_job(daemon):
    """A run -d whose reply was lost (the daemon had made the job) exited
    125, and running it again made a second job.  Each submission carries
    an idempotency key, and the CLI sends it once more."""
    daemon.start()
    proxy = LosingProxy(daemon.socket)
    try:
        r = daemon.gmux("run", "-d", "--", "sleep", "100")
        assert r.returncode == 0 and r.stdout.strip() == b"j1", r
        assert proxy.requests == 2
        # In the query, which a daemon older than the key ignores.
        line, _, rest = proxy.first.partition(b"\r\n")
        assert line.startswith(b"POST /v1/jobs?idempotency_key=run-"), line
        assert b"idempotency_key" not in rest
    finally:
        proxy.close()
    assert [j["id"] for j in daemon.json("ps", "--json")] == ["j1"]
    # A key of the caller's own: the same job, however often it is sent.
    ids = [daemon.gmux("run", "-d", "--idempotency-key", "nightly-7", "--",
                       "sleep", "100", check=0).stdout.strip()
           for _ in range(2)]
    assert ids == [b"j2", b"j2"], ids
    r = daemon.gmux("run", "-d", "--idempotency-key", "a b", "--", "true")
    assert r.returncode == 2 and b"--idempotency-key" in r.stderr, r
    code, text = daemon.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "cwd": "/", "idempotency_key": ""}))
    assert code == 400 and "idempotency_key" in text, text
    code, text = daemon.curl("POST", "/v1/jobs?idempotency_key=x",
                             json.dumps({"argv": ["true"], "cwd": "/",
                                         "idempotency_key": "y"}))
    assert code == 400 and "is not the body's" in text, text
    body = json.dumps({"argv": ["sleep", "100"], "cwd": "/"})
    code, text = daemon.curl("POST", "/v1/jobs?idempotency_key=nightly-7",
                             body)
    assert code == 200 and json.loads(text)["id"] == "j2", text
