"""Big values to and from a remote host's spool (docs/tasks.md, "Big
values over TCP"): a call's bytes go up in parts, each after the last
one's answer; a result comes down as one chunked reply.  Each transfer
has a connection of its own, so the task stream is never held up."""

from __future__ import annotations

import json
from typing import Optional
from urllib.parse import quote

from . import client as _client

PART = 8 * 1024 * 1024          # one PUT's body: the daemon's limit


def _head(target: Optional[_client.Target], method: str, path: str,
          length: Optional[int] = None) -> bytes:
    h = "%s %s HTTP/1.1\r\nHost: gmux\r\n" % (method, path)
    if target is not None:
        h += "Authorization: Bearer %s\r\n" % target.token
    if length is not None:
        h += ("Content-Type: application/octet-stream\r\n"
              "Content-Length: %d\r\n" % length)
    return (h + "\r\n").encode()


def _error(conn: "_client._Conn", status: int, hdrs: dict) -> Exception:
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        payload = b"".join(conn.chunks())
    else:
        payload = conn.read_exact(int(hdrs.get("content-length", "0")))
    try:
        msg = json.loads(payload).get("error")
    except (ValueError, AttributeError):
        msg = None
    return _client.APIError(status, msg or "HTTP %d" % status)


def upload(target: Optional[_client.Target], name: str, data: bytes,
           timeout: Optional[float] = 600.0) -> None:
    """Puts data as the value name of the token's owner, PART at a
    time; APIError with the daemon's one line if it is refused."""
    conn = _client._Conn(target, timeout)
    view = memoryview(data)
    try:
        off = 0
        while True:
            part = view[off:off + PART]
            conn.sock.sendall(_head(
                target, "PUT", "/v1/tasks/values/%s?size=%d&offset=%d"
                % (quote(name), len(data), off), len(part)))
            conn.sock.sendall(part)
            status, hdrs = conn.read_head()
            if status != 200:
                raise _error(conn, status, hdrs)
            conn.read_exact(int(hdrs.get("content-length", "0")))
            off += len(part)
            if off >= len(data):
                return
    finally:
        conn.close()


def download(target: Optional[_client.Target], name: str,
             size: int = -1,
             timeout: Optional[float] = 600.0) -> bytearray:
    """The owner's value name, read as it streams."""
    conn = _client._Conn(target, timeout)
    try:
        conn.sock.sendall(_head(target, "GET",
                                "/v1/tasks/values/" + quote(name)))
        status, hdrs = conn.read_head()
        if status != 200:
            raise _error(conn, status, hdrs)
        out = _chunked(conn, size)
        if size >= 0 and len(out) != size:
            raise ConnectionError("value %s: %d of its %d bytes came"
                                  % (name, len(out), size))
        return out
    finally:
        conn.close()


def _chunked(conn: "_client._Conn", size: int) -> bytearray:
    """A chunked body, whole: one growing buffer (the connection's own
    reader copies its buffer at each read)."""
    buf = bytearray(conn.buf)
    conn.buf = b""
    out = bytearray()
    pos = 0

    def fill() -> None:
        nonlocal buf, pos
        if pos:
            del buf[:pos]
            pos = 0
        more = conn.sock.recv(1 << 20)
        if not more:
            raise ConnectionError("the daemon closed the connection")
        buf += more

    while True:
        while b"\r\n" not in buf[pos:pos + 32]:
            fill()
        eol = buf.index(b"\r\n", pos)
        n = int(bytes(buf[pos:eol]).split(b";")[0], 16)
        pos = eol + 2
        while len(buf) - pos < n + 2:
            fill()
        out += memoryview(buf)[pos:pos + n]
        pos += n + 2
        if n == 0:
            return out
