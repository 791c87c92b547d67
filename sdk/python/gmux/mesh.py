"""``@mesh``: a function whose calls run as tasks on warm workers.

A call is a task on the daemon's broker (docs/tasks.md); a worker is an
ordinary gmux job with the function's share, memory cap and fence.
Workers are pooled per host, share, memory, fence, interpreter and the
caller's path, started when a pool has none (as many as the cards have
room for, for a map), and exit after a minute idle.  With no daemon and
no configured host, or with ``GMUX_LOCAL=1``, calls run in the caller's
process (one warning per process) and return the same values.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import hashlib
import json
import logging
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence,
                    Tuple, Union)

from . import api, failover, values, wire
from .client import APIError, NoDaemon, socket_path

log = logging.getLogger("gmux")

__all__ = ["mesh", "MeshFunction", "MapError", "TaskError", "TaskTimeout",
           "Options"]

#: a map payload's scheduling hints (gpumesh's): never passed to the call
HINTS = ("cost", "gpu_memory_mb")
SPAWN_GRACE = 30.0          # a started worker counts as coming this long
FETCHERS = 4                # threads downloading spooled results, at most
FETCH_IDLE = 10.0           # a fetcher with none to do ends after this
RECONNECT = 60.0            # how long a caller waits for a daemon back
START_TRIES = 3             # failed worker starts in a row: its calls fail
START_BACKOFF = 0.5         # seconds after a failed start, then doubled


class TaskError(Exception):
    """A task the daemon accepted and could not finish: its worker was
    lost three times, or it was refused.  Never re-run locally."""


class TaskTimeout(TaskError, TimeoutError):
    """A task ran past its ``timeout`` and was killed."""


class MapError(Exception):
    """Some calls of a ``.map`` raised.  ``results`` has every call's
    value (None where it raised), ``exceptions`` every (index, exception),
    in input order."""

    def __init__(self, results: List[Any],
                 exceptions: List[Tuple[int, BaseException]]) -> None:
        i, e = exceptions[0]
        super().__init__("%d of %d calls failed; the first (item %d): %s: %s"
                         % (len(exceptions), len(results), i,
                            type(e).__name__, e))
        self.results = results
        self.exceptions = exceptions


@dataclass(frozen=True)
class Options:
    """What a mesh function's workers get.  ``share`` of a card (0: CPU
    only), ``mem`` cap, ``gpu`` (a model name the card must have),
    ``cards`` per worker, ``timeout`` seconds per call, the fence
    (``deny_net``, ``allow``), ``priority`` and ``preemptible`` as for
    jobs, ``target`` a remote's name (None: the default connection),
    ``idle`` seconds before an unused worker exits, ``fresh``: False (the
    default), a call runs in the process of the worker's last call if that
    was a call of the same function (it sees what that one left in memory:
    module globals, caches; never another function's or owner's), True,
    each call in a newly forked process (nothing shared, slower),
    ``python`` the name of an interpreter
    the host publishes (PYTHON_INTERPRETERS, docs/tenants.md) for the
    workers to run on instead of this one (it needs python3-cloudpickle,
    and a Python whose pickles this one can read)."""
    share: Optional[float] = None
    mem: Union[int, str, None] = None
    gpu: Optional[str] = None
    cards: Optional[int] = None
    cpus: Optional[int] = None
    timeout: Optional[float] = None
    deny_net: bool = False
    allow: Tuple[str, ...] = ()
    priority: Optional[int] = None
    preemptible: bool = False
    target: Optional[str] = None
    card: Optional[int] = None
    idle: float = 60.0
    fresh: bool = False
    python: Optional[str] = None

    def replace(self, **kw: Any) -> "Options":
        if "allow" in kw and kw["allow"] is not None:
            kw["allow"] = tuple(kw["allow"])
        bad = set(kw) - {f.name for f in dataclasses.fields(self)}
        if bad:
            raise TypeError("unknown option %s" % ", ".join(sorted(bad)))
        return dataclasses.replace(self, **kw)


# -- the local fallback

_warned = False


def _local_warning(why: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn("gmux: %s; running calls in this process" % why,
                      RuntimeWarning, stacklevel=4)


def _run_local(fn: Callable, args: tuple, kwargs: dict) -> cf.Future:
    f: cf.Future = cf.Future()
    try:
        f.set_result(fn(*args, **kwargs))
    except BaseException as e:
        f.set_exception(e)
    return f


# -- sessions: one task stream per daemon

class _Pending:
    __slots__ = ("future", "frame", "pool", "file", "value")

    def __init__(self, future: cf.Future, frame: bytes, pool: str,
                 file: Optional[str], value: Optional[bytes] = None) -> None:
        self.future, self.frame, self.pool, self.file = (future, frame,
                                                         pool, file)
        # a call uploaded to the entry's spool: sent again to a new entry
        self.value = value


class Session:
    """A caller's task stream to one daemon, and the workers it starts."""

    def __init__(self, target: Optional[str]) -> None:
        self.target = target
        self.api = api.Client(target)
        self.api_lock = threading.Lock()
        self.id = secrets.token_hex(16)
        self.lock = threading.Lock()
        self.pending: Dict[int, _Pending] = {}
        self.next_id = 1
        self.spawned: Dict[str, List[Tuple[str, float]]] = {}
        self.specs: Dict[str, Tuple[Options, dict]] = {}
        self.keys: Dict[Options, str] = {}
        self.ensured: set = set()
        self.ensure_lock = threading.Lock()
        self.start_fails: Dict[str, int] = {}     # failed starts in a row
        self.retry_at: Dict[str, float] = {}      # no start before
        self.closed = False
        self.fetch_queue: List[Tuple[_Pending, dict]] = []
        self.fetch_cond = threading.Condition(self.lock)
        self.fetchers = self.fetch_idle = 0
        self.sock: Optional[socket.socket] = None
        self._open()
        self.remote = self.api.target is not None
        self.sync_name = target             # gmux sync's name for it
        self.cards = self.api.cards()
        self.member = self._member()
        self.cluster_jobs: Dict[str, str] = {}  # worker jobs: the member
        self.peers: List[failover.Target] = []  # members to move to
        self.entry = self.api.target            # the entry's, over TCP
        if self.remote and self.member:
            self._learn_peers()
        self.thread = threading.Thread(target=self._read, name="gmux-tasks",
                                       daemon=True)
        self.thread.start()

    def _open(self, client: Optional[api.Client] = None) -> None:
        sock, hdrs, extra = (client or self.api).upgrade(
            "/v1/tasks/connect?session=" + self.id)
        if (client or self.api).target is not None:
            failover.keepalive(sock)
        self.worker_dir = hdrs.get("gmux-worker-dir")
        self.spool = hdrs.get("gmux-spool")
        self.reader = wire.Reader()
        self.early = extra
        self.sock = sock

    def _member(self) -> Optional[str]:
        """The cluster member this session's stream enters (its broker
        owns the tasks), or None: a host of its own."""
        try:
            c = self.api.call("GET", "/v1/cluster")
        except APIError:
            return None
        if c.get("mode") != "member" or not c.get("member"):
            return None
        return c.get("name")

    # -- submitting

    def submit(self, opts: Options, fn: Callable,
               calls: Sequence[Tuple[tuple, dict]]) -> List[cf.Future]:
        try:
            pool = self.pool(opts, len(calls))
        except OSError:
            if not (self.remote and self.member and self.peers):
                raise
            # the entry is going: its stream's reader moves to another
            # member, and starts workers there for these calls
            pool = self.key(opts)
        if self.remote or self.member:
            # a caller over TCP has its tree on every worker (the other
            # members' fetch it from the entry); one on a member's
            # socket has none on the other members
            _by_value(fn, _sync_dir() if self.remote else None)
        fnb = wire.dump_function(fn)
        timeout = int(opts.timeout * 1000) if opts.timeout else 0
        futs: List[cf.Future] = []
        with self.lock:
            frames = []
            for args, kwargs in calls:
                body = wire.dump_call(fnb, args, kwargs)
                cid = self.next_id
                self.next_id += 1
                hdr: Dict[str, Any] = {"id": cid, "pool": pool}
                if timeout:
                    hdr["timeout_ms"] = timeout
                file = value = None
                f: cf.Future = cf.Future()
                f.set_running_or_notify_cancel()
                if len(body) > wire.INLINE_MAX and not self.spool:
                    self._send(frames)      # those before it start now
                    frames = []
                    err = self._upload(cid, body)
                    if err is not None:
                        f.set_exception(err)
                        futs.append(f)
                        continue
                    hdr["file"] = self._value_name(cid)
                    value, body = body, b""
                elif len(body) > wire.INLINE_MAX:
                    file = self._spool_write(cid, body)
                    hdr["file"] = os.path.basename(file)
                    body = b""
                fr = wire.frame(wire.SUBMIT, hdr, body)
                self.pending[cid] = _Pending(f, fr, pool, file, value)
                frames.append(fr)
                futs.append(f)
            self._send(frames)
        return futs

    def _value_name(self, cid: int) -> str:
        return "c%s-%d" % (self.id[:12], cid)

    def _upload(self, cid: int, body: bytes) -> Optional[Exception]:
        """A big call's bytes up to the entry's spool (docs/tasks.md, "Big
        values over TCP"), with self.lock let go meanwhile (results go
        on coming); the exception its call fails with, or None.  An
        entry lost meanwhile (its upload cut, or the stream moved while
        it went: _upload_again took only the calls pending then) has
        them again at the entry the stream moved to."""
        end = time.monotonic() + RECONNECT
        while True:
            entry = self.api
            self.lock.release()
            try:
                err = self._put(cid, body, entry)
            finally:
                self.lock.acquire()
            if self.api is not entry and not self.closed:
                continue        # this call is not pending yet: up again
            if not isinstance(err, OSError):
                return err
            if not (self.remote and self.member and self.peers) or \
                    self.closed or time.monotonic() >= end:
                return TaskError("cannot send a call's %d bytes to %s: "
                                 "%s" % (len(body), self.member or
                                         self.target, err))
            # the entry is going: wait for the stream to move
            self.lock.release()
            try:
                while (self.api is entry and not self.closed and
                       time.monotonic() < end):
                    time.sleep(0.05)
            finally:
                self.lock.acquire()

    def _put(self, cid: int, body: bytes,
             entry: api.Client) -> Optional[Exception]:
        """The call's bytes up to entry: None, the daemon's refusal (a
        TaskError) or the OSError that cut the transfer."""
        try:
            values.upload(entry.target, self._value_name(cid), body)
            return None
        except APIError as e:
            return TaskError(str(e))
        except OSError as e:
            return e

    def _spool_write(self, cid: int, body: bytes) -> str:
        path = os.path.join(self.spool, "c%s-%d" % (self.id[:12], cid))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        return path

    def _send(self, frames: List[bytes]) -> None:
        """Sends under self.lock; a broken connection is the reader's to
        mend (it sends every pending frame again)."""
        if self.sock is None:
            return
        buf: List[bytes] = []
        size = 0
        try:
            for fr in frames:
                buf.append(fr)
                size += len(fr)
                if size > 1 << 18:
                    self.sock.sendall(b"".join(buf))
                    buf, size = [], 0
            if buf:
                self.sock.sendall(b"".join(buf))
        except OSError:
            pass

    # -- results

    def _read(self) -> None:
        while not self.closed:
            data = self.early
            self.early = b""
            try:
                while True:
                    if data:
                        self._frames(self.reader.feed(data))
                    # 64 KiB: under malloc's mmap threshold (a bigger
                    # buffer is an mmap and munmap per read)
                    data = self.sock.recv(1 << 16) if self.sock else b""
                    if not data:
                        break
            except (OSError, wire.FrameError):
                pass
            if self.closed or not self._reconnect():
                return

    def _frames(self, frames: list) -> None:
        acks = []
        for kind, hdr, data in frames:
            if kind == wire.RESULT:
                if self._resolve(hdr, data):
                    acks.append(hdr["id"])
            elif kind == wire.POOL:
                threading.Thread(target=self._pool_empty,
                                 args=(hdr["pool"], hdr.get("why")),
                                 daemon=True).start()
        if acks:
            with self.lock:
                self._send([wire.frame(wire.ACK, {"ids": acks})])

    def _resolve(self, hdr: dict, data: bytes) -> bool:
        """Settles a result's Future; False if it is to be acked later:
        a result in the host's spool is downloaded off this thread (by a
        fetcher), so the results behind it go on coming meanwhile."""
        with self.lock:
            p = self.pending.pop(hdr["id"], None)
        if p is None:
            return True
        if hdr.get("state") != "done":
            err = hdr.get("error") or "the task failed"
            cls = TaskTimeout if err.startswith("timed out") else TaskError
            p.future.set_exception(cls(err))
            return True
        if hdr.get("file") and "size" in hdr:
            self._fetch_later(p, hdr)
            return False
        try:
            if hdr.get("file"):
                with open(hdr["file"], "rb") as f:
                    data = f.read()
            self._settle(p, *wire.load_outcome(data))
        except BaseException as e:
            self._settle(p, False, e)
        return True

    @staticmethod
    def _settle(p: _Pending, ok: bool, value: Any) -> None:
        if ok:
            p.future.set_result(value)
        else:
            p.future.set_exception(value)

    def _fetch_later(self, p: _Pending, hdr: dict) -> None:
        """Queues a spooled result for a fetcher; one more starts while
        fewer than FETCHERS are and every one is busy."""
        with self.lock:
            self.fetch_queue.append((p, hdr))
            if self.fetch_idle == 0 and self.fetchers < FETCHERS:
                self.fetchers += 1
                threading.Thread(target=self._fetcher, name="gmux-fetch",
                                 daemon=True).start()
            else:
                self.fetch_cond.notify()

    def _fetcher(self) -> None:
        """Downloads queued results, each then acked (the daemon keeps
        the file until then); ends after FETCH_IDLE s with none."""
        while True:
            with self.lock:
                self.fetch_idle += 1
                if not self.fetch_queue:
                    self.fetch_cond.wait(FETCH_IDLE)
                self.fetch_idle -= 1
                if not self.fetch_queue:
                    self.fetchers -= 1
                    return
                p, hdr = self.fetch_queue.pop(0)
            try:
                data = values.download(self.api.target, hdr["file"],
                                       hdr["size"])
                self._settle(p, *wire.load_outcome(data))
            except BaseException as e:
                self._settle(p, False, e)
            with self.lock:
                self._send([wire.frame(wire.ACK, {"ids": [hdr["id"]]})])

    def _reconnect(self) -> bool:
        """The daemon went away: wait for it back (or, a TCP caller of a
        cluster, move to another member), then send again every task
        without a result (it takes each once)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.remote and self.member and self.peers:
            return self._move()
        end = time.monotonic() + RECONNECT
        while time.monotonic() < end and not self.closed:
            try:
                self._open()
                break
            except (OSError, APIError):
                time.sleep(0.1)
        else:
            self._fail_all(ConnectionError(self._gone()))
            return False
        with self.api_lock:
            self.api.close()
        with self.lock:
            self._send([p.frame for _, p in sorted(self.pending.items())])
        log.info("gmux: reconnected; %d tasks sent again", len(self.pending))
        return True

    def _gone(self) -> str:
        t = self.api.target
        if t is None:
            return ("the gmux daemon (%s) did not come back within %d s" %
                    (socket_path(), RECONNECT))
        return ("the gmux host %s (%s:%d) did not come back within %d s" %
                (t.name, t.host, t.port, RECONNECT))

    # -- an entry member's loss (docs/python.md, "Across a cluster")

    def _learn_peers(self, ms: Optional[list] = None) -> None:
        """The other members, as the entry says them, to move to."""
        try:
            if ms is None:
                with self.api_lock:
                    ms = self.api.call("GET", "/v1/cluster/members")
            self.peers = failover.peers(ms, self.member or "",
                                        self.api.target)
        except (APIError, OSError, ValueError) as e:
            log.debug("gmux: the cluster's members: %s", e)

    def _move(self) -> bool:
        """The entry is gone: the entry again, then each other member,
        round after round for RECONNECT seconds; the first that takes
        the stream is the new entry."""
        end = time.monotonic() + RECONNECT
        cands = [self.api.target] + self.peers
        while time.monotonic() < end and not self.closed:
            for t in cands:
                if self.closed:
                    return False
                if self._enter(t):
                    return True
            time.sleep(0.2)
        if not self.closed:
            self._fail_all(ConnectionError(
                "no member of the cluster answers within %d s (tried %s)"
                % (RECONNECT, ", ".join(t.name for t in cands))))
        return False

    def _enter(self, t: failover.Target) -> bool:
        """Opens the session's stream on member t; on another member
        than the last, takes it as the entry (its workers start anew)."""
        c = failover.client_for(t, timeout=5.0)
        try:
            name = c.call("GET", "/v1/cluster").get("name")
            self._open(c)
        except (OSError, APIError, ValueError, AttributeError) as e:
            log.debug("gmux: member %s: %s", t.name, e)
            c.close()
            return False
        c.close()               # its next requests wait longer
        c.timeout = 60.0
        with self.api_lock:
            self.api.close()
            self.api = c
        old, self.member = self.member, name
        if name != old:
            self._moved(t, old)
            self._upload_again()
        with self.lock:
            self._send([p.frame for _, p in sorted(self.pending.items())])
        log.warning("gmux: entry member %s: %d tasks sent again", name,
                    len(self.pending))
        return True

    def _upload_again(self) -> None:
        """The pending calls uploaded to the old entry's spool go up to
        the new entry's before their frames are sent again; one that
        cannot fails with why."""
        with self.lock:
            big = [(cid, p) for cid, p in self.pending.items()
                   if p.value is not None]
        for cid, p in big:
            assert p.value is not None
            err = self._put(cid, p.value, self.api)
            if isinstance(err, OSError):
                err = TaskError("cannot send a call's %d bytes to %s: %s"
                                % (len(p.value), self.member, err))
            if err is not None:
                with self.lock:
                    if self.pending.pop(cid, None) is not None:
                        p.future.set_exception(err)

    def _moved(self, t: failover.Target, old: Optional[str]) -> None:
        """Member t is the entry now: the workers started for the old
        one are forgotten (those queued in the cluster stopped), and
        workers start for what is pending, again as room frees."""
        with self.ensure_lock:
            stale = list(self.cluster_jobs)
            self.spawned, self.cluster_jobs = {}, {}
            self.ensured, self.start_fails, self.retry_at = set(), {}, {}
            self.sync_name = failover.remote_name(t)
            # the old entry may come back: a candidate, last
            self.peers = [p for p in self.peers if p.pin != t.pin] + (
                [self.entry] if self.entry.pin != t.pin else [])
            self.entry = t
            try:
                with self.api_lock:
                    self.cards = self.api.cards()
            except (APIError, OSError):
                pass
        log.warning("gmux: entry member %s is gone; %s is the entry now",
                    old, self.member)
        threading.Thread(target=self._refill, args=(stale,),
                         name="gmux-refill", daemon=True).start()

    def _refill(self, stale: List[str]) -> None:
        """Starts workers on the new entry for the pending tasks, each
        second while some are pending and for SPAWN_GRACE at most (the
        old workers' shares free as their jobs end); stops the old
        entry's cluster jobs that are still queued."""
        end = time.monotonic() + SPAWN_GRACE
        first = True
        while not self.closed and time.monotonic() < end:
            with self.lock:
                want: Dict[str, int] = {}
                for p in self.pending.values():
                    want[p.pool] = want.get(p.pool, 0) + 1
            if not want:
                break
            with self.ensure_lock:
                for key, n in want.items():
                    try:
                        self._ensure(key, n)
                    except (APIError, OSError, TaskError) as e:
                        log.warning("gmux: cannot start a worker: %s", e)
            if first:
                self._stop_stale(stale)
                first = False
            time.sleep(1.0)

    def _stop_stale(self, jobs: List[str]) -> None:
        for jid in jobs:
            try:
                with self.api_lock:
                    self.api.call("POST", "/v1/cluster/jobs/%s/stop" % jid,
                                  {})
            except (APIError, OSError):
                pass

    def _fail_all(self, e: BaseException) -> None:
        with self.lock:
            pend, self.pending = self.pending, {}
        for p in pend.values():
            p.future.set_exception(e)

    # -- pools and workers

    def pool(self, opts: Options, want: int) -> str:
        """The pool key for opts, with workers started for want calls: at
        a pool's first use, for every map, and when the daemon says the
        pool has none; not on every call."""
        key = self.key(opts)
        if want > 1 or key not in self.ensured:
            with self.ensure_lock:
                self._ensure(key, want)
            self.ensured.add(key)
        return key

    def key(self, opts: Options) -> str:
        key = self.keys.get(opts)
        if key is None:
            spec = self._spec(opts)
            key = "s%s-%s" % (spec.get("share", 0), hashlib.sha256(
                json.dumps([spec, sys.executable, os.getcwd(), sys.path,
                            self.remote and _sync_dir() is not None],
                           sort_keys=True).encode()).hexdigest()[:20])
            self.specs[key] = (opts, spec)
            self.keys[opts] = key
        return key

    def _spec(self, opts: Options) -> dict:
        share = opts.share if opts.share is not None else (
            0.25 if self.cards_any() else 0)
        spec: Dict[str, Any] = {"share": share}
        if opts.mem is not None:
            spec["mem"] = opts.mem
        if opts.cards:
            spec["cards"] = opts.cards
        if opts.priority is not None:
            spec["priority"] = opts.priority
        if opts.preemptible:
            spec["preemptible"] = True
        if opts.deny_net:
            spec["deny_net"] = True
        if opts.allow:
            spec["allow"] = list(opts.allow)
        card = opts.card
        if opts.gpu is not None and card is None:
            match = [c.index for c in self.cards
                     if opts.gpu.lower() in c.model.lower()]
            if not match:
                raise ValueError("gpu: no card here is a %s (%s)" % (
                    opts.gpu, ", ".join(sorted({c.model for c in self.cards}))
                    or "no cards"))
            card = max(match, key=lambda i: self.cards[i].share_free)
        if card is not None:
            spec["card"] = card
        if opts.cpus:
            spec["cpus"] = opts.cpus       # the worker's, not the job's
        if opts.fresh:
            spec["fresh"] = True           # the worker's, not the job's
        if opts.python is not None:
            spec["python"] = opts.python   # the daemon puts it as argv[0]
        return spec

    def cards_any(self) -> bool:
        return bool(self.cards)

    def _room(self, spec: dict) -> int:
        """How many more workers of spec the cards hold now."""
        share = float(spec.get("share") or 0)
        if share <= 0:
            return os.cpu_count() or 1
        with self.api_lock:
            cards = self.api.cards()
        if "card" in spec:
            cards = [c for c in cards if c.index == spec["card"]]
        return sum(int(c.share_free / share + 1e-9) for c in cards)

    def _ensure(self, key: str, want: int) -> None:
        with self.api_lock:
            workers_all = self.api.workers(here=True)
        workers = [w for w in workers_all if w.pool == key]
        up = {w.job for w in workers}
        coming = self._coming(key, up)
        have = len(workers) + len(coming)
        spec = self.specs[key][1]
        room = self._room(spec)
        if have == 0 and room == 0:
            room = self._make_room(key, spec, want, workers_all)
        n = min(want, room) - have if want > 1 else 1 - have
        if have == 0:
            n = max(n, 1)
        if n > 0 and time.monotonic() < self.retry_at.get(key, 0):
            return                      # a start failed: backing off
        spreads = self.member and want > 1
        more = want - have - max(0, n) if spreads else 0
        rooms = self._members_room(spec, workers, coming) if spreads else []
        spread = sum(max(0, min(more, r)) for _, r in rooms) > 0
        tree = self._tree() if self.remote and (n > 0 or spread) else None
        for _ in range(max(0, n)):
            self._spawn(key, tree)
        for name, room in rooms:
            for _ in range(max(0, min(more, room))):
                tree = self._spawn_member(key, name, tree)
                more -= 1

    def _members_room(self, spec: dict, workers: list,
                      coming: list) -> List[Tuple[str, int]]:
        """The other members and how many more workers of spec each
        holds: its seats (its CPUs for no share), less this pool's
        workers there and coming; the roomiest first."""
        try:
            with self.api_lock:
                ms = self.api.call("GET", "/v1/cluster/members")
        except APIError:
            return []
        if self.remote:
            self._learn_peers(ms)
        share = float(spec.get("share") or 0)
        room: Dict[str, int] = {}
        if not [m for m in ms if m.get("name") == self.member and
                m.get("addr") and m.get("pin")]:
            return []       # no member can call an entry without TLS
        for m in ms:
            if m.get("name") == self.member or not m.get("addr"):
                continue
            room[m["name"]] = (int(m.get("cpus") or 0) if share <= 0 else
                               len(m.get("cards") or []) *
                               int(1 / share + 1e-9))
        for w in workers:
            if w.member in room:
                room[w.member] -= 1
        for j, _ in coming:
            name = self.cluster_jobs.get(j)
            if name in room:
                room[name] -= 1
        return sorted(room.items(), key=lambda kv: (-kv[1], kv[0]))

    def _spawn_member(self, key: str, member: str,
                      tree: Optional[str] = None) -> Optional[str]:
        """Starts a worker for key as a cluster job on member (its
        ``server``; docs/python.md, "Across a cluster"), placed and
        claimed through the leader as any job; there it calls home to
        this member's broker, relayed by its member.  It runs the worker
        from its argv, on that member's python3, in the caller's tree
        synced to the entry (its manifest's digest), which that member
        fetches from the entry, if there is one.  Returns the tree's
        digest (synced again if the entry's store had lost some of it).
        """
        opts, spec = self.specs[key]
        env = {"GMUX_TASK_POOL": key,
               "GMUX_WORKER_IDLE": str(opts.idle),
               "GMUX_WORKER_FRESH": "1" if opts.fresh else "0",
               "PATH": "/usr/local/bin:/usr/bin:/bin",
               "LANG": "C.UTF-8"}
        if "cpus" in spec:
            env["GMUX_WORKER_CPUS"] = str(spec["cpus"])
        body: Dict[str, Any] = {
            k: v for k, v in spec.items()
            if k not in ("cpus", "fresh", "card", "python")}
        body.update({"argv": [os.environ.get("GMUX_REMOTE_PYTHON",
                                             "/usr/bin/python3"),
                              "-c", _remote_boot()],
                     "env": ["%s=%s" % kv for kv in env.items()],
                     "task_worker": True, "server": member})
        if tree is not None:
            body["manifest"] = tree
            body["env"].append("GMUX_WORKER_TREE_PATH=" +
                               _tree_path(_sync_dir()))
        try:
            with self.api_lock:
                job = self.api.call("POST", "/v1/cluster/jobs", body)
        except APIError as e:
            if e.status != 412 or tree is None:
                raise
            tree = body["manifest"] = self._tree()  # its blobs went: once
            with self.api_lock:
                job = self.api.call("POST", "/v1/cluster/jobs", body)
        jid = job["id"]
        self.cluster_jobs[jid] = member
        self.spawned.setdefault(key, []).append((jid, time.monotonic()))
        log.debug("gmux: started worker %s for %s on the cluster", jid, key)
        return tree

    def _make_room(self, key: str, spec: dict, want: int,
                   workers: List[api.Worker]) -> int:
        """A pool with no worker and no room on the cards: this session's
        idle workers of its other pools go (their shares back), rather
        than the pool's calls waiting for them to idle out: as many as
        want workers of spec need (one for a call).  Returns the room
        made.  A task leased to one of them meanwhile is queued again, as
        for any worker that leaves."""
        share = float(spec.get("share") or 0)
        need = share * max(1, want)
        mine = {j: k for k, js in self.spawned.items() if k != key
                for j, _ in js}
        idle = [w for w in workers if w.state == "idle" and w.job in mine
                and w.job not in self.cluster_jobs      # not this host's
                and ("card" not in spec or w.card == spec["card"])]
        freed, gone = 0.0, set()
        for w in sorted(idle, key=lambda w: -(w.since or 0)):
            if freed + 1e-9 >= need:
                break
            try:
                with self.api_lock:
                    self.api.stop(w.job, grace=1)
            except (APIError, OSError):
                continue
            freed += w.share
            gone.add(w.job)
        for k in {mine[j] for j in gone}:
            self.spawned[k] = [(j, t) for j, t in self.spawned[k]
                               if j not in gone]
        if gone:
            log.debug("gmux: stopped idle workers %s for %s",
                      ", ".join(sorted(gone)), key)
        return int(freed / share + 1e-9) if share > 0 else 0

    def _coming(self, key: str, up: set) -> List[Tuple[str, float]]:
        """The workers started for key that have not connected yet (their
        jobs still queued or starting); the rest are forgotten."""
        now = time.monotonic()
        coming = []
        failed = None
        for j, t in self.spawned.get(key, []):
            if j in up:
                self.start_fails.pop(key, None)     # one came
                continue
            if now - t > SPAWN_GRACE:
                continue
            try:
                job = self._job(j)
            except APIError:
                continue
            if job.state in ("queued", "running"):
                coming.append((j, t))
            elif job.state == "failed" or (job.state == "exited" and
                                           job.exit_code):
                failed = job
        if failed is not None:      # those started together: one round
            self._start_failed(key, self._why_not(failed))
        self.spawned[key] = coming + [(j, t) for j, t in
                                      self.spawned.get(key, []) if j in up]
        return coming

    def _job(self, jid: str) -> api.Job:
        """A worker's job: a job of this host's, or a cluster job (its
        states as the cluster says them: queued, assigned, running)."""
        with self.api_lock:
            if jid not in self.cluster_jobs:
                return self.api.job(jid)
            doc = self.api.call("GET", "/v1/cluster/jobs/" + jid)
        if doc.get("state") in ("assigned", "claimed"):
            doc["state"] = "queued"
        return api._build(api.Job, doc)

    def _why_not(self, job: api.Job) -> str:
        """Why a worker's job ended before its worker came: the last line
        of its output (the interpreter's or the worker's own error)."""
        try:
            with failover.client_for(self.api.target) as c:  # its own
                out = b"".join(c.logs(job.id))
        except (APIError, OSError):
            out = b""
        lines = [x.strip() for x in out.decode(errors="replace").splitlines()
                 if x.strip()]
        last = lines[-1] if lines else (job.reason or "exit status %s"
                                        % job.exit_code)
        return "worker %s: %s" % (job.id, last[:400])

    def _start_failed(self, key: str, why: str) -> None:
        """The workers of key last started could not start (their jobs
        ended before they came, or were refused): the next start waits,
        doubling each time; at the START_TRIES-th round in a row, the
        daemon fails the tasks queued for key with the reason (none of
        them ran)."""
        n = self.start_fails.get(key, 0) + 1
        self.start_fails[key] = n
        self.retry_at[key] = time.monotonic() + START_BACKOFF * 2 ** (n - 1)
        log.warning("gmux: a worker could not start (%d of %d): %s", n,
                    START_TRIES, why)
        if n < START_TRIES:
            return
        self.start_fails.pop(key, None)
        msg = "no worker could start (%d tries): %s" % (n, why)
        with self.lock:
            self._send([wire.frame(wire.WITHDRAW, {"pool": key,
                                                   "error": msg})])

    def _pool_empty(self, key: str, why: Optional[str]) -> None:
        """The daemon says a pool with tasks waiting has no worker: start
        one, unless one is on its way or a failed start is backing off
        (the daemon says it again each second)."""
        if key not in self.specs or not self.ensure_lock.acquire(False):
            return
        try:
            if why == "left":
                self.spawned[key] = []      # those coming came, and went
            self._ensure(key, 1)
        except APIError as e:
            self._start_failed(key, "its job was refused: %s" % e)
        except TaskError as e:
            self._start_failed(key, str(e))
        except OSError as e:
            log.warning("gmux: cannot start a worker: %s", e)
        finally:
            self.ensure_lock.release()

    def _tree(self) -> Optional[str]:
        """The caller's directory sent to the host as ``gmux run`` sends
        it (``gmux sync``): its manifest's digest, for the workers to
        start in; None without a directory to send (GMUX_SYNC=0, or no
        gmux command here: then only the function's module goes)."""
        d = _sync_dir()
        if d is None:
            return None
        if self.sync_name is None:
            return None     # an entry no remote names: no tree there
        r = subprocess.run([_gmux_bin() or "gmux", "sync", self.sync_name,
                            d], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=600)
        if r.returncode != 0:
            lines = r.stderr.decode(errors="replace").strip().splitlines()
            raise TaskError("cannot send %s to %s: %s" % (
                d, self.sync_name, lines[-1] if lines else
                "gmux sync failed"))
        return r.stdout.decode().strip()

    def _spawn(self, key: str, tree: Optional[str] = None) -> str:
        """Starts a worker for key: a job that runs the fork-server, which
        the daemon lets reach its broker ("task_worker"); on a remote
        host, in the caller's synced tree if there is one."""
        opts, spec = self.specs[key]
        env = {"GMUX_TASK_POOL": key,
               "GMUX_WORKER_IDLE": str(opts.idle),
               "GMUX_WORKER_FRESH": "1" if opts.fresh else "0",
               "GMUX_CARD_MODELS": ",".join("%d=%s" % (c.index, c.model)
                                            for c in self.cards)}
        # cpus is the worker's to pin, not the job's to check: gpumesh's
        # cores=8 runs on a smaller host too, on all it has.
        fields = {k: v for k, v in spec.items()
                  if k not in ("cpus", "fresh")}
        if "cpus" in spec:
            env["GMUX_WORKER_CPUS"] = str(spec["cpus"])
        if self.remote:
            # Jailed there: the host's python3 (Debian's, with its
            # python3-cloudpickle; GMUX_REMOTE_PYTHON names another), the
            # worker's code in its argv, its own tree for a directory;
            # values inline only.
            argv = [os.environ.get("GMUX_REMOTE_PYTHON", "/usr/bin/python3"),
                    "-c", _remote_boot()]
            cwd = None
            if tree is not None:
                fields["manifest"] = tree
                env["GMUX_WORKER_TREE_PATH"] = _tree_path(_sync_dir())
        else:
            here = os.path.dirname(os.path.dirname(os.path.abspath(
                __file__)))
            argv = [sys.executable, "-c",
                    "import sys; sys.path.insert(0, %r); "
                    "from gmux.worker import main; main()" % here]
            cwd = self.worker_dir
            env.update({
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": os.environ.get("HOME", "/"),
                "LANG": os.environ.get("LANG", "C.UTF-8"),
                "GMUX_TASK_SPOOL": self.spool or "",
                "GMUX_WORKER_CWD": os.getcwd(),
                "GMUX_WORKER_PATH": os.pathsep.join(p for p in sys.path
                                                    if p)})
        if "python" in spec:
            argv[0] = "python3"     # the published one, in its place
        try:
            with self.api_lock:
                job = self.api.run(argv, cwd=cwd, env=env, task_worker=True,
                                   **fields)
        except APIError as e:
            if e.status != 412 or tree is None:
                raise
            fields["manifest"] = self._tree()  # its blobs went: again, once
            with self.api_lock:
                job = self.api.run(argv, cwd=cwd, env=env, task_worker=True,
                                   **fields)
        self.spawned.setdefault(key, []).append((job.id, time.monotonic()))
        log.debug("gmux: started worker %s for %s", job.id, key)
        return job.id

    def stop_workers(self, keys: Optional[Iterable[str]] = None) -> None:
        """Stops the workers this session started (of keys, or all)."""
        for key in list(keys if keys is not None else self.spawned):
            for jid, _ in self.spawned.pop(key, []):
                try:
                    with self.api_lock:
                        if jid in self.cluster_jobs:
                            self.api.call("POST", "/v1/cluster/jobs/%s/"
                                          "stop" % jid, {})
                        else:
                            self.api.stop(jid, grace=1)
                except (APIError, OSError):
                    pass

    def close(self) -> None:
        self.closed = True
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


_boot: Optional[str] = None
_SYSTEM = tuple(os.path.realpath(p) + os.sep for p in
                {sys.prefix, sys.base_prefix, sys.exec_prefix} | {
                    p for p in sys.path if "-packages" in p})


def _gmux_bin() -> Optional[str]:
    """The gmux command: GMUX_BIN, else gmux on PATH, else None."""
    return os.environ.get("GMUX_BIN") or shutil.which("gmux")


_no_sync_warned = False


def _sync_dir() -> Optional[str]:
    """The directory a remote host's workers get (the caller's), or None:
    GMUX_SYNC=0, or no gmux command to send it with (one warning)."""
    global _no_sync_warned
    if os.environ.get("GMUX_SYNC") == "0":
        return None
    if _gmux_bin() is None:
        if not _no_sync_warned:
            _no_sync_warned = True
            warnings.warn("gmux: no gmux command here (GMUX_BIN names one) "
                          "to send this directory to a remote host; its "
                          "workers get only each function's own module",
                          RuntimeWarning, stacklevel=5)
        return None
    return os.path.realpath(os.getcwd())


def _tree_path(d: Optional[str]) -> str:
    """The caller's sys.path entries inside d, relative to it ("." for d),
    for a worker in d's synced copy to put first on its own."""
    rel = []
    for p in sys.path:
        p = os.path.realpath(p or ".")
        if d is not None and (p == d or p.startswith(d + os.sep)):
            r = os.path.relpath(p, d)
            if r not in rel:
                rel.append(r)
    return os.pathsep.join(rel or ["."])


def _by_value(fn: Callable, tree: Optional[str]) -> None:
    """A remote host has the caller's directory tree (synced) and none of
    the caller's other modules: the module that defines fn, if it is
    outside tree (and not the system's or an installed package's), goes
    by value, as __main__'s functions do.  What that module imports of
    the caller's own must be there, or the call fails with
    ModuleNotFoundError."""
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    if mod is None or not getattr(mod, "__file__", None):
        return
    path = os.path.realpath(mod.__file__)
    if mod.__name__ in ("__main__", "gmux") or \
            mod.__name__.startswith("gmux.") or path.startswith(_SYSTEM):
        return
    if tree is not None and path.startswith(tree + os.sep):
        return                          # it imports from the synced tree
    import cloudpickle
    cloudpickle.register_pickle_by_value(mod)


def _remote_boot() -> str:
    """A program that runs the worker from its own source (wire.py and
    worker.py, carried in it): a remote host has no copy of this package,
    only python3 and python3-cloudpickle."""
    global _boot
    if _boot is None:
        here = os.path.dirname(os.path.abspath(__file__))
        src = {}
        for name in ("wire", "worker"):
            with open(os.path.join(here, name + ".py")) as f:
                src["gmux." + name] = f.read()
        _boot = ("import sys, types\n"
                 "src = %r\n"
                 "pkg = types.ModuleType('gmux')\n"
                 "pkg.__path__ = []\n"
                 "sys.modules['gmux'] = pkg\n"
                 "for name in ('gmux.wire', 'gmux.worker'):\n"
                 "    m = types.ModuleType(name)\n"
                 "    m.__package__ = 'gmux'\n"
                 "    sys.modules[name] = m\n"
                 "    setattr(pkg, name[5:], m)\n"
                 "    exec(compile(src[name], name, 'exec'), m.__dict__)\n"
                 "sys.modules['gmux.worker'].main()\n" % src)
    return _boot


_sessions: Dict[Optional[str], Optional[Session]] = {}
_sessions_lock = threading.Lock()


def session(target: Optional[str]) -> Optional[Session]:
    """The session for target (None: the default connection), or None
    for the local fallback (no daemon, no host, or GMUX_LOCAL=1)."""
    if os.environ.get("GMUX_LOCAL") == "1":
        _local_warning("GMUX_LOCAL=1")
        return None
    with _sessions_lock:
        if target in _sessions:
            s = _sessions[target]
            if s is None:
                _local_warning("no gmux daemon or host is reachable")
            return s
        s = _open_session(target)
        _sessions[target] = s
    if s is None:
        _local_warning("no gmux daemon or host is reachable")
    return s


def _open_session(target: Optional[str]) -> Optional[Session]:
    if target is not None:
        return Session(target)          # a named host: its errors are real
    try:
        return Session(None)
    except (NoDaemon, ConnectionError):
        pass
    from .client import remotes
    default, _ = remotes()
    if default is None:
        return None
    try:
        return Session(default)
    except (OSError, APIError):
        return None


def reset() -> None:
    """Forgets every session (tests, and after a fork)."""
    with _sessions_lock:
        for s in _sessions.values():
            if s is not None:
                s.close()
        _sessions.clear()
    global _warned
    _warned = False


# -- the decorator

def _split(item: Any) -> Tuple[tuple, dict, float]:
    """A map item as (args, kwargs, cost): a dict is keyword arguments
    (less the hints), a tuple positional ones, anything else one."""
    if isinstance(item, dict):
        kw = {k: v for k, v in item.items() if k not in HINTS}
        try:
            cost = float(item.get("cost", 0) or 0)
        except (TypeError, ValueError):
            cost = 0.0
        return (), kw, cost
    if isinstance(item, tuple):
        return item, {}, 0.0
    return (item,), {}, 0.0


class MeshFunction:
    """A function whose calls run on the pool.  Calling it returns what
    the function returned (or raises what it raised, with the remote
    traceback as ``__cause__``)."""

    def __init__(self, fn: Callable, opts: Options) -> None:
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._opts = opts

    def __repr__(self) -> str:
        return "<mesh function %s>" % getattr(self._fn, "__qualname__", "?")

    def __reduce__(self) -> Any:
        return (MeshFunction, (self._fn, self._opts))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.submit(*args, **kwargs).result()

    def local(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function here, now."""
        return self._fn(*args, **kwargs)

    def submit(self, *args: Any, **kwargs: Any) -> cf.Future:
        """Starts a call; returns its Future (``asyncio.wrap_future`` makes
        it awaitable)."""
        s = session(self._opts.target)
        if s is None:
            return _run_local(self._fn, args, kwargs)
        return s.submit(self._opts, self._fn, [(args, kwargs)])[0]

    def map(self, items: Iterable[Any],
            return_exceptions: bool = False) -> List[Any]:
        """One call per item, spread over every worker with room; results
        in input order.  A dict item is keyword arguments, a tuple
        positional ones, anything else the one argument; ``cost`` and
        ``gpu_memory_mb`` in a dict are hints, never arguments.  If any
        call raised: MapError, or with return_exceptions the exception in
        its place."""
        items = list(items)
        calls = [_split(it) for it in items]
        if not calls:
            return []
        order = sorted(range(len(calls)), key=lambda i: -calls[i][2])
        s = session(self._opts.target)
        if s is None:
            futs = {i: _run_local(self._fn, calls[i][0], calls[i][1])
                    for i in order}
        else:
            opts = self._opts
            mb = max((float(it.get("gpu_memory_mb") or 0) for it in items
                      if isinstance(it, dict)), default=0)
            if mb and opts.mem is None:
                opts = opts.replace(mem="%dM" % int(mb))
            fs = s.submit(opts, self._fn,
                          [(calls[i][0], calls[i][1]) for i in order])
            futs = dict(zip(order, fs))
        results: List[Any] = [None] * len(calls)
        errors: List[Tuple[int, BaseException]] = []
        for i in range(len(calls)):
            e = futs[i].exception()
            if e is None:
                results[i] = futs[i].result()
            elif return_exceptions:
                results[i] = e
            else:
                errors.append((i, e))
        if errors:
            raise MapError(results, errors)
        return results

    def options(self, **kw: Any) -> "MeshFunction":
        """A copy with other options (this one is unchanged)."""
        return MeshFunction(self._fn, self._opts.replace(**kw))

    def to(self, device: str) -> "MeshFunction":
        """A copy bound to a device: "cpu" (no card), "cuda" / "gpu" (a
        share of a card), "cuda:N" (card N)."""
        d = device.lower()
        if d == "cpu":
            return self.options(share=0, card=None)
        base, _, idx = d.partition(":")
        if base not in ("cuda", "gpu", "rocm", "hip", "xpu"):
            raise ValueError("device: %r is not cpu, cuda or cuda:N" % device)
        share = self._opts.share or 0.25
        if idx:
            if not idx.isdigit():
                raise ValueError("device: %r: N must be a number" % device)
            return self.options(share=share, card=int(idx))
        return self.options(share=share)


def mesh(fn: Optional[Callable] = None, **options: Any) -> Any:
    """``@mesh`` or ``@mesh(share=0.25, mem="8G", ...)`` (see Options)."""
    opts = Options().replace(**options)
    if fn is None:
        return lambda f: MeshFunction(f, opts)
    if not callable(fn):
        raise TypeError("@mesh decorates a function")
    return MeshFunction(fn, opts)
