"""A caller's move to another member when its entry member is lost.

docs/python.md, "Across a cluster": a caller that reached a cluster over
TCP keeps the other members as its entry said them (name, address,
pin); when its stream to the entry closes, or TCP's keepalive gets no
answer, it tries the entry once more and then each other member in
turn.  The first to take the stream is the new entry; the session (in
``mesh.py``) sends it again every task without a result.  Nothing here
holds tasks: this module only finds and opens members.
"""

from __future__ import annotations

import socket
from typing import Any, Dict, List, Optional

from . import api
from .client import Target, remotes

#: TCP keepalive on a task stream: probes after 2 s idle, each second,
#: 3 unanswered ones and the entry is gone (5 s)
KEEPIDLE, KEEPINTVL, KEEPCNT = 2, 1, 3


def keepalive(sock: socket.socket) -> None:
    """Makes a silent peer (its host gone, or cut off) a closed stream
    within KEEPIDLE + KEEPINTVL * KEEPCNT seconds."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for opt, v in (("TCP_KEEPIDLE", KEEPIDLE), ("TCP_KEEPINTVL", KEEPINTVL),
                   ("TCP_KEEPCNT", KEEPCNT)):
        if hasattr(socket, opt):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), v)


def _addr(s: str) -> Optional[tuple]:
    """HOST:PORT or [HOST]:PORT as (host, port); None if it is neither."""
    if s.startswith("["):
        host, _, port = s[1:].partition("]:")
    else:
        host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host, int(port)


def peers(members: List[Dict[str, Any]], entry: str,
          via: Target) -> List[Target]:
    """The members other than entry that serve TLS, by name, each as a
    Target: the remote whose pin it has (its own name and token), else
    the member's address and pin with via's token."""
    _, known = remotes()
    by_pin = {t.pin: t for t in known.values()}
    out = []
    for m in sorted(members, key=lambda m: str(m.get("name"))):
        name, pin = m.get("name"), str(m.get("pin") or "").lower()
        hp = _addr(str(m.get("addr") or ""))
        if name == entry or hp is None or len(pin) != 64:
            continue
        t = by_pin.get(pin)
        out.append(t if t is not None else
                   Target(str(name), hp[0], hp[1], pin, via.token))
    return out


def client_for(target: Optional[Target],
               timeout: Optional[float] = 60.0) -> api.Client:
    """A client of target (None: the local daemon), named or not."""
    c = api.Client(None, timeout=timeout)
    c.target = target
    c.name = target.name if target is not None else None
    return c


def remote_name(target: Target) -> Optional[str]:
    """The remotes file's name for target (the same pin), for ``gmux
    sync``; None when no remote is that member."""
    _, known = remotes()
    for name, t in known.items():
        if t.pin == target.pin:
            return name
    return None
