"""Fixtures for gmux's end-to-end tests: each test gets private daemons,
each under its own GMUX_HOME, started from the binary named by $GMUX."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

# remotelib beside this file, also for suites that load this file by path
# (sdk/python/tests).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GMUX = os.environ.get("GMUX") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "gmux")
GMUX = os.path.abspath(GMUX)

# pytest rewrites the asserts of every test file it imports, half a minute
# for tests/regress on two busy cores, and keeps what it wrote beside the
# file unless bytecode files are off (PYTHONDONTWRITEBYTECODE): then every
# pass of tests/run-all paid it again.  Here they are kept under build/ in
# that case, for this process only (daemons and jobs inherit nothing).
if sys.dont_write_bytecode:
    sys.pycache_prefix = os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
        "pycache")
    sys.dont_write_bytecode = False


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "once: a test whose cost is outside the daemon (podman's "
        "image stores, a shell's completion): the daemon-under-ASan pass of "
        "tests/run-all leaves it out (-m 'not once')")


def wait_for(pred, timeout=10.0, step=0.02, what="condition"):
    """Polls pred until it returns a true value; fails the test after timeout."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(step)


def stacks(pid):
    """Every thread's stack of process pid, as gdb prints them: what a
    daemon that does not answer or does not stop was doing."""
    if shutil.which("gdb") is None:
        return "(no gdb to show them)"
    r = subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex",
                        "thread apply all bt"], capture_output=True,
                       timeout=60)
    return "\n".join(ln for ln in r.stdout.decode(errors="replace")
                     .splitlines() if ln.startswith(("#", "Thread")))


def _gone(pid):
    """Has process pid exited (gone, or a zombie whose threads have all
    exited)?  A killed process's first thread is a zombie while its other
    threads still exit (one in a write to the disk can take a while), and
    until the last one has, its descriptors are open: its home's lock
    still held, a new daemon there refused."""
    try:
        if open("/proc/%d/stat" % pid).read().split()[2] != "Z":
            return False
        return len(os.listdir("/proc/%d/task" % pid)) <= 1
    except OSError:
        return True


class Daemon:
    """A private gmux daemon and a CLI bound to its home."""

    def __init__(self, home):
        self.home = home
        self.env = dict(os.environ)
        self.env["GMUX_HOME"] = home
        self.env["GMUX_NO_DETECT"] = "1"
        # A sanitizer build writes its reports here; teardown fails on any.
        self.env["ASAN_OPTIONS"] = "log_path=%s/asan:detect_leaks=1" % home
        self.env["UBSAN_OPTIONS"] = ("log_path=%s/ubsan:print_stacktrace=1"
                                     % home)
        self.proc = None
        self.running = None     # the pid of a daemon this test started

    @property
    def socket(self):
        return os.path.join(self.home, "gmux.sock")

    def pid(self):
        with open(os.path.join(self.home, "gmux.pid")) as f:
            return int(f.read().strip())

    def start(self, *args, fake="1xH100:80G", addr=None):
        """Starts the daemon; with addr ([HOST]:PORT) it also serves TLS,
        and self.invite is the line it printed (None after the first)."""
        cmd = [GMUX, "serve", "-d"]
        if fake:
            cmd += ["--fake", fake]
        if addr is not None:
            cmd += ["--addr", addr]
        cmd += list(args)
        r = subprocess.run(cmd, env=self.env, capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        self.running = self.pid()
        self.serve_stderr = r.stderr
        self.serve_stdout = r.stdout.decode()
        lines = [x for x in self.serve_stdout.splitlines()
                 if x.startswith("gmux remote add ")]
        self.invite = lines[0] if lines else None
        return self

    def serve_tls(self, *args, fake="1xH100:80G", port=None):
        """Starts the daemon with TLS on 127.0.0.1 (a free port); returns
        the target string TOKEN@HOST:PORT#PIN it printed."""
        self.port = port or free_port()
        self.start(*args, fake=fake, addr="127.0.0.1:%d" % self.port)
        assert self.invite, "serve --addr printed no invite"
        # The line carries an invite; the tests' target holds a token of
        # its own, as gmux remote add would get (POST /v1/join).
        invite = self.invite.split()[-1]
        from remotelib import https_json
        code, o = https_json(self.port, "POST", "/v1/join",
                             token=invite.split("@")[0])
        assert code == 201, (code, o)
        self.target = o["token"] + "@" + invite.split("@", 1)[1]
        return self.target

    def token_for(self, owner):
        """A token of owner's own, as gmux remote add gets one: token add
        prints an invite, traded here through POST /v1/join."""
        line = self.gmux("token", "add", owner).stdout.decode().split()[-1]
        from remotelib import https_json
        code, o = https_json(self.port, "POST", "/v1/join",
                             token=line.split("@")[0])
        assert code == 201, (code, o)
        return o["token"]

    @property
    def pin(self):
        return self.target.rsplit("#", 1)[1]

    def stop(self):
        """Stops the daemon; it must still be alive (no crash) and go."""
        pid, self.running = self.running, None
        if pid is None:
            return
        assert os.path.exists("/proc/%d" % pid), "the daemon died"
        os.kill(pid, signal.SIGTERM)
        try:
            wait_for(lambda: not os.path.exists(self.socket), 10,
                     what="daemon to stop")
        except AssertionError as e:
            raise AssertionError("%s; its threads:\n%s" %
                                 (e, stacks(pid))) from None
        # the socket goes first: a new daemon started before the old one
        # has exited would find it still serving
        self._wait_gone(pid)

    @staticmethod
    def _wait_gone(pid):
        wait_for(lambda: _gone(pid), 10, what="daemon %d to exit" % pid)

    def sanitizer_reports(self):
        return [f for f in os.listdir(self.home)
                if f.startswith(("asan.", "ubsan."))]

    def kill9(self):
        self.running = None
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        self._wait_gone(pid)

    def gmux(self, *args, input=None, timeout=60, check=None):
        """Runs the CLI; returns CompletedProcess with bytes stdout/stderr."""
        r = subprocess.run([GMUX] + list(args), env=self.env,
                           capture_output=True, input=input, timeout=timeout)
        if check is not None:
            assert r.returncode == check, (r.returncode, r.stdout, r.stderr)
        return r

    def popen(self, *args, **kw):
        return subprocess.Popen([GMUX] + list(args), env=self.env, **kw)

    def json(self, *args):
        r = self.gmux(*args, check=0)
        return json.loads(r.stdout)

    def job(self, jid):
        """The job's JSON object from ps -a --json, or {} if there is none."""
        return next((j for j in self.json("ps", "-a", "--json")
                     if j["id"] == jid), {})

    def wait_state(self, jid, states, timeout=15):
        if isinstance(states, str):
            states = (states,)
        return wait_for(lambda: (lambda j: j if j.get("state") in states
                                 else None)
                        (self.job(jid)), timeout,
                        what="%s to be %s" % (jid, states))

    def curl(self, method, path, body=None):
        cmd = ["curl", "-s", "--unix-socket", self.socket, "-X", method,
               "-w", "\n%{http_code}", "http://gmux" + path]
        if body is not None:
            cmd += ["-H", "Content-Type: application/json", "--data-binary",
                    body]
        r = subprocess.run(cmd, capture_output=True, timeout=30)
        text, _, code = r.stdout.decode().rpartition("\n")
        return int(code), text


def _kill_keepers(home):
    """Stops every job a test left behind (their keepers outlive daemons):
    keepers have their cwd in the home's jobs directory and lead a session
    that their job's processes share."""
    jobs = os.path.join(home, "jobs") + "/"
    keepers = set()
    procs = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open("/proc/%s/stat" % pid).read()
            procs[int(pid)] = int(stat.rpartition(")")[2].split()[3])
            if os.readlink("/proc/%s/cwd" % pid).startswith(jobs):
                keepers.add(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    for pid, sid in procs.items():
        if sid in keepers or pid in keepers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client:
    """A machine without a daemon: its own GMUX_HOME and working dir."""

    def __init__(self, home):
        self.home = home
        self.work = os.path.join(home, "work")
        os.makedirs(self.work, exist_ok=True)
        self.env = dict(os.environ)
        self.env["GMUX_HOME"] = home
        self.env.pop("XDG_CONFIG_HOME", None)

    def gmux(self, *args, input=None, timeout=60, check=None, cwd=None):
        r = subprocess.run([GMUX] + list(args), env=self.env,
                           capture_output=True, input=input, timeout=timeout,
                           cwd=cwd or self.work)
        if check is not None:
            assert r.returncode == check, (r.returncode, r.stdout, r.stderr)
        return r

    def popen(self, *args, cwd=None, **kw):
        return subprocess.Popen([GMUX] + list(args), env=self.env,
                                cwd=cwd or self.work, **kw)

    def add(self, name, target, *flags):
        """gmux remote add NAME, the target on stdin."""
        return self.gmux("remote", "add", *flags, name,
                         input=(target + "\n").encode())

    def json(self, *args):
        return json.loads(self.gmux(*args, check=0).stdout)


@pytest.fixture
def make_client():
    made = []

    def make():
        c = Client(tempfile.mkdtemp(prefix="gc", dir="/tmp"))
        made.append(c)
        return c
    yield make
    for c in made:
        shutil.rmtree(c.home, ignore_errors=True)


@pytest.fixture
def home():
    d = tempfile.mkdtemp(prefix="gm", dir="/tmp")
    yield d
    _kill_keepers(d)
    shutil.rmtree(d, ignore_errors=True)


# The etcd of the cluster tests (clusterlib.Etcd, 3 members), shared by
# the tests in a row that use it: each test's cluster has an ID (its keys'
# prefix) no other test's has, so they see nothing of each other's.  It is
# stopped once the next test does not use it.
_etcd = []


@pytest.fixture
def etcd():
    if not _etcd:
        from clusterlib import Etcd
        _etcd.append(Etcd(3).start())
    return _etcd[0]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if _etcd and (nextitem is None or "etcd" not in nextitem.fixturenames):
        _etcd.pop().stop()


def _check_sanitizers(d):
    reports = d.sanitizer_reports()
    text = "".join(open(os.path.join(d.home, f)).read()[:4000]
                   for f in reports)
    assert not reports, "sanitizer reports:\n" + text


@pytest.fixture
def daemon(home):
    d = Daemon(home)
    yield d
    d.stop()
    _check_sanitizers(d)


T0 = 1793491200000          # 2026-11-01T00:00:00Z: where clocked starts


@pytest.fixture
def clocked(daemon):
    """The daemon on a clock the test sets (docs/testing.md), from T0.
    daemon.set_clock(ms) moves it; with tick (the default) it returns once a
    tick of the daemon has seen the new time."""
    path = os.path.join(daemon.home, "clock")

    def set_clock(ms, tick=True):
        with open(path + ".tmp", "w") as f:
            f.write(str(ms))
        os.rename(path + ".tmp", path)
        if tick:
            time.sleep(1.2)
    set_clock(T0, tick=False)
    daemon.env["GMUX_TEST_CLOCK"] = path
    daemon.env["GMUX_TEST_CLOCK_OK"] = "1"
    daemon.set_clock = set_clock
    return daemon


@pytest.fixture
def make_daemon():
    made = []

    def make():
        h = tempfile.mkdtemp(prefix="gm", dir="/tmp")
        d = Daemon(h)
        made.append(d)
        return d
    yield make
    for d in made:
        d.stop()
        _check_sanitizers(d)
        _kill_keepers(d.home)
        shutil.rmtree(d.home, ignore_errors=True)
