"""The worker: a fork-server that runs tasks in forked children.

It is started as an ordinary gmux job (its share, memory cap, fence,
books and owner are the job's) by the first caller that needs one, with
``"task_worker"``: the daemon names its broker's socket in the job's fence
and in ``GMUX_WORKER_SOCK``, where it connects; then, started by a local
caller, it moves to the caller's directory and path, so the caller's own
modules import (a remote host's worker stays in its job's tree, its code
carried in its argv: docs/tasks.md).  It keeps a child forked and waiting,
so neither an interpreter start nor a fork is on a call's path, and a task
that crashes its process or calls ``os._exit`` loses only that child: the
daemon hears ``lost`` and leases the task again (docs/tasks.md).

By default (``GMUX_WORKER_FRESH=0``) a child that finished a task is kept
for the next one if it is a task of the same function: a worker's tasks
are all its job's owner's, and a task of another function goes to a child
that has run nothing, so what one function's tasks leave in their process
(module globals, caches) reaches only later tasks of that function
(docs/python.md, "What a task keeps").  ``GMUX_WORKER_FRESH=1``: a child
per task.  Idle for ``GMUX_WORKER_IDLE`` seconds (60), it exits and its
share goes back.

Nothing but this module's main() runs it; nothing else imports it.
"""

from __future__ import annotations

import gc
import os
import pickle
import selectors
import signal
import socket
import struct
import sys
import time
from typing import Any, Dict, Optional

import cloudpickle

from . import wire

_LEN = struct.Struct(">I")
SPARES = 2          # fresh: children kept forked, a fork off a call's path

try:
    import ctypes
    _prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
except (ImportError, OSError, AttributeError):
    _prctl = None

#: nominal fp16 dense TFLOP/s of a whole card, for fake cards' scores
NOMINAL = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0,
           "L4": 121.0, "A10": 125.0, "T4": 65.0, "V100": 125.0,
           "MI300X": 1307.0, "MI250X": 383.0, "4090": 330.0}


def _read_exact(fd: int, n: int) -> Optional[bytes]:
    out = b""
    while len(out) < n:
        more = os.read(fd, n - len(out))
        if not more:
            return None
        out += more
    return out


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Child:
    """A forked child waiting for a task on its pipe; ``fn`` is the
    function (its pickle) of the tasks it has run, None while it has run
    none."""

    def __init__(self, pid: int, task_w: int, out_r: int) -> None:
        self.pid, self.task_w, self.out_r = pid, task_w, out_r
        self.task: Optional[int] = None
        self.fn: Optional[bytes] = None
        self.buf = b""
        self.status: Optional[int] = None


def _noop() -> None:
    """The warm-up's call (see _warm)."""


_WARM = wire.dump_call(wire.dump_function(_noop), (), {})


def _child_main(task_r: int, out_w: int, fns: Dict[bytes, Any],
                spool: str, sock: Optional[socket.socket],
                fresh: bool) -> None:
    """Runs in the child: a warm-up, then a task; its outcome straight to
    the daemon (one hop less on a call's path), then a byte to the parent
    that says so, then exit (or, not fresh, the next task).  A child that
    dies before that byte lost its task."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG: die with the server
    _warm(fns)
    while True:
        _child_task(task_r, fns, spool, sock)
        _write_all(out_w, b"S")
        if fresh:
            os._exit(0)


def _warm(fns: Dict[bytes, Any]) -> None:
    """Runs a call of nothing through a task's whole path, so that the
    pages that path writes (reference counts, caches) are copied now,
    while the child waits, not when its task has come: a fresh child's
    first call costs what a reused one's does."""
    wire.frame(wire.DONE, {"task": 0}, _execute(_WARM, fns))


def _execute(body: bytes, fns: Dict[bytes, Any]) -> bytes:
    """The outcome of the call in body, whatever it does."""
    try:
        fnb, argb = wire.split_call(body)
        fn = fns.get(fnb)
        if fn is None:
            fn = fns[fnb] = cloudpickle.loads(fnb)
        args, kwargs = pickle.loads(argb)
        del body
        return wire.dump_outcome(True, fn(*args, **kwargs))
    except BaseException as e:          # the caller gets it, whatever it is
        try:
            return wire.dump_outcome(False, e)
        except BaseException as e2:
            return wire.dump_outcome(False, RuntimeError(repr(e2)))


def _child_task(task_r: int, fns: Dict[bytes, Any], spool: str,
                sock: Optional[socket.socket]) -> None:
    hdr = _read_exact(task_r, 9)
    if hdr is None:
        os._exit(0)
    task = int.from_bytes(hdr[1:9], "big")
    n = _LEN.unpack_from(_read_exact(task_r, 4) or b"\0\0\0\0", 0)[0]
    body = _read_exact(task_r, n) or b""
    if hdr[:1] == b"F":
        with open(body.decode(), "rb") as f:
            body = f.read()
    outcome = _execute(body, fns)
    del body
    hdr_out: Dict[str, Any] = {"task": task}
    if len(outcome) > wire.INLINE_MAX and not spool:
        outcome = wire.dump_outcome(False, ValueError(
            "the result is %d bytes, over the %d a remote host sends back"
            % (len(outcome), wire.INLINE_MAX)))
    if len(outcome) > wire.INLINE_MAX:
        name = "r%d-%d" % (os.getpid(), time.monotonic_ns())
        path = os.path.join(spool, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(outcome)
        hdr_out["file"], outcome = name, b""
    if sock is not None:
        try:
            sock.sendall(wire.frame(wire.DONE, hdr_out, outcome))
        except OSError:
            pass


class Server:
    """The fork-server's loop: the daemon's connection, the waiting child,
    the busy one."""

    def __init__(self) -> None:
        self.pool = os.environ["GMUX_TASK_POOL"]
        self.sock_path = os.environ.get("GMUX_WORKER_SOCK", "worker.sock")
        self.spool = os.environ.get("GMUX_TASK_SPOOL", "")
        self.idle = float(os.environ.get("GMUX_WORKER_IDLE", "60"))
        self.fresh = os.environ.get("GMUX_WORKER_FRESH", "0") == "1"
        self.sock: Optional[socket.socket] = None
        self.sel = selectors.DefaultSelector()
        self.reader = wire.Reader()
        self.spares: "list[Child]" = []     # forked, waiting for a task
        self.busy: Optional[Child] = None
        self.kept: Optional[Child] = None   # not fresh: ran the last task
        self.fns: Dict[bytes, Any] = {}
        self.last = time.monotonic()
        self.zombies: "list[int]" = []
        self.backlog: Optional[tuple] = None

    # -- the daemon's connection

    def connect(self, deadline: float) -> bool:
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.sock_path)
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)
        self.sock = s
        self.reader = wire.Reader()
        score, device = _score()
        s.sendall(wire.frame(wire.HELLO, {"pool": self.pool, "score": score,
                                          "device": device}))
        self.sel.register(s, selectors.EVENT_READ, "daemon")
        return True

    def disconnect(self) -> None:
        if self.sock is not None:
            self.sel.unregister(self.sock)
            self.sock.close()
            self.sock = None
        if self.busy is not None:      # the new daemon leases it again
            self.kill(self.busy)
        self.backlog = None

    # -- children

    def fork(self) -> Child:
        task_r, task_w = os.pipe()
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(task_w)
            os.close(out_r)
            _child_main(task_r, out_w, self.fns, self.spool, self.sock,
                        self.fresh)
        os.close(task_r)
        os.close(out_w)
        return Child(pid, task_w, out_r)

    def kill(self, c: Child) -> None:
        try:
            os.kill(c.pid, signal.SIGKILL)
        except OSError:
            pass
        self.reap(c)

    def reap(self, c: Child) -> None:
        if c is self.busy:
            self.sel.unregister(c.out_r)
            self.busy = None
        for fd in (c.task_w, c.out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            _, st = os.waitpid(c.pid, 0)
            c.status = st
        except ChildProcessError:
            pass

    def lease(self, hdr: dict, data: bytes) -> None:
        if self.busy is not None:
            # the child's outcome went straight to the daemon, which
            # leased the next before the child's byte came here
            self.backlog = (hdr, data)
            return
        fnb = _function_of(hdr, data)
        if fnb and fnb not in self.fns and len(self.fns) < 64:
            try:                             # later children have it
                self.fns[fnb] = cloudpickle.loads(fnb)
            except Exception:
                pass
        c = self.child_for(fnb)
        c.task, c.fn = hdr["task"], fnb
        if "file" in hdr:
            msg = hdr["file"].encode()
            kind = b"F"
        else:
            msg, kind = data, b"I"
        try:
            _write_all(c.task_w, kind + c.task.to_bytes(8, "big") +
                       _LEN.pack(len(msg)) + msg)
        except OSError:
            pass                            # it died: the read says so
        self.busy = c
        self.sel.register(c.out_r, selectors.EVENT_READ, "child")

    def child_for(self, fnb: bytes) -> Child:
        """The child for a task of function fnb: the kept one if its tasks
        were of that function, else one that has run nothing (and the kept
        one goes: it is never handed another function's task)."""
        k, self.kept = self.kept, None
        if k is not None:
            if fnb and k.fn == fnb:
                return k
            self.reap_later(k)         # its pipe closed: it exits
        return self.spares.pop(0) if self.spares else self.fork()

    def child_readable(self) -> None:
        """The busy child said it sent its outcome, or died first."""
        c = self.busy
        assert c is not None
        if os.read(c.out_r, 1):
            self.sel.unregister(c.out_r)
            self.busy = None
            self.last = time.monotonic()
            if self.fresh or not c.fn:
                self.reap_later(c)
            else:
                self.kept = c           # it takes the next of its function
            if self.backlog is not None:
                hdr, data = self.backlog
                self.backlog = None
                self.lease(hdr, data)
            return
        task = c.task
        self.reap(c)
        self.send_done(task, lost=_how(c.status))

    def reap_later(self, c: Child) -> None:
        for fd in (c.task_w, c.out_r):
            os.close(fd)
        self.zombies.append(c.pid)

    def send_done(self, task: Any, data: bytes = b"", lost: str = "",
                  file: str = "") -> None:
        hdr: Dict[str, Any] = {"task": task}
        if lost:
            hdr["lost"] = lost
        if file:
            hdr["file"] = file
        self.last = time.monotonic()
        if self.sock is not None:
            try:
                self.sock.sendall(wire.frame(wire.DONE, hdr, data))
            except OSError:
                pass

    def cancel(self, hdr: dict) -> None:
        c = self.busy
        if self.backlog is not None and \
                self.backlog[0]["task"] == hdr.get("task"):
            self.backlog = None
        elif c is not None and c.task == hdr.get("task"):
            self.kill(c)

    def daemon_readable(self) -> bool:
        assert self.sock is not None
        try:
            data = self.sock.recv(1 << 20)
        except OSError:
            data = b""
        if not data:
            return False
        for kind, hdr, body in self.reader.feed(data):
            if kind == wire.LEASE:
                self.lease(hdr, body)
            elif kind == wire.CANCEL:
                self.cancel(hdr)
        return True

    def run(self) -> None:
        if not self.connect(time.monotonic() + 10):
            sys.exit("gmux worker: cannot reach %s" % self.sock_path)
        cwd = os.environ.get("GMUX_WORKER_CWD")
        if cwd:
            try:
                os.chdir(cwd)
            except OSError:
                pass
        path = os.environ.get("GMUX_WORKER_PATH")
        if path:
            sys.path[:0] = [p for p in path.split(os.pathsep)
                            if p not in sys.path]
        tree = os.environ.get("GMUX_WORKER_TREE_PATH")
        if tree:                # a remote host's: the caller's synced tree
            here = os.getcwd()
            sys.path[:0] = [os.path.normpath(os.path.join(here, r))
                            for r in tree.split(os.pathsep) if r]
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        gc.collect()        # what the children share stays shared
        gc.freeze()
        self.spares.append(self.fork())
        while True:
            # A fork only when nothing waits: a lease that comes while
            # one forks waits for it.
            short = self.spares_short()
            events = self.sel.select(timeout=0 if short else 1.0)
            for key, _ in events:
                if key.data == "daemon" and not self.daemon_readable():
                    self.disconnect()
                    if not self.connect(time.monotonic() + self.idle):
                        return self.exit()
                elif key.data == "child" and self.busy is not None:
                    self.child_readable()
            if short and not events:
                self.spares.append(self.fork())
            self.reap_zombies()
            if (self.busy is None and
                    time.monotonic() - self.last > self.idle):
                return self.exit()

    def spares_short(self) -> bool:
        """Whether a child should be forked now: fresh, until SPARES wait;
        not fresh, until one does (for another function's task, or the
        next after a crash)."""
        return len(self.spares) < (SPARES if self.fresh else 1)

    def reap_zombies(self) -> None:
        left = []
        for pid in self.zombies:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    left.append(pid)
            except ChildProcessError:
                pass
        self.zombies = left

    def exit(self) -> None:
        for c in self.spares + ([self.kept] if self.kept else []):
            self.kill(c)
        if self.sock is not None:
            self.sock.close()


def _function_of(hdr: dict, data: bytes) -> bytes:
    """The pickled function of a lease's call: in its bytes, or at the
    head of its file (only that much is read); b"" if unreadable."""
    if "file" not in hdr:
        return wire.split_call(data)[0]
    try:
        with open(hdr["file"], "rb") as f:
            n = _LEN.unpack(f.read(4))[0]
            return f.read(n)
    except (OSError, struct.error):
        return b""


def _how(status: Optional[int]) -> str:
    if status is None:
        return "the task's process ended without a result"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return "the task's process was killed by %s" % name
    return ("the task's process exited with status %d before returning"
            % os.WEXITSTATUS(status))


def _score() -> "tuple[float, str]":
    """(score, device): a card's nominal figure times the share, or a
    measured CPU figure for a CPU-only worker."""
    models = dict(kv.split("=", 1) for kv in
                  os.environ.get("GMUX_CARD_MODELS", "").split(",")
                  if "=" in kv)
    dev = (os.environ.get("CUDA_VISIBLE_DEVICES") or
           os.environ.get("HIP_VISIBLE_DEVICES") or "").split(",")[0]
    share = float(os.environ.get("GMUX_SHARE", "0") or 0)
    model = models.get(dev)
    if model and share > 0:
        for k, v in NOMINAL.items():
            if k in model:
                return round(v * share, 3), model
        return round(100.0 * share, 3), model
    t = time.perf_counter()
    x = 0.0
    for i in range(20000):
        x += i * 0.5
    return round(0.02 / (time.perf_counter() - t), 3), "cpu"


def _pin_cpus() -> None:
    """With GMUX_WORKER_CPUS=N, the worker and its children on N of the
    CPUs it may use, from an offset its job's number gives (workers of one
    host spread over them); N at least all of them leaves them all."""
    n = int(os.environ.get("GMUX_WORKER_CPUS", "0") or 0)
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return
    if n <= 0 or n >= len(cpus):
        return
    digits = "".join(ch for ch in os.environ.get("GMUX_JOB_ID", "")
                     if ch.isdigit())
    start = int(digits or 0) * n
    os.sched_setaffinity(0, {cpus[(start + i) % len(cpus)]
                             for i in range(n)})


def main() -> None:
    os.environ["GMUX_LOCAL"] = "1"     # a task's own @mesh calls run here
    _pin_cpus()
    Server().run()


if __name__ == "__main__":
    main()
