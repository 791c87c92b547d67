"""A job that came over TCP runs in a jail (docs/isolation.md, "Remote
jobs"): from inside it, nothing of the host's own (its key, its tokens, its
state, other owners' trees, the daemon's socket, other keepers' sockets)
can be read or reached, and no process outside the job can be signalled,
by name or through /proc.  Each escape is also tried from a local job (not
confined) with the same probe, which must get through: so a pass means the
jail stopped it.  What a remote job needs still works."""

import json
import os
import socket
import subprocess

import pytest

from conftest import GMUX, Daemon, free_port, wait_for
from remotelib import https_json, job_tree, stored_tree

PY = "/usr/bin/python3"

# One probe, run both confined (remote) and not (local).  argv[1] is a JSON
# list of [name, op, args...]; it prints {name: "ok" or an errno name}.
PROBE = r'''
import errno, json, os, signal, socket, subprocess, sys

def read(path):
    with open(path, "rb") as f:
        f.read(1)

def listdir(path):
    os.listdir(path)

def readlink(path):
    os.readlink(path)

def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    s.close()

def abstract(name):
    connect("\0" + name)

def kill(pid):
    os.kill(int(pid), signal.SIGCONT)

def link(src, dst):
    os.link(src, dst)

def write(path):
    with open(path, "w") as f:
        f.write("written\n")

def chmod(path, mode):
    os.chmod(path, int(mode, 8))

def fchmod(path, mode):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fchmod(fd, int(mode, 8))
    finally:
        os.close(fd)

def chown(path):
    os.chown(path, os.getuid(), -1)

def limit(pid):
    import resource
    pid = int(pid)
    resource.prlimit(pid, resource.RLIMIT_CORE,
                     resource.prlimit(pid, resource.RLIMIT_CORE))

def renice(pid):
    pid = int(pid)
    os.setpriority(os.PRIO_PROCESS, pid,
                   os.getpriority(os.PRIO_PROCESS, pid))

def schedule(pid):
    pid = int(pid)
    os.sched_setscheduler(pid, os.sched_getscheduler(pid),
                          os.sched_param(0))

def script(name):
    with open(name, "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(name, 0o755)
    run("./" + name)
    os.nice(1)
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

def run(*argv):
    subprocess.run(list(argv), check=True, stdout=subprocess.DEVNULL)

def umount(path):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(path.encode(), 2) != 0:        # MNT_DETACH
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

def mount_over(path):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"none", path.encode(), b"tmpfs", 0, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

def listen_here(name):
    s = socket.socket(socket.AF_UNIX)
    s.bind(name)
    s.listen(1)
    connect(name)

def tcp(host, port):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.settimeout(5)
    s.connect((host, int(port)))
    s.close()

def own_listener(host, port, dial):
    """Listens on host:port (0: any), and a child process connects to it
    through dial (the address it connects to)."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.bind((host, int(port)))
    s.listen(1)
    s.settimeout(10)
    port = s.getsockname()[1]
    r = subprocess.run([sys.executable, __file__, json.dumps(
        [["dial", "tcp", dial, port]])], check=True, stdout=subprocess.PIPE)
    got = json.loads(r.stdout)["dial"]
    if got != "ok":
        raise OSError(getattr(errno, got, 0), got)
    c, _ = s.accept()
    c.close()
    s.close()

def let_go(host):
    """Listens on a port, closes it, then connects there."""
    s = socket.socket(socket.AF_INET)
    s.bind((host, 0))
    s.listen(1)
    port = s.getsockname()[1]
    s.close()
    tcp(host, port)

def multiprocess():
    import multiprocessing
    with multiprocessing.get_context("spawn").Pool(2) as p:
        assert p.map(abs, [-1, -2]) == [1, 2]

if __name__ == "__main__":
    out = {}
    for name, op, *args in json.loads(sys.argv[1]):
        try:
            globals()[op](*args)
            out[name] = "ok"
        except OSError as e:
            out[name] = errno.errorcode.get(e.errno, str(e.errno))
        except Exception as e:
            out[name] = type(e).__name__
    print(json.dumps(out))
'''


def host_and_client(make_daemon, make_client, owner="alice", tree=None):
    """A host and a client of owner's.  tree: how the host gives a job its
    tree, "overlay" (over a stored tree; the default where the kernel
    allows it) or "copy" (REMOTE_OVERLAY=0); None: the host's choice."""
    d = make_daemon()
    if tree == "copy":
        d.env["GMUX_REMOTE_OVERLAY"] = "0"
    d.serve_tls()
    line = d.gmux("token", "add", owner, check=0).stdout.decode().split()[-1]
    c = make_client()
    assert c.add("gpu1", line).returncode == 0
    return d, c


def check_tree(d, jid, tree):
    """The job ran over the kind of tree the test asked for."""
    if tree == "overlay" and stored_tree(d.home, jid) is None:
        log = open(os.path.join(d.home, "gmux.log")).read()
        why = [ln for ln in log.splitlines() if "overlay_ready" in ln]
        pytest.skip("no overlay on this kernel: %s" % why)
    if tree == "copy":
        assert stored_tree(d.home, jid) is None


def probe_remote(c, checks, *flags):
    with open(os.path.join(c.work, "probe.py"), "w") as f:
        f.write(PROBE)
    r = c.gmux("run", *flags, "--", PY, "probe.py", json.dumps(checks))
    assert r.returncode == 0, r
    assert r.stdout, r
    return json.loads(r.stdout)


def probe_local(d, checks, cwd, *flags):
    path = os.path.join(cwd, "probe.py")
    with open(path, "w") as f:
        f.write(PROBE)
    r = subprocess.run([GMUX, "run", *flags, "--", PY, path,
                        json.dumps(checks)],
                       env=d.env, cwd=cwd, capture_output=True, timeout=60)
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def fd_of(pid, target):
    """The number of pid's descriptor open on target (the test is the
    daemon's user: it may look)."""
    for n in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, n)) == target:
                return n
        except OSError:
            pass
    raise AssertionError("%d has no descriptor on %s" % (pid, target))


def ppid(pid):
    return int(open("/proc/%d/stat" % pid).read().rpartition(")")[2].split()[1])


@pytest.mark.parametrize("tree", ["overlay", "copy"])
def test_a_remote_job_cannot_reach_the_host(make_daemon, make_client,
                                            tmp_path, tree):
    d, alice = host_and_client(make_daemon, make_client, "alice", tree)
    H = d.home
    # Bob's job, running: a tree with a secret, a keeper, a ctl socket.
    line = d.gmux("token", "add", "bob", check=0).stdout.decode().split()[-1]
    bob = make_client()
    assert bob.add("gpu1", line).returncode == 0
    bid = bob.gmux("run", "-d", "--share", "0", "--", "sh", "-c",
                   "echo secret > secret.txt; exec sleep 300",
                   check=0).stdout.decode().strip().split(":")[-1]
    # Where its writes are on the host (over an overlay: its upper).
    btree = job_tree(H, bid)
    wait_for(lambda: os.path.exists(os.path.join(btree, "secret.txt")))
    check_tree(d, bid, tree)
    bwork = os.path.join(H, "jobs", bid, "work")
    bpid = wait_for(lambda: d.job(bid).get("pid"))
    keeper = ppid(bpid)
    daemon = d.pid()
    # An abstract socket of the host's.
    ab = socket.socket(socket.AF_UNIX)
    ab.bind("\0gmux-test-%d" % os.getpid())
    ab.listen(8)
    db_fd = fd_of(daemon, os.path.join(H, "state.db"))
    shm = "/dev/shm/gmux-test-%d" % os.getpid()
    with open(shm, "w") as f:
        f.write("x")
    os.chmod(shm, 0o600)
    escapes = [
        ["other owner's tree", "read", os.path.join(btree, "secret.txt")],
        ["list other trees", "listdir", os.path.join(H, "jobs")],
        ["list $GMUX_HOME", "listdir", H],
        ["list the user's home", "listdir", os.path.expanduser("~")],
        ["write in $GMUX_HOME", "write", os.path.join(H, "planted")],
        ["write in another tree", "write", os.path.join(btree, "planted")],
        ["write in /tmp", "write", str(tmp_path / "planted")],
        ["tls/key.pem", "read", os.path.join(H, "tls", "key.pem")],
        ["tls/tokens.json", "read", os.path.join(H, "tls", "tokens.json")],
        ["state.db", "read", os.path.join(H, "state.db")],
        ["gmux.sock", "connect", os.path.join(H, "gmux.sock")],
        ["another job's ctl", "connect", os.path.join(H, "jobs", bid, "ctl")],
        ["signal the daemon", "kill", daemon],
        ["signal a keeper", "kill", keeper],
        ["signal another job", "kill", bpid],
        ["the daemon's root", "read", "/proc/%d/root%s/tls/key.pem" %
         (daemon, H)],
        ["the daemon's fd", "read", "/proc/%d/fd/%s" % (daemon, db_fd)],
        ["what the daemon's fd is", "readlink", "/proc/%d/fd/%s" %
         (daemon, db_fd)],
        ["the daemon's fdinfo", "read", "/proc/%d/fdinfo/%s" %
         (daemon, db_fd)],
        ["the daemon's environ", "read", "/proc/%d/environ" % daemon],
        ["the daemon's maps", "read", "/proc/%d/maps" % daemon],
        ["a keeper's cwd", "read", "/proc/%d/cwd/log" % keeper],
        ["a job's root", "read", "/proc/%d/root%s/secret.txt" %
         (bpid, bwork)],
        ["our own root", "read", "/proc/self/root%s/tls/key.pem" % H],
        ["a link to the key", "link", os.path.join(H, "tls", "key.pem"),
         "key-link"],
        ["an abstract socket", "abstract", "gmux-test-%d" % os.getpid()],
        # Landlock does not hold modes and owners; the fence does.
        ["chmod the key", "chmod", os.path.join(H, "tls", "key.pem"), "600"],
        ["chmod the tls dir", "chmod", os.path.join(H, "tls"), "700"],
        ["chown the socket", "chown", os.path.join(H, "gmux.sock")],
        # A file it may read (/dev/shm is shared): not its mode.
        ["fchmod a file it reads", "fchmod", shm, "600"],
        # Nor does it hold limits and scheduling: the filter does.
        ["the daemon's limits", "limit", daemon],
        ["renice the daemon", "renice", daemon],
        ["schedule a job", "schedule", bpid],
    ]
    # The control: a local job (not confined) gets through every one.
    here = tmp_path / "local"
    here.mkdir()
    got = probe_local(d, escapes, str(here))
    assert got == {e[0]: "ok" for e in escapes}, got
    planted = [os.path.join(H, "planted"), os.path.join(btree, "planted"),
               str(tmp_path / "planted")]
    for p in planted:
        os.unlink(p)
    # The same probe, from alice's remote job: stopped, each of them.
    got = probe_remote(alice, escapes)
    for name, *_ in escapes:
        assert got[name] in ("EACCES", "EPERM", "ECONNREFUSED", "EXDEV"), \
            (name, got[name])
    jobs = d.json("ps", "-a", "--json")
    me = [j for j in jobs if j["owner"] == "alice"][-1]
    assert me["confined"] and me["fence_stats"]["jail"]
    # gmux.sock, ctl, the chmods and the chowns
    assert me["fence_stats"]["refused"] >= 6, me["fence_stats"]
    # Bob's job was not disturbed, nothing was written or linked out.
    assert not [p for p in planted if os.path.exists(p)]
    assert d.job(bid)["state"] == "running"
    assert not os.path.exists(os.path.join(H, "jobs", me["id"], "work",
                                           "key-link"))
    assert os.stat(shm).st_mode & 0o777 == 0o600
    os.unlink(shm)
    ab.close()
    # What docs/isolation.md says is not hidden: the numbers only.
    fds = [["the daemon's fd numbers", "listdir", "/proc/%d/fd" % daemon]]
    assert probe_remote(alice, fds) == {fds[0][0]: "ok"}
    bob.gmux("stop", "--grace", "0", bid, check=0)


@pytest.mark.parametrize("tree", ["overlay", "copy"])
def test_a_remote_job_still_works(make_daemon, make_client, tree):
    d, c = host_and_client(make_daemon, make_client, tree=tree)
    checks = [
        ["python3", "run", PY, "-c", "import ssl, json, sqlite3"],
        ["own tree", "write", "out.txt"],
        ["fchmod its own", "fchmod", "out.txt", "640"],
        ["tmpdir", "run", "sh", "-c", 'echo x > "$TMPDIR/t" && '
         'test "$HOME" = "$TMPDIR" && cat "$TMPDIR/t"'],
        ["/etc/hosts", "read", "/etc/hosts"],
        ["/dev/null", "write", "/dev/null"],
        ["a socket of its own", "listen_here", "own.sock"],
        ["multiprocessing", "multiprocess"],
        ["chmod, nice, limits of its own", "script", "run.sh"],
        ["chmod in its tmp", "run", "sh", "-c", 'touch "$TMPDIR/f" && '
         'chmod 600 "$TMPDIR/f" && chmod 700 "$TMPDIR" .'],
    ]
    got = probe_remote(c, checks)
    assert got == {e[0]: "ok" for e in checks}, got
    j = c.json("ps", "-a", "--json")[0]
    assert j["confined"]
    check_tree(d, j["id"].split(":")[-1], tree)
    work = job_tree(d.home, j["id"].split(":")[-1])
    assert open(os.path.join(work, "out.txt")).read() == "written\n"
    # Its tmp was its own, and went with it.
    assert not os.path.exists(os.path.join(d.home, "jobs",
                                           j["id"].split(":")[-1], "tmp"))
    # Output streams back, both streams, and the exit code.
    r = c.gmux("run", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
    # --pull still finds what it wrote.
    r = c.gmux("run", "--pull", "res/", "--", "sh", "-c",
               "mkdir res && echo done > res/r.txt")
    assert r.returncode == 0, r
    assert open(os.path.join(c.work, "res", "r.txt")).read() == "done\n"
    # A local job is not confined.
    d.gmux("run", "--", "true", check=0)
    local = [x for x in d.json("ps", "-a", "--json") if x["cwd"] and
             "/jobs/" not in x["cwd"]]
    assert local and not local[0]["confined"]
    assert "c" in d.gmux("ps", "-a", "-l", check=0).stdout.decode()


def test_a_remote_job_cannot_undo_its_tree(make_daemon, make_client):
    """Over an overlay: the stored tree under it and its own upper layer
    are out of its reach, it cannot unmount the overlay (to see what lies
    under) nor mount over it, and what it writes never reaches the stored
    tree another run will use."""
    d, c = host_and_client(make_daemon, make_client)
    H = d.home
    with open(os.path.join(c.work, "probe.py"), "w") as f:
        f.write(PROBE)
    c.gmux("run", "--", "true", check=0)           # the stored tree
    check_tree(d, "j1", "overlay")
    stored = stored_tree(H, "j1")
    # Its id: the next (the local control runs none here).
    me = os.path.join(H, "jobs", "j2")
    escapes = [
        ["unmount its tree", "umount", "."],
        ["mount over its tree", "mount_over", "."],
        ["list the stored trees", "listdir", os.path.join(H, "trees")],
        ["read its stored tree", "read", os.path.join(stored, "probe.py")],
        ["write its stored tree", "write", os.path.join(stored, "planted")],
        ["read the trees' files", "listdir", os.path.join(H, "trees",
                                                          "objects")],
        ["list its upper layer", "listdir", os.path.join(me, "upper")],
        ["write its upper layer", "write", os.path.join(me, "upper", "x")],
        ["write overlayfs's scratch", "write", os.path.join(me, "ovl", "x")],
        ["its own tree", "write", "probe.py"],
    ]
    got = probe_remote(c, escapes)
    assert stored_tree(H, "j2") == stored
    for name, *_ in escapes[:-1]:
        assert got[name] in ("EACCES", "EPERM"), (name, got[name])
    assert got["its own tree"] == "ok"
    # Its write is its own: the stored tree and the next run see PROBE.
    assert open(os.path.join(stored, "probe.py")).read() == PROBE
    assert open(os.path.join(me, "upper", "probe.py")).read() == \
        "written\n"
    assert not os.path.exists(os.path.join(stored, "planted"))
    r = c.gmux("run", "--", "sh", "-c", "head -c 7 probe.py")
    assert r.stdout == PROBE[:7].encode(), r
    assert sorted(os.listdir(os.path.join(H, "trees"))) == \
        sorted([os.path.basename(stored), "objects", "tmp"])


def test_a_remote_job_with_a_fence_is_jailed_too(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    checks = [["state.db", "read", os.path.join(d.home, "state.db")],
              ["gmux.sock", "connect", os.path.join(d.home, "gmux.sock")],
              ["a socket of its own", "listen_here", "own.sock"]]
    got = probe_remote(c, checks, "--deny-net")
    assert got == {"state.db": "EACCES", "gmux.sock": "ECONNREFUSED",
                   "a socket of its own": "ok"}, got
    st = c.json("ps", "-a", "--json")[0]["fence_stats"]
    assert st["fence"] == "deny-net" and st["jail"]


def test_a_remote_job_may_not_name_a_hosts_socket(make_daemon, make_client):
    """--allow unix:PATH lets a local job reach one socket of the host's;
    a remote job's client is not the host's operator."""
    d, c = host_and_client(make_daemon, make_client)
    r = c.gmux("run", "--allow", "unix:%s" % os.path.join(d.home,
               "gmux.sock"), "--", "true")
    assert r.returncode != 0 and b"a remote job may not reach" in r.stderr, r
    # nor may it make datagram sockets, which reach any the host has
    r = c.gmux("run", "--allow", "unix:dgram", "--", "true")
    assert r.returncode != 0 and b"a remote job may not reach" in r.stderr, r
    assert c.json("ps", "-a", "--json") == []


def test_the_request_does_not_choose(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    remotes = json.load(open(os.path.join(c.home, "remotes.json")))
    token = remotes["remotes"][0]["target"].split("@")[0]
    body = json.dumps({"argv": ["true"], "confined": False}).encode()
    st, j = https_json(d.port, "POST", "/v1/jobs", body, token=token,
                       ctype="application/json")
    assert st == 400 and "confined" in j["error"], (st, j)
    code, text = d.curl("POST", "/v1/jobs",
                        json.dumps({"argv": ["true"], "confined": True}))
    assert code == 400 and "confined" in text
    assert d.json("ps", "-a", "--json") == []


def test_a_queued_remote_job_stays_confined_across_restarts(make_daemon,
                                                            make_client):
    d, c = host_and_client(make_daemon, make_client)
    hog = d.gmux("run", "-d", "--share", "1", "--", "sleep", "300",
                 check=0).stdout.decode().strip()
    d.wait_state(hog, "running")
    with open(os.path.join(c.work, "probe.py"), "w") as f:
        f.write(PROBE)
    checks = json.dumps([["state.db", "read",
                          os.path.join(d.home, "state.db")]])
    j1 = c.gmux("run", "-d", "--share", "1", "--", PY, "probe.py", checks,
                check=0).stdout.decode().strip().split(":")[-1]
    assert d.job(j1)["state"] == "queued" and d.job(j1)["confined"]
    # Restarted, it is still the daemon's decision that it is confined.
    d.stop()
    d.start(addr="127.0.0.1:%d" % d.port)
    assert d.job(j1)["confined"]
    d.gmux("stop", "--grace", "0", hog, check=0)
    d.wait_state(j1, "exited")
    out = d.gmux("logs", j1, check=0).stdout
    assert json.loads(out) == {"state.db": "EACCES"}, out
    # Started by a daemon on a kernel that cannot confine it (as the test
    # pretends), it does not run: it fails, saying why.
    hog = d.gmux("run", "-d", "--share", "1", "--", "sleep", "300",
                 check=0).stdout.decode().strip()
    d.wait_state(hog, "running")
    j2 = c.gmux("run", "-d", "--share", "1", "--", PY, "probe.py", checks,
                check=0).stdout.decode().strip().split(":")[-1]
    d.stop()
    d.env["GMUX_TEST_LANDLOCK_ABI"] = "5"
    d.env["GMUX_REMOTE_UNCONFINED"] = "1"   # not for a confined one
    d.start()
    d.gmux("stop", "--grace", "0", hog, check=0)
    j = d.wait_state(j2, "failed")
    assert "ABI 5" in j["reason"] and j["confined"], j
    assert not d.gmux("logs", j2).stdout


def test_serve_addr_says_what_it_confines(make_daemon):
    d = make_daemon()
    d.serve_tls()
    assert b"remote jobs run confined (Landlock ABI" in d.serve_stderr
    # Without --addr nothing changes: local jobs are not confined.
    d.stop()
    d.start()
    assert d.gmux("run", "--", "cat", os.path.join(d.home, "state.db"),
                  check=0).stdout


def test_a_host_that_cannot_confine_refuses_remote_jobs(make_daemon,
                                                        make_client):
    # A kernel without Landlock's scopes (as the test pretends).
    d = make_daemon()
    d.env["GMUX_TEST_LANDLOCK_ABI"] = "5"
    d, c = host_and_client(lambda: d, make_client)
    assert b"Landlock is ABI 5" in d.serve_stderr and \
        b"remote jobs will be refused" in d.serve_stderr, d.serve_stderr
    r = c.gmux("run", "--", "cat", os.path.join(d.home, "state.db"))
    assert r.returncode != 0 and not r.stdout, r
    assert b"cannot confine remote jobs" in r.stderr and \
        b"Landlock is ABI 5" in r.stderr and \
        b"REMOTE_UNCONFINED" in r.stderr, r.stderr
    assert d.json("ps", "-a", "--json") == []
    assert os.listdir(os.path.join(d.home, "jobs")) == []
    # The control: a local job runs.
    assert d.gmux("run", "--", "true").returncode == 0


def test_the_operator_may_run_remote_jobs_unconfined(make_daemon,
                                                     make_client):
    d = make_daemon()
    d.env["GMUX_TEST_LANDLOCK_ABI"] = "5"
    d.env["GMUX_REMOTE_UNCONFINED"] = "1"
    d, c = host_and_client(lambda: d, make_client)
    assert b"remote jobs run UNCONFINED" in d.serve_stderr, d.serve_stderr
    # It runs, as the daemon's user, and says so.
    r = c.gmux("run", "--", "cat", os.path.join(d.home, "state.db"))
    assert r.returncode == 0 and r.stdout, r
    assert not c.json("ps", "-a", "--json")[0]["confined"]
    # A bad value is not a yes.
    d.stop()
    d.env["GMUX_REMOTE_UNCONFINED"] = "yes"
    d.start(addr="127.0.0.1:%d" % d.port)
    assert b"will be refused" in d.serve_stderr, d.serve_stderr
    assert c.gmux("run", "--", "true").returncode != 0


def test_a_home_remote_jobs_may_read_refuses_them(make_daemon, make_client):
    # The state directory inside what remote jobs may read: refused.
    d = make_daemon()
    d.env["GMUX_REMOTE_READ"] = "/opt:" + os.path.dirname(d.home)
    d, c = host_and_client(lambda: d, make_client)
    assert b"lies in" in d.serve_stderr and \
        b"will be refused" in d.serve_stderr, d.serve_stderr
    r = c.gmux("run", "--", "true")
    assert r.returncode != 0 and b"lies in" in r.stderr, r
    d.stop()
    # So does one in /dev/shm.
    shm = Daemon("/dev/shm/gmux-test-%d" % os.getpid())
    os.makedirs(shm.home)
    try:
        shm.start(addr="127.0.0.1:%d" % free_port())
        assert b"lies in /dev/shm" in shm.serve_stderr, shm.serve_stderr
    finally:
        shm.stop()
        subprocess.run(["rm", "-rf", shm.home])


def host_listener():
    """A service of the host's on its loopback, IPv4 and IPv6 (::1, ::,
    127.0.0.0/8, ::ffff:127.0.0.1 all land on it); non-blocking, so a
    connection that got through shows."""
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", 0))
    s.listen(16)
    s.setblocking(False)
    return s, s.getsockname()[1]


def accepted(s):
    n = 0
    while True:
        try:
            s.accept()[0].close()
            n += 1
        except BlockingIOError:
            return n


def test_a_remote_job_cannot_reach_the_hosts_loopback(make_daemon,
                                                      make_client, tmp_path):
    d, c = host_and_client(make_daemon, make_client)
    srv, port = host_listener()
    dests = ["127.0.0.1", "127.0.0.2", "0.0.0.0", "::1", "::",
             "::ffff:127.0.0.1"]
    checks = [[h, "tcp", h, port] for h in dests]
    # The control: a local job that allows it gets through.
    here = tmp_path / "local"
    here.mkdir()
    got = probe_local(d, checks[:1], str(here), "--allow",
                      "127.0.0.1:%d" % port)
    assert got == {"127.0.0.1": "ok"}, got
    assert accepted(srv) == 1
    # A remote job that asked for no fence: refused, every spelling.
    got = probe_remote(c, checks)
    assert got == {h: "ECONNREFUSED" for h in dests}, got
    st = c.json("ps", "-a", "--json")[0]["fence_stats"]
    assert st["refused"] == len(dests) and st["fence"] == "open", st
    # Nor does its client's --allow open it: the client is not the host's
    # operator.
    got = probe_remote(c, checks[:1] + checks[3:4], "--allow",
                       "127.0.0.1:%d" % port, "--allow", "::1")
    assert got == {"127.0.0.1": "ECONNREFUSED", "::1": "ECONNREFUSED"}, got
    assert accepted(srv) == 0
    srv.close()


def test_a_remote_job_reaches_what_it_listens_on(make_daemon, make_client):
    d, c = host_and_client(make_daemon, make_client)
    checks = [
        ["127.0.0.1:PORT", "own_listener", "127.0.0.1", free_port(),
         "127.0.0.1"],
        ["127.0.0.1:0", "own_listener", "127.0.0.1", 0, "127.0.0.1"],
        ["0.0.0.0:0", "own_listener", "0.0.0.0", 0, "127.0.0.1"],
        ["[::]:0", "own_listener", "::", 0, "127.0.0.1"],
        ["[::1]:0", "own_listener", "::1", 0, "::1"],
        ["torchrun --standalone", "run", PY, "-c",
         "import socket, subprocess, sys\n"
         "s = socket.create_server(('localhost', 0))\n"
         "p = s.getsockname()[1]\n"
         "subprocess.run([sys.executable, '-c', 'import socket; "
         "socket.create_connection((\"localhost\", %d))' % p], "
         "check=True)\n"],
        ["one it let go", "let_go", "127.0.0.1"],
        # Its netlink binds (getifaddrs) the supervisor does too.
        ["netlink", "run", PY, "-c", "import socket\n"
         "assert socket.if_nameindex()\n"
         "socket.getaddrinfo('localhost', 80, "
         "flags=socket.AI_ADDRCONFIG)\n"],
    ]
    got = probe_remote(c, checks)
    want = {e[0]: "ok" for e in checks}
    want["one it let go"] = "ECONNREFUSED"
    assert got == want, got
    st = c.json("ps", "-a", "--json")[0]["fence_stats"]
    assert st["refused"] >= 1 and st["last_refused"].startswith(
        "127.0.0.1:"), st


def test_the_hosts_operator_may_open_loopback(make_daemon, make_client):
    d = make_daemon()
    d.env["GMUX_REMOTE_LOOPBACK"] = "1"
    d, c = host_and_client(lambda: d, make_client)
    srv, port = host_listener()
    got = probe_remote(c, [["127.0.0.1", "tcp", "127.0.0.1", port],
                           ["::1", "tcp", "::1", port]])
    assert got == {"127.0.0.1": "ok", "::1": "ok"}, got
    assert c.json("ps", "-a", "--json")[0]["confined"]
    assert accepted(srv) == 2
    # Any other value is no.
    d = make_daemon()
    d.env["GMUX_REMOTE_LOOPBACK"] = "yes"
    d, c = host_and_client(lambda: d, make_client)
    got = probe_remote(c, [["127.0.0.1", "tcp", "127.0.0.1", port]])
    assert got == {"127.0.0.1": "ECONNREFUSED"}, got
    assert accepted(srv) == 0
    srv.close()
