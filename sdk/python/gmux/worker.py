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
RECV = 1 << 16      # under malloc's mmap threshold: no mmap per read

try:
    import ctypes
    _prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
except (ImportError, OSError, AttributeError):
    _prctl = None
_pidfd_open: Any = getattr(os, "pidfd_open", None)

#: nominal fp16 dense TFLOP/s of a whole card, for fake cards' scores
NOMINAL = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0,
           "L4": 121.0, "A10": 125.0, "T4": 65.0, "V100": 125.0,
           "MI300X": 1307.0, "MI250X": 383.0, "4090": 330.0}


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
        self.zyg = False        # the zygote's child, not the server's
        self.pidfd = -1         # watched for its end (see Server.watch)
        self.sent = 0           # tasks given, and done ("S" read)
        self.done = 0
        self.done_ns = 0        # when the last was done


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
    buf = bytearray()
    while True:
        _child_task(task_r, fns, spool, sock, buf)
        _write_all(out_w, b"S" + time.monotonic_ns().to_bytes(8, "big"))
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


def _next_task(task_r: int, buf: bytearray) -> "tuple[bytes, int, bytes]":
    """The next task on the pipe: its kind, number and bytes.  One read
    takes a small one whole (the server writes each at once); what a read
    took past it stays in buf.  The pipe's end: exit."""
    while len(buf) < 13 or len(buf) < 13 + _LEN.unpack_from(buf, 9)[0]:
        more = os.read(task_r, 1 << 16)
        if not more:
            os._exit(0)
        buf += more
    n = 13 + _LEN.unpack_from(buf, 9)[0]
    kind, task, body = bytes(buf[:1]), int.from_bytes(buf[1:9], "big"), \
        bytes(buf[13:n])
    del buf[:n]
    return kind, task, body


def _child_task(task_r: int, fns: Dict[bytes, Any], spool: str,
                sock: Optional[socket.socket], buf: bytearray) -> None:
    hdr, task, body = _next_task(task_r, buf)
    stream, hdr = hdr.islower(), hdr.upper()
    if hdr in (b"F", b"G"):
        with open(body.decode(), "rb") as f:
            if hdr == b"G":         # a streamed call's: this task's
                os.unlink(body.decode())
            body = f.read()
    outcome = _execute(body, fns)
    del body
    hdr_out: Dict[str, Any] = {"task": task}
    if len(outcome) > wire.INLINE_MAX and stream:
        _stream_outcome(sock, task, outcome)
        return
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


def _stream_outcome(sock: Optional[socket.socket], task: int,
                    outcome: bytes) -> None:
    """A result over a frame to a daemon whose spool this worker cannot
    reach: U frames of its parts, then a D with its size."""
    if sock is None:
        return
    view = memoryview(outcome)
    try:
        for off in range(0, len(outcome), wire.CHUNK):
            sock.sendall(wire.frame(wire.UPLOAD, {"task": task},
                                    view[off:off + wire.CHUNK]))
        sock.sendall(wire.frame(wire.DONE, {"task": task,
                                            "size": len(outcome)}))
    except OSError:
        pass


def _zygote_main(zz: socket.socket, fns: Dict[bytes, Any], spool: str,
                 sock: Optional[socket.socket], fresh: bool) -> None:
    """Runs in the zygote: a child of the server that has run nothing and
    forks the spares, so that a fork (milliseconds of page tables) is
    never on the server's loop, where a lease would wait for it.  It
    takes "N" (fork one: its pid and the server's ends of its pipes go
    back, "S"), "F" + a function's pickle (unpickled here, so later spares
    have it), and says "E" + pid + status when a spare it forked ended
    (the server is not their parent).  It dies with the server."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(zz, selectors.EVENT_READ, "server")
    sel.register(wake_r, selectors.EVENT_READ, "chld")
    while True:
        for key, _ in sel.select():
            if key.data == "chld":
                os.read(wake_r, 512)
                _zygote_reap(zz)
                continue
            try:
                msg = zz.recv(1 << 17)
            except InterruptedError:
                continue
            if not msg:
                os._exit(0)
            if msg[:1] == b"N":
                _zygote_fork(zz, wake_r, wake_w, fns, spool, sock, fresh)
            elif msg[:1] == b"F" and msg[1:] not in fns:
                try:
                    fns[msg[1:]] = cloudpickle.loads(msg[1:])
                except Exception:
                    pass


def _zygote_fork(zz: socket.socket, wake_r: int, wake_w: int,
                 fns: Dict[bytes, Any], spool: str,
                 sock: Optional[socket.socket], fresh: bool) -> None:
    task_r, task_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (task_w, out_r, wake_r, wake_w):
            os.close(fd)
        zz.close()
        _child_main(task_r, out_w, fns, spool, sock, fresh)
    os.close(task_r)
    os.close(out_w)
    try:
        socket.send_fds(zz, [b"S" + pid.to_bytes(4, "big")],
                        [task_w, out_r])
    except OSError:
        pass
    os.close(task_w)
    os.close(out_r)


def _zygote_reap(zz: socket.socket) -> None:
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        try:
            zz.send(b"E" + pid.to_bytes(4, "big") +
                    (st & 0xffffffff).to_bytes(4, "big"))
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
        self.watched: Optional[Child] = None    # whose pipe sel has
        self.kept: Optional[Child] = None   # not fresh: ran the last task
        self.fns: Dict[bytes, Any] = {}
        self.last = time.monotonic()
        self.zombies: "list[int]" = []
        self.backlog: Optional[tuple] = None
        self.vin: Optional[tuple] = None    # (lease, fd, path, bytes)
        self.zsock: Optional[socket.socket] = None     # the zygote
        self.zpid = 0
        self.asked = 0          # spares asked of the zygote, not come
        self.zstat: Dict[int, int] = {}     # its children's statuses

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
        if self.kept is not None:      # it holds the old connection
            self.kill(self.kept)
            self.kept = None
        self.backlog = None
        self.stream_drop()

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
        self.reap(c, status=False)

    def reap(self, c: Child, status: bool = True) -> None:
        """Closes c's pipes and takes its exit status (from the zygote if
        it forked c, waited for only where a status is wanted)."""
        self.unwatch(c)
        if c is self.busy:
            self.busy = None
        for fd in (c.task_w, c.out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        if c.zyg:
            if status:
                c.status = self.zygote_status(c.pid)
            return
        try:
            _, st = os.waitpid(c.pid, 0)
            c.status = st
        except ChildProcessError:
            pass

    # -- the zygote (see _zygote_main)

    def zygote_start(self) -> None:
        """Forks the zygote; without one (a jail that refuses its socket,
        or it died), this loop forks the spares itself."""
        try:
            zs, zz = socket.socketpair(socket.AF_UNIX,
                                       socket.SOCK_SEQPACKET)
        except OSError:
            return
        pid = os.fork()
        if pid == 0:
            zs.close()
            _zygote_main(zz, self.fns, self.spool, self.sock, self.fresh)
            os._exit(0)
        zz.close()
        zs.setblocking(False)      # events go stale: one may be read
        self.zsock, self.zpid, self.asked = zs, pid, 0
        self.sel.register(zs, selectors.EVENT_READ, "zygote")

    def zygote_stop(self) -> None:
        """The zygote goes (its spares with it): it died, or it holds a
        connection that went."""
        for c in self.spares:
            self.kill(c)
        self.spares = []
        if self.zsock is None:
            return
        self.sel.unregister(self.zsock)
        self.zsock.close()
        self.zsock, self.asked = None, 0
        try:
            os.kill(self.zpid, signal.SIGKILL)
            os.waitpid(self.zpid, 0)
        except OSError:
            pass

    def zygote_readable(self) -> None:
        assert self.zsock is not None
        try:
            msg, fds, _, _ = socket.recv_fds(self.zsock, 64, 2)
        except BlockingIOError:
            return                  # read already (zygote_status)
        except OSError:
            msg, fds = b"", []
        if not msg:
            for fd in fds:
                os.close(fd)
            return self.zygote_stop()        # direct forks from now
        pid = int.from_bytes(msg[1:5], "big")
        if msg[:1] == b"S" and len(fds) == 2:
            c = Child(pid, fds[0], fds[1])
            c.zyg = True
            self.spares.append(c)
            self.asked -= 1
        elif msg[:1] == b"E" and len(msg) == 9:
            if len(self.zstat) > 1024:
                self.zstat.clear()
            self.zstat[pid] = int.from_bytes(msg[5:9], "big")
        else:
            for fd in fds:
                os.close(fd)

    def zygote_status(self, pid: int) -> Optional[int]:
        """The status of the zygote's child pid, which has ended (a few
        seconds at most: the zygote reaps at once)."""
        end = time.monotonic() + 5
        while pid not in self.zstat and self.zsock is not None and \
                time.monotonic() < end:
            r = selectors.DefaultSelector()
            r.register(self.zsock, selectors.EVENT_READ)
            if r.select(timeout=max(0.0, end - time.monotonic())):
                self.zygote_readable()
            r.close()
        return self.zstat.pop(pid, None)

    def zygote_learn(self, fnb: bytes) -> None:
        """A function the server unpickled: the zygote too, so that the
        spares it forks from now have it."""
        if self.zsock is not None and len(fnb) < 60000:
            try:
                self.zsock.send(b"F" + fnb)
            except OSError:
                pass

    def lease(self, hdr: dict, data: bytes) -> None:
        if self.busy is not None and self.busy.pidfd >= 0:
            # The daemon leases the next once the last one's outcome
            # came, which the child sent: it is done with it (its byte
            # may not be here yet; nothing waits for it).
            c, self.busy = self.busy, None
            if self.kept is not None:
                self.reap_later(self.kept)
            self.kept = c
        if self.busy is not None:
            # the child's outcome went straight to the daemon, which
            # leased the next before the child's byte came here
            self.backlog = (hdr, data)
            return
        fnb = _function_of(hdr, data)
        if fnb and fnb not in self.fns and len(self.fns) < 64:
            try:                             # later children have it
                self.fns[fnb] = cloudpickle.loads(fnb)
                self.zygote_learn(fnb)
            except Exception:
                pass
        c = self.child_for(fnb)
        c.task, c.fn = hdr["task"], fnb
        if "file" in hdr:
            msg = hdr["file"].encode()
            kind = b"G" if hdr.get("streamed") else b"F"
        else:
            msg, kind = data, b"I"
        if hdr.get("stream"):
            kind = kind.lower()         # its result streamed back
        try:
            _write_all(c.task_w, kind + c.task.to_bytes(8, "big") +
                       _LEN.pack(len(msg)) + msg)
        except OSError:
            pass                            # it died: the read says so
        c.sent += 1
        self.last = time.monotonic()
        self.busy = c
        self.watch(c)
        if c.sent - c.done > 4096:
            self.drain(c)                   # its pipe has room for more

    def drain(self, c: Child) -> None:
        """Takes the bytes c wrote since the last time, each task's "S"
        and when it was done (a child watched by its pidfd)."""
        while True:
            try:
                b = os.read(c.out_r, 9 * 512)
            except (BlockingIOError, OSError):
                return
            if not b:
                return
            c.done += len(b) // 9
            c.done_ns = int.from_bytes(b[-8:], "big")

    def watch(self, c: Child) -> None:
        """Watches c's pipe (its byte when a task is done, or its end),
        once for all its tasks: no epoll_ctl per task."""
        if self.watched is c:
            return
        if self.watched is not None:
            self.unwatch(self.watched)
        if not self.fresh and c.pidfd < 0 and _pidfd_open is not None:
            # Not fresh: its end, not its byte per task, wakes this loop
            # (the bytes are read when they matter: drain).
            try:
                c.pidfd = _pidfd_open(c.pid)
                os.set_blocking(c.out_r, False)
            except OSError:
                c.pidfd = -1
        self.sel.register(c.pidfd if c.pidfd >= 0 else c.out_r,
                          selectors.EVENT_READ, c)
        self.watched = c

    def unwatch(self, c: Child) -> None:
        if self.watched is c:
            self.sel.unregister(c.pidfd if c.pidfd >= 0 else c.out_r)
            self.watched = None
        if c.pidfd >= 0:
            os.close(c.pidfd)
            c.pidfd = -1

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
        if os.read(c.out_r, 9):
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

    def child_event(self, c: Child) -> None:
        """c's pipe is readable (the busy child's byte or end), or its
        pidfd (it ended); or the kept one ended (killed while it
        waited)."""
        if c.pidfd >= 0:
            self.drain(c)
            if c is self.busy and c.done < c.sent:
                task = c.task
                self.reap(c)
                return self.send_done(task, lost=_how(c.status))
            if c is self.busy:
                self.busy = None
        if c is self.busy:
            self.child_readable()
        elif c is self.kept or c.pidfd >= 0:
            if c is self.kept:
                self.kept = None
            self.reap(c, status=False)

    def idle_now(self) -> bool:
        """Whether no task has run for self.idle seconds; the busy child
        watched by its pidfd may have finished meanwhile."""
        c = self.busy
        if c is not None and c.pidfd >= 0:
            self.drain(c)
            if c.done >= c.sent:
                self.busy, self.kept = None, c
                if self.last < c.done_ns / 1e9:
                    self.last = c.done_ns / 1e9
        return (self.busy is None and
                time.monotonic() - self.last > self.idle)

    def reap_later(self, c: Child) -> None:
        self.unwatch(c)
        for fd in (c.task_w, c.out_r):
            os.close(fd)
        if not c.zyg:
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

    # -- a call streamed to this worker (docs/tasks.md, "To a worker")

    def stream_start(self, hdr: dict) -> None:
        """A lease whose call comes in V frames: to a file here first."""
        path = os.path.abspath(".gmux-call-%d" % hdr["task"])
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.vin = (hdr, fd, path, 0)
        if hdr["size"] == 0:
            self.stream_part(hdr, b"")

    def stream_part(self, hdr: dict, body: bytes) -> None:
        if self.vin is None or self.vin[0]["task"] != hdr.get("task"):
            return
        lease, fd, path, have = self.vin
        _write_all(fd, body)
        have += len(body)
        self.vin = (lease, fd, path, have)
        if have < lease["size"]:
            return
        os.close(fd)
        self.vin = None
        self.lease(dict(lease, file=path, streamed=True), b"")

    def stream_drop(self) -> None:
        if self.vin is not None:
            os.close(self.vin[1])
            try:
                os.unlink(self.vin[2])
            except OSError:
                pass
            self.vin = None

    def cancel(self, hdr: dict) -> None:
        if self.vin is not None and self.vin[0]["task"] == hdr.get("task"):
            self.stream_drop()
        c = self.busy
        if self.backlog is not None and \
                self.backlog[0]["task"] == hdr.get("task"):
            self.backlog = None
        elif c is not None and c.task == hdr.get("task"):
            self.kill(c)

    def daemon_readable(self) -> bool:
        assert self.sock is not None
        try:
            data = self.sock.recv(RECV)
        except OSError:
            data = b""
        if not data:
            return False
        for kind, hdr, body in self.reader.feed(data):
            if kind == wire.LEASE and "size" in hdr and "file" not in hdr:
                self.stream_start(hdr)
            elif kind == wire.VALUE:
                self.stream_part(hdr, body)
            elif kind == wire.LEASE:
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
        self.zygote_start()
        while True:
            # The zygote forks the spares, off this loop; without it, a
            # fork here only when nothing waits (a lease that comes while
            # one forks waits for it).
            short = self.spares_short()
            while short and self.zsock is not None:
                try:
                    self.zsock.send(b"N")
                except OSError:
                    break
                self.asked += 1
                short = self.spares_short()
            events = self.sel.select(timeout=0 if short else 1.0)
            for key, _ in events:
                if key.data == "daemon" and not self.daemon_readable():
                    self.disconnect()
                    if not self.connect(time.monotonic() + self.idle):
                        return self.exit()
                    self.zygote_stop()  # it holds the old connection
                    self.zygote_start()
                elif isinstance(key.data, Child):
                    self.child_event(key.data)
                elif key.data == "zygote" and self.zsock is not None:
                    self.zygote_readable()
            if short and not events:
                self.spares.append(self.fork())
            self.reap_zombies()
            if time.monotonic() - self.last > self.idle and \
                    self.idle_now():
                return self.exit()

    def spares_short(self) -> bool:
        """Whether a child should be forked now: fresh, until SPARES wait;
        not fresh, until one does (for another function's task, or the
        next after a crash)."""
        return (len(self.spares) + self.asked <
                (SPARES if self.fresh else 1))

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
        self.spares = []
        self.zygote_stop()
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
