"""Remote runs from a machine without a daemon: gmux serve --addr on one
or two loopback hosts (real TLS, pinned), a client with its own home.
Trust, sync, streaming, Ctrl-C, pull, and the commands that follow a job
to its host."""

import json
import os
import re
import signal
import stat
import subprocess
import time

from conftest import wait_for
from remotelib import job_file

TARGET_RE = re.compile(
    r"^gmux remote add NAME ([A-Za-z0-9_-]{43})@127\.0\.0\.1:(\d+)#([0-9a-f]{64})$")


def host_and_client(make_daemon, make_client, name="gpu1", **kw):
    d = make_daemon()
    target = d.serve_tls(**kw)
    c = make_client()
    r = c.add(name, target)
    assert r.returncode == 0, r.stderr
    return d, c


def test_serve_addr_prints_the_line_once_and_keeps_its_key(make_daemon):
    d = make_daemon()
    target = d.serve_tls()
    m = TARGET_RE.match(d.invite)
    assert m and int(m.group(2)) == d.port
    tls = os.path.join(d.home, "tls")
    assert stat.S_IMODE(os.stat(tls).st_mode) == 0o700
    for f in ("key.pem", "cert.pem", "tokens.json"):
        assert stat.S_IMODE(os.stat(os.path.join(tls, f)).st_mode) == 0o600
    tokens = open(os.path.join(tls, "tokens.json")).read()
    assert m.group(1) not in tokens          # hashed only
    d.stop()
    d.start(addr="127.0.0.1:%d" % d.port)
    assert d.invite is None                  # once
    # A new certificate for the same key: the pin holds.
    os.unlink(os.path.join(tls, "cert.pem"))
    d.stop()
    r = d.gmux("token", "add", d.env.get("USER", "root"))
    assert r.returncode != 0                 # no daemon: said so
    d.start(addr="127.0.0.1:%d" % d.port)
    r = d.gmux("token", "add", "alice", check=0)
    assert r.stdout.decode().strip().endswith("#" + m.group(3))


def test_remote_add_takes_stdin_and_warns_about_argv(make_daemon,
                                                      make_client):
    d = make_daemon()
    target = d.serve_tls()
    c = make_client()
    r = c.add("gpu1", target)
    assert r.returncode == 0 and b"added gpu1" in r.stdout, r
    r = c.gmux("remote", "add", "gpu2", target, check=0)
    assert b"warning" in r.stderr and b"ps" in r.stderr
    path = os.path.join(c.home, "remotes.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    ls = c.gmux("remote", "ls", check=0).stdout.decode()
    token = target.split("@")[0]
    assert "gpu1" in ls and "gpu2" in ls and token not in ls
    assert token not in c.gmux("remote", "ls", "--json", check=0).stdout.decode()
    a = c.json("remote", "ls", "--json")
    assert [x["default"] for x in a] == [True, False]
    c.gmux("remote", "default", "gpu2", check=0)
    a = c.json("remote", "ls", "--json")
    assert [x["default"] for x in a] == [False, True]
    c.gmux("remote", "rm", "gpu2", check=0)
    a = c.json("remote", "ls", "--json")
    assert [x["name"] for x in a] == ["gpu1"] and a[0]["default"]
    assert c.gmux("remote", "rm", "gpu2").returncode == 1
    # A pasted whole line is taken too.
    assert c.add("gpu3", d.invite).returncode == 0


def test_run_remote_streams_output_and_exit_code(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    os.makedirs(os.path.join(c.work, "src"))
    with open(os.path.join(c.work, "src", "data.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    with open(os.path.join(c.work, "big.bin"), "wb") as f:
        f.write(os.urandom(3 << 20))          # one large blob, PUT alone
    os.symlink("src/data.bin", os.path.join(c.work, "link"))
    script = ("cat link; printf 'e\\000rr' >&2; "
              "sha256sum big.bin >&2; exit 7")
    r = c.gmux("run", "--share", "0.25", "--", "sh", "-c", script, check=7)
    assert r.stdout == bytes(range(256)) * 4
    assert r.stderr.startswith(b"e\x00rr")
    import hashlib
    want = hashlib.sha256(open(os.path.join(c.work, "big.bin"),
                               "rb").read()).hexdigest()
    assert want.encode() in r.stderr
    jobs = c.json("ps", "-a", "--json")
    assert len(jobs) == 1 and jobs[0]["host"] == "gpu1"
    assert jobs[0]["exit_code"] == 7 and jobs[0]["share"] == 0.25
    assert jobs[0]["owner"] == d.json("ps", "-a", "--json")[0]["owner"]
    # The job ran in its tree under its job directory.
    work = os.path.join(d.home, "jobs", "j1", "work")
    assert os.path.islink(job_file(d.home, "j1", "link"))
    assert jobs[0]["cwd"] == work


def test_unchanged_rerun_sends_nothing(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    for i in range(50):
        with open(os.path.join(c.work, "f%02d.txt" % i), "w") as f:
            f.write("file %d\n" % i)
    time.sleep(0.05)
    r = c.gmux("-v", "run", "--", "true", check=0)
    first = re.search(rb"(\d+) files, (\d+) hashed, (\d+) sent", r.stderr)
    assert first and int(first.group(3)) == 50, r.stderr
    r = c.gmux("-v", "run", "--", "true", check=0)
    again = re.search(rb"(\d+) files, (\d+) hashed, (\d+) sent", r.stderr)
    assert again and int(again.group(3)) == 0, r.stderr
    with open(os.path.join(c.work, "f07.txt"), "w") as f:
        f.write("changed\n")
    time.sleep(0.05)
    r = c.gmux("-v", "run", "--", "cat", "f07.txt", check=0)
    assert r.stdout == b"changed\n"
    once = re.search(rb"(\d+) files, (\d+) hashed, (\d+) sent", r.stderr)
    assert once and int(once.group(3)) == 1, r.stderr


def test_pull_brings_results_back(make_daemon, make_client):
    d = make_daemon()
    target = d.serve_tls("-v")
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    script = ("mkdir -p out/sub; echo a > out/a.txt; "
              "head -c 300000 /dev/urandom > out/sub/b.bin; "
              "echo no > other.txt")
    c.gmux("run", "--pull", "out/", "--pull", "*.csv", "--", "sh", "-c",
           script, check=0)
    w = c.work
    assert open(os.path.join(w, "out", "a.txt")).read() == "a\n"
    host_b = job_file(d.home, "j1", "out/sub/b.bin")
    assert open(os.path.join(w, "out", "sub", "b.bin"), "rb").read() == \
        open(host_b, "rb").read()
    assert not os.path.exists(os.path.join(w, "other.txt"))
    leftovers = [f for _, _, fs in os.walk(w) for f in fs if "tmp" in f]
    assert leftovers == []
    # Again, the same results: nothing is fetched, what changed is.
    log = os.path.join(d.home, "gmux.log")
    gets = open(log).read().count("GET /v1/blobs/")
    assert gets == 2
    c.gmux("run", "--pull", "out/", "--", "sh", "-c",
           "mkdir -p out/sub; echo a > out/a.txt; echo b > out/sub/b.bin",
           check=0)
    assert open(log).read().count("GET /v1/blobs/") == gets + 1
    assert open(os.path.join(w, "out", "sub", "b.bin")).read() == "b\n"
    # --pull is for remote hosts only.
    assert c.gmux("--local", "run", "--pull", "x", "--", "true").returncode \
        != 0


def test_pull_never_writes_through_a_symlink(make_daemon, make_client,
                                            tmp_path):
    d, c = host_and_client(make_daemon, make_client)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), os.path.join(c.work, "out"))
    r = c.gmux("run", "--pull", "out/", "--", "sh", "-c",
               "rm -f out; mkdir out; echo evil > out/x")
    assert r.returncode != 0
    assert b"out/x" in r.stderr
    assert list(outside.iterdir()) == []


def test_ctrl_c_stops_the_remote_job_and_twice_detaches(make_daemon,
                                                       make_client):
    import subprocess as sp
    d, c = host_and_client(make_daemon, make_client)
    p = c.popen("run", "--", "sh", "-c", "echo up; sleep 100",
                stdout=sp.PIPE, stderr=sp.PIPE, bufsize=0)
    assert p.stdout.readline() == b"up\n"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert d.job("j1")["state"] == "stopped"
    # A job that ignores SIGTERM: the second Ctrl-C detaches.
    p = c.popen("run", "--", "sh", "-c", "trap '' TERM; echo up; "
                "while :; do sleep 0.1; done", stdout=sp.PIPE, stderr=sp.PIPE,
                bufsize=0)
    assert p.stdout.readline() == b"up\n"
    p.send_signal(signal.SIGINT)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert b"gpu1:j2" in err
    c.gmux("stop", "--grace", "0", "gpu1:j2", check=0)


def test_logs_stop_resize_find_the_jobs_host(make_daemon, make_client):
    d1 = make_daemon()
    t1 = d1.serve_tls()
    d2 = make_daemon()
    t2 = d2.serve_tls(fake="2xA100:40G")
    c = make_client()
    assert c.add("gpu1", t1).returncode == 0
    assert c.add("gpu2", t2).returncode == 0
    j = c.gmux("--remote", "gpu1", "run", "-d", "--share", "0.25", "--",
               "sh", "-c", "echo one; sleep 100", check=0).stdout.strip()
    assert j == b"gpu1:j1"
    c.gmux("--remote", "gpu2", "run", "-d", "--", "sh", "-c",
           "echo two", check=0)
    c.gmux("--remote", "gpu2", "run", "-d", "--share", "0.5", "--card",
           "1", "--", "sh", "-c", "echo three; sleep 100", check=0)
    ps = c.gmux("ps", check=0).stdout.decode()
    assert ps.splitlines()[0].split()[0] == "HOST"
    assert re.search(r"gpu1\s+j1\s", ps) and re.search(r"gpu2\s+j2\s", ps)
    cards = c.gmux("cards", check=0).stdout.decode()
    assert len(re.findall(r"^gpu1 +\d", cards, re.M)) == 1
    assert len(re.findall(r"^gpu2 +\d", cards, re.M)) == 2
    # j1 is on both hosts: the name must say which.
    r = c.gmux("logs", "j1")
    assert r.returncode == 1 and b"gpu1:j1" in r.stderr, r
    assert c.gmux("logs", "gpu2:j1", check=0).stdout == b"two\n"
    assert c.gmux("logs", "j2", check=0).stdout == b"three\n"   # gpu2 only
    r = c.gmux("resize", "gpu1:j1", "--share", "0.5", check=0)
    assert d1.job("j1")["share"] == 0.5
    c.gmux("stop", "gpu1:j1", "j2", check=0)
    assert d1.job("j1")["state"] == "stopped"
    assert d2.job("j2")["state"] == "stopped"
    u = c.gmux("usage", "--by", "owner", check=0).stdout.decode()
    assert "HOST" in u and "gpu1" in u and "gpu2" in u
    top = c.gmux("top", "--once", check=0).stdout.decode()
    assert "gpu1 card 0" in top and "gpu2 card 1" in top
    # --local with no daemon here: refused, no fallback.
    assert c.gmux("--local", "ps").returncode == 1


def test_a_job_of_another_owner_is_not_yours(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    line = d.gmux("token", "add", "alice", check=0).stdout.decode().strip()
    alice = make_client()
    assert alice.add("gpu1", line.split()[-1]).returncode == 0
    j = alice.gmux("run", "-d", "--", "sleep", "100", check=0).stdout.strip()
    assert alice.json("ps", "--json")[0]["owner"] == "alice"
    r = alice.gmux("stop", j.decode())
    assert r.returncode == 0
    # The daemon's own user (the first token) may act on any job.
    j = alice.gmux("run", "-d", "--", "sleep", "100", check=0).stdout.strip()
    bob_line = d.gmux("token", "add", "bob", check=0).stdout.decode().split()[-1]
    bob = make_client()
    bob.add("gpu1", bob_line)
    r = bob.gmux("stop", j.decode())
    assert r.returncode == 1 and b"no job" in r.stderr
    c.gmux("stop", "--grace", "0", j.decode(), check=0)


def test_a_token_lists_only_its_owners_jobs(make_daemon, make_client):
    """GET /v1/jobs over TCP: a token sees its owner's jobs (their argv,
    cwd and reasons are the owner's business); the daemon's own user's
    token and the host's socket see every job."""
    d, c = host_and_client(make_daemon, make_client)
    alice, bob = make_client(), make_client()
    for who, cl in (("alice", alice), ("bob", bob)):
        line = d.gmux("token", "add", who, check=0).stdout.decode().split()
        assert cl.add("gpu1", line[-1]).returncode == 0
    ja = alice.gmux("run", "-d", "--share", "0.25", "--", "sleep", "100",
                    check=0).stdout.strip().decode().split(":")[-1]
    jb = bob.gmux("run", "-d", "--share", "0.25", "--", "true",
                  check=0).stdout.strip().decode().split(":")[-1]
    d.wait_state(jb, "exited")
    ids = lambda cl: sorted(j["id"] for j in cl.json("ps", "-a", "--json"))
    assert ids(bob) == [jb]
    assert ids(alice) == [ja]
    assert ids(c) == sorted([ja, jb])
    assert ids(d) == sorted([ja, jb])
    d.gmux("stop", "--grace", "0", ja, check=0)


def test_a_daemon_here_wins_unless_told_or_named(make_daemon):
    d = make_daemon()
    target = d.serve_tls()
    here = make_daemon()
    here.start()
    here.gmux("remote", "add", "gpu1", input=(target + "\n").encode(),
              check=0)
    assert here.gmux("run", "--", "echo", "local", check=0).stdout == \
        b"local\n"
    assert len(here.json("ps", "-a", "--json")) == 1
    assert d.json("ps", "-a", "--json") == []
    r = here.gmux("run", "--remote", "gpu1", "-d", "--", "echo", "far",
                  check=0)
    assert r.stdout == b"gpu1:j1\n"
    d.wait_state("j1", "exited")
    assert here.gmux("logs", "gpu1:j1", check=0).stdout == b"far\n"
    ps = here.gmux("--remote", "gpu1", "ps", "-a", check=0).stdout.decode()
    assert ps.startswith("ID ") and "echo far" in ps
    assert "echo local" in here.gmux("ps", "-a", check=0).stdout.decode()


def test_ipv6_loopback(make_daemon, make_client):
    d = make_daemon()
    port = __import__("conftest").free_port()
    d.start(addr="[::1]:%d" % port)
    assert d.invite and "@[::1]:%d#" % port in d.invite, d.invite
    c = make_client()
    assert c.add("v6", d.invite.split()[-1]).returncode == 0
    r = c.gmux("run", "--", "echo", "six")
    assert r.returncode == 0 and r.stdout == b"six\n", r


def test_large_files_go_up_in_parts_several_at_once(make_daemon,
                                                   make_client):
    d = make_daemon()
    target = d.serve_tls("-v")
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    sizes = {"a.bin": 20 << 20, "b.bin": 9 << 20, "c.bin": 9 << 20,
             "d.bin": 9 << 20, "e.bin": 300 << 10}
    import hashlib
    want = []
    for name, size in sorted(sizes.items()):
        data = os.urandom(size)
        with open(os.path.join(c.work, name), "wb") as f:
            f.write(data)
        want.append("%s  %s" % (hashlib.sha256(data).hexdigest(), name))
    r = c.gmux("run", "--", "sh", "-c", "sha256sum *.bin", timeout=120)
    assert r.returncode == 0, r
    assert r.stdout.decode().splitlines() == want
    log = open(os.path.join(d.home, "gmux.log")).read()
    # 20 MiB in three parts of 8 MiB, 9 MiB in two, 300 KiB whole.
    assert log.count("api_dispatch: PUT /v1/blobs/") == 3 + 2 * 3 + 1
    assert os.listdir(os.path.join(d.home, "blobs", "tmp")) == []
