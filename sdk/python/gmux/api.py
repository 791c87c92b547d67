"""Typed calls over docs/api.md: jobs, cards, usage, logs."""

from __future__ import annotations

import dataclasses
import json
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union
from urllib.parse import quote, urlencode

from . import client as _client

__all__ = ["Client", "Job", "Card", "Usage", "Worker"]


def _build(cls: Any, doc: Dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    kw = {k: v for k, v in doc.items() if k in names}
    return cls(raw=doc, **kw)


@dataclass
class Job:
    """A job as GET /v1/jobs/ID describes it."""
    id: str
    state: str
    owner: str = ""
    share: float = 0.0
    mem: Optional[int] = None
    card: Optional[int] = None
    cards: List[int] = field(default_factory=list)
    cmd: List[str] = field(default_factory=list)
    cwd: Optional[str] = None
    exit_code: Optional[int] = None
    priority: int = 5
    preemptible: bool = False
    created: Optional[int] = None
    started: Optional[int] = None
    ended: Optional[int] = None
    pid: Optional[int] = None
    reason: Optional[str] = None
    confined: bool = False
    fence: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Card:
    """A card of GET /v1/cards."""
    index: int
    vendor: str
    model: str
    memory: int
    share_free: float
    mem_free: int
    uuid: str = ""
    fake: bool = False
    jobs: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Worker:
    """A warm worker of GET /v1/workers."""
    id: str
    pool: str
    state: str
    tasks: int
    score: float
    device: str
    owner: str = ""
    job: Optional[str] = None
    card: Optional[int] = None
    share: float = 0.0
    mem: Optional[int] = None
    since: Optional[int] = None
    member: Optional[str] = None
    host: Optional[str] = None      # on a cluster: whose broker's it is
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Usage:
    """The books over a window: rows by owner, job, card, vendor or day."""
    by: str
    rows: List[Dict[str, Any]]
    total: Dict[str, Any]
    since: Optional[int] = None
    until: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)




class Client(_client.Client):
    """gmux's API, typed.  ``Client()`` is the local daemon;
    ``Client("gpu1")`` a remote added with ``gmux remote add gpu1``.
    Every refusal raises :class:`gmux.APIError` with the daemon's
    message."""

    def version(self) -> Dict[str, Any]:
        return self.call("GET", "/v1/version")

    def jobs(self, all: bool = False) -> List[Job]:
        """Queued and running jobs (every job on record with all)."""
        path = "/v1/jobs" + ("?all=1" if all else "")
        return [_build(Job, j) for j in self.call("GET", path)]

    def job(self, id: str) -> Job:
        return _build(Job, self.call("GET", "/v1/jobs/" + quote(id)))

    def run(self, argv: Sequence[str], *, share: Optional[float] = None,
            mem: Union[int, str, None] = None, cwd: Optional[str] = None,
            env: Optional[Dict[str, str]] = None, **fields: Any) -> Job:
        """Starts a job (POST /v1/jobs); extra keywords are the route's
        fields (priority=, preemptible=, deny_net=, allow=, card=, ...)."""
        body: Dict[str, Any] = {"argv": list(argv)}
        if share is not None:
            body["share"] = share
        if mem is not None:
            body["mem"] = mem
        if cwd is not None:
            body["cwd"] = cwd
        if env is not None:
            body["env"] = ["%s=%s" % kv for kv in env.items()]
        body.update({k: v for k, v in fields.items() if v is not None})
        return _build(Job, self.call("POST", "/v1/jobs", body))

    def stop(self, id: str, grace: Optional[float] = None,
             wait: bool = False) -> Job:
        body: Dict[str, Any] = {"wait": wait}
        if grace is not None:
            body["grace_ms"] = int(grace * 1000)
        return _build(Job, self.call("POST", "/v1/jobs/%s/stop" % quote(id),
                                     body))

    def resize(self, id: str, share: Optional[float] = None,
               mem: Union[int, str, None] = None) -> Job:
        body: Dict[str, Any] = {}
        if share is not None:
            body["share"] = share
        if mem is not None:
            body["mem"] = mem
        return _build(Job, self.call("PATCH", "/v1/jobs/" + quote(id), body))

    def cards(self) -> List[Card]:
        return [_build(Card, c) for c in self.call("GET", "/v1/cards")]

    def workers(self, here: bool = False) -> List[Worker]:
        """The warm workers; on a cluster's member every member's (each
        with its "host"), or with here this member's broker's alone."""
        path = "/v1/workers?here=1" if here else "/v1/workers"
        return [_build(Worker, w) for w in self.call("GET", path)
                if w.get("state") != "missing"]

    def usage(self, since: Optional[str] = None, until: Optional[str] = None,
              by: str = "owner") -> Usage:
        q = {"by": by}
        if since is not None:
            q["since"] = since
        if until is not None:
            q["until"] = until
        doc = self.call("GET", "/v1/usage?" + urlencode(q))
        return _build(Usage, doc)

    def logs(self, id: str, follow: bool = False,
             start: int = 0) -> Iterator[bytes]:
        """The job's output (stdout and stderr as written), from output
        byte ``start``; with follow, until the job ends."""
        q = {"from": str(start)}
        if follow:
            q["follow"] = "1"
        status, _, chunks = self.raw(
            "GET", "/v1/jobs/%s/log?%s" % (quote(id), urlencode(q)),
            stream=True)
        if status >= 400:
            body = b"".join(chunks)
            try:
                msg = json.loads(body).get("error")
            except ValueError:
                msg = None
            raise _client.APIError(status, msg or "HTTP %d" % status)
        return _frames(chunks)


def _frames(chunks: Iterator[bytes]) -> Iterator[bytes]:
    buf = b""
    for c in chunks:
        buf += c
        while len(buf) >= 5:
            n = struct.unpack(">I", buf[1:5])[0]
            if len(buf) < 5 + n:
                break
            kind, data, buf = buf[0], buf[5:5 + n], buf[5 + n:]
            if kind in (1, 2):
                yield data
            elif kind == 3:
                return
