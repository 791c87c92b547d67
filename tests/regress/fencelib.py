"""Helpers for the network fence's tests.

A fenced command runs through ``fence-run`` (tests/fence-run.c), which
sets the fence up exactly as the keeper does, or, with FENCE_VIA=gmux,
through ``gmux run --allow ...`` against a daemon of its own (the keeper's
real path; cases that need fence-run's test switches are skipped).  When
the tests run as root, the job runs as ``nobody`` (fence-run is started
as nobody, or the daemon is): the fence must need no privilege, and a job
with capabilities is not what it guards against.

Listeners are loopback only and count who reached them, which is what
every escape case asserts on.
"""

from __future__ import annotations

import atexit
import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
PY = "/usr/bin/python3"
NOBODY = 65534


def _build() -> Path:
    """Where the binaries the job's user runs are: the build directory, or,
    when running as root in a checkout that nobody may enter (a clone
    under a 0700 directory, as mktemp -d makes), a copy of what the fence
    tests run (gmux, its preload library, fence-run and fence-escape) in
    a directory that nobody can reach."""
    gmux = os.environ.get("GMUX")
    build = Path(gmux).parent if gmux else REPO / "build"
    if os.geteuid() != 0 or all(p.stat().st_mode & 0o001
                                for p in [build, *build.parents]):
        return build
    if "copy" not in _build_copy:
        copy = Path(tempfile.mkdtemp(prefix="gmux-fence-build-", dir="/tmp"))
        (copy / "tests").mkdir()
        for name in ("gmux", "libgmux.so", "tests/fence-run",
                     "tests/fence-escape"):
            if (build / name).exists():
                shutil.copy2(build / name, copy / name)
        for d in (copy, copy / "tests"):
            d.chmod(0o755)
        atexit.register(shutil.rmtree, copy, ignore_errors=True)
        _build_copy["copy"] = copy
    return _build_copy["copy"]


_build_copy: dict = {}


def tool(name: str) -> str:
    """The path of a test program built next to the gmux binary."""
    path = _build() / "tests" / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run make")
    return str(path)


def as_job_user() -> list[str]:
    """The prefix that drops root to nobody (nothing when not root)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
            "--clear-groups", "--"]


def make_jobdir() -> Path:
    """A working directory the job's user can use."""
    d = Path(tempfile.mkdtemp(prefix="gmux-fence-", dir="/tmp"))
    d.chmod(0o777)
    return d


@pytest.fixture(name="jobdir")
def jobdir_fixture() -> Iterator[Path]:
    """A fresh working directory for one test's jobs (import it to use)."""
    d = make_jobdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


VIA_GMUX = os.environ.get("FENCE_VIA") == "gmux"
_daemon: dict = {}


def _gmux() -> str:
    return str(_build() / "gmux")


def _stop_daemon() -> None:
    if "home" in _daemon:
        pid = int(open(os.path.join(_daemon["home"], "gmux.pid")).read())
        os.kill(pid, 15)
        shutil.rmtree(_daemon["home"], ignore_errors=True)


def gmux_daemon() -> dict:
    """The environment of this session's daemon, run as the job's user."""
    if "env" not in _daemon:
        home = tempfile.mkdtemp(prefix="gmf", dir="/tmp")
        if os.geteuid() == 0:
            os.chown(home, NOBODY, NOBODY)
        env = dict(os.environ, GMUX_HOME=home, GMUX_NO_DETECT="1")
        subprocess.run(as_job_user() + [_gmux(), "serve", "-d"], env=env,
                       check=True, timeout=30)
        _daemon.update(home=home, env=env)
        atexit.register(_stop_daemon)
    return _daemon["env"]


def _fenced_gmux(policy, argv, cwd, timeout, stats, extra, **kw):
    if extra or (policy and "-j" in policy):
        pytest.skip("needs fence-run's test switches")
    env = gmux_daemon()
    cmd = [_gmux(), "run"] + list(policy or []) + ["--"] + list(argv)
    kw.setdefault("stdin", subprocess.DEVNULL)
    r = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, text=True,
                       capture_output=True, **kw)
    if stats is not None:
        jobs = json.loads(subprocess.run([_gmux(), "ps", "-a", "--json"],
                                         env=env, capture_output=True,
                                         check=True).stdout)
        # the keeper's own file (jobs/jN/fence), mode and all
        shutil.copy(os.path.join(_daemon["home"], "jobs", jobs[-1]["id"],
                                 "fence"), stats)
    return r


def fenced(policy: Sequence[str] | None, argv: Sequence[str], cwd: Path,
           timeout: float = 60, wait_all: bool = False,
           stats: Path | None = None, extra: Sequence[str] = (),
           **kw) -> subprocess.CompletedProcess:
    """Runs argv under the fence (policy None: unfenced, the control)."""
    if VIA_GMUX:
        return _fenced_gmux(policy, argv, cwd, timeout, stats, extra, **kw)
    cmd = as_job_user() + [tool("fence-run"), "-C", str(cwd)]
    if policy is not None:
        cmd += list(policy)
    if wait_all:
        cmd.append("-w")
    if stats is not None:
        cmd += ["-s", str(stats)]
    cmd += list(extra) + ["--"] + list(argv)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(cmd, cwd=cwd, timeout=timeout, text=True,
                          capture_output=True, **kw)


def job_py(policy: Sequence[str] | None, code: str, cwd: Path,
           **kw) -> dict:
    """Runs Python code in the job; it prints one JSON object last."""
    r = fenced(policy, [PY, "-c", code], cwd, **kw)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 0 and lines, (r.returncode, r.stdout, r.stderr)
    return json.loads(lines[-1])


class Listener:
    """A TCP listener on loopback that counts the connections it got."""

    def __init__(self, host: str = "127.0.0.1", backlog: int = 4096):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(backlog)
        self.sock.setblocking(False)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.reached = 0

    def count(self) -> int:
        """Accepts whatever is queued and returns the total so far."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return self.reached
            conn.close()
            self.reached += 1

    def close(self) -> None:
        self.sock.close()


class UdpListener:
    """A UDP socket on loopback that counts the datagrams it got."""

    def __init__(self, host: str = "127.0.0.1"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.reached = 0

    def count(self) -> int:
        while True:
            try:
                self.sock.recv(65536)
            except BlockingIOError:
                return self.reached
            self.reached += 1
            self.got()

    def got(self) -> None:
        """What is done with each datagram, once counted."""

    def close(self) -> None:
        self.sock.close()


class UnixListener:
    """An AF_UNIX listener (a path, or an abstract name if it starts \\0)."""

    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        if not path.startswith("\0"):
            os.chmod(path, 0o777)
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.path = path
        self.reached = 0

    count = Listener.count
    close = Listener.close


class UnixDgramRelay(UdpListener):
    """An AF_UNIX datagram socket that, for each datagram it gets, makes a
    TCP connection to a loopback listener on the sender's behalf (what a
    relay of the user's would do).  count() drains what is queued, so it
    needs no thread and no waiting: a datagram sent is queued already."""

    def __init__(self, path: str, port: int):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        os.chmod(path, 0o777)
        self.sock.setblocking(False)
        self.path = path
        self.port = port
        self.reached = 0

    def got(self) -> None:
        socket.create_connection(("127.0.0.1", self.port), 5).close()


class EchoServer:
    """A threaded TCP server that echoes one line per connection."""

    def __init__(self, host: str = "127.0.0.1"):
        self.listener = Listener(host)
        self.listener.sock.setblocking(True)
        self.port = self.listener.port
        self.served = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.listener.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    conn.sendall(conn.recv(4096))
                except OSError:
                    pass
            self.served += 1

    def close(self) -> None:
        self.listener.close()


class HttpServer:
    """An HTTP server on loopback answering 200 "hello" to any GET."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.server._gmux_count = self.served_before() + 1
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def served_before(self) -> int:
            return getattr(self.server, "_gmux_count", 0)

        def log_message(self, *args) -> None:
            pass

    def __init__(self, host: str = "127.0.0.1"):
        self.httpd = http.server.ThreadingHTTPServer((host, 0),
                                                     self.Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever,
                         daemon=True).start()

    @property
    def served(self) -> int:
        return getattr(self.httpd, "_gmux_count", 0)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def allow(*specs: str) -> list[str]:
    """--allow flags for fence-run."""
    out: list[str] = []
    for s in specs:
        out += ["--allow", s]
    return out


def add_host(*pins: str) -> list[str]:
    out: list[str] = []
    for p in pins:
        out += ["--add-host", p]
    return out


def rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def closed_all(listeners: Iterable) -> None:
    for listener in listeners:
        listener.close()
