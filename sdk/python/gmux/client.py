"""The transport: HTTP/1.1 to the local daemon's Unix socket, or to a
remote host over TLS pinned to its key.

A remote is named as the CLI names it (``gmux remote add NAME``, kept in
``remotes.json`` beside the CLI's config).  The pin (the SHA-256 of the
host key's SubjectPublicKeyInfo) is checked as soon as the handshake
ends, before a byte of the request (and so the token) is written.  The
token never appears in a URL, a log line or an exception.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple

log = logging.getLogger("gmux")

__all__ = ["Client", "APIError", "PinError", "Target", "NoDaemon"]


class APIError(Exception):
    """The daemon refused a request: ``.status`` and its message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class NoDaemon(ConnectionError):
    """No daemon answers where the client looked."""


class PinError(ConnectionError):
    """The host's key is not the one pinned for it: nothing was sent."""


def _dirs() -> Tuple[str, str, str]:
    """(state home, config dir, socket dir) as src/paths.c finds them."""
    g = os.environ.get("GMUX_HOME")
    if g:
        return g, g, g
    h = os.environ.get("HOME") or "/tmp"

    def xdg(var: str, fallback: Optional[str]) -> Optional[str]:
        v = os.environ.get(var)
        if v and v.startswith("/"):
            return os.path.join(v, "gmux")
        return os.path.join(h, fallback, "gmux") if fallback else None
    state = xdg("XDG_STATE_HOME", ".local/state") or ""
    conf = xdg("XDG_CONFIG_HOME", ".config") or ""
    run = xdg("XDG_RUNTIME_DIR", None) or state
    return state, conf, run


def socket_path() -> str:
    """The local daemon's socket."""
    return os.path.join(_dirs()[2], "gmux.sock")


def remotes_path() -> str:
    return os.path.join(_dirs()[1], "remotes.json")


@dataclass(frozen=True)
class Target:
    """A remote host: where, and the pin of its key.  The token is kept
    out of repr()."""
    name: str
    host: str
    port: int
    pin: str
    token: str = ""

    def __repr__(self) -> str:
        return "Target(%r, %s:%d)" % (self.name, self.host, self.port)

    @classmethod
    def parse(cls, name: str, s: str) -> "Target":
        """TOKEN@HOST:PORT#PIN."""
        at, hash_ = s.find("@"), s.rfind("#")
        if at < 0 or hash_ < at:
            raise ValueError("a remote is written TOKEN@HOST:PORT#PIN")
        pin = s[hash_ + 1:].lower()
        if len(pin) != 64 or any(c not in "0123456789abcdef" for c in pin):
            raise ValueError("the pin is not 64 hex digits (a SHA-256)")
        hp = s[at + 1:hash_]
        if hp.startswith("["):
            host, _, port = hp[1:].partition("]:")
        else:
            host, _, port = hp.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError("a remote is written TOKEN@HOST:PORT#PIN")
        return cls(name, host, int(port), pin, s[:at])


def remotes() -> Tuple[Optional[str], Dict[str, Target]]:
    """The CLI's remotes: (the default's name, {name: Target})."""
    try:
        with open(remotes_path()) as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None, {}
    out = {}
    for r in doc.get("remotes", []):
        try:
            out[r["name"]] = Target.parse(r["name"], r["target"])
        except (KeyError, ValueError) as e:
            log.warning("remotes.json: %s: %s", r.get("name"), e)
    return doc.get("default"), out


def _der(buf: bytes, pos: int) -> Tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at pos."""
    tag, n = buf[pos], buf[pos + 1]
    pos += 2
    if n & 0x80:
        k = n & 0x7F
        n = int.from_bytes(buf[pos:pos + k], "big")
        pos += k
    return tag, pos, pos + n


def spki_pin(cert_der: bytes) -> str:
    """The hex SHA-256 of a certificate's SubjectPublicKeyInfo."""
    _, c, _ = _der(cert_der, 0)            # Certificate
    _, pos, _ = _der(cert_der, c)          # tbsCertificate
    if cert_der[pos] == 0xA0:              # [0] version
        pos = _der(cert_der, pos)[2]
    for _ in range(5):                     # serial, sig, issuer, validity,
        pos = _der(cert_der, pos)[2]       # subject
    _, _, end = _der(cert_der, pos)
    return hashlib.sha256(cert_der[pos:end]).hexdigest()


def _tls_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE        # the pin is the whole check
    return ctx


def connect(target: Optional[Target],
            timeout: Optional[float]) -> socket.socket:
    """A connected socket: the local daemon's, or a remote's over TLS
    whose key was checked against the pin."""
    if target is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(socket_path())
        except (FileNotFoundError, ConnectionRefusedError) as e:
            s.close()
            raise NoDaemon("no gmux daemon serves %s" % socket_path()) from e
        return s
    raw = socket.create_connection((target.host, target.port), timeout)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s = _tls_context().wrap_socket(raw)
    der = s.getpeercert(binary_form=True) or b""
    if not hmac.compare_digest(spki_pin(der), target.pin):
        s.close()
        raise PinError("%s (%s:%d) does not have the pinned key" %
                       (target.name, target.host, target.port))
    return s


class _Conn:
    """One kept HTTP/1.1 connection."""

    def __init__(self, target: Optional[Target], timeout: Optional[float]):
        self.sock = connect(target, timeout)
        self.buf = b""

    def _until(self, sep: bytes) -> bytes:
        """The bytes up to sep (which is dropped)."""
        while sep not in self.buf:
            more = self.sock.recv(65536)
            if not more:
                raise ConnectionError("the daemon closed the connection")
            self.buf += more
        out, _, self.buf = self.buf.partition(sep)
        return out

    def read_head(self) -> Tuple[int, Dict[str, str]]:
        head = self._until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        return status, hdrs

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            more = self.sock.recv(max(65536, n - len(self.buf)))
            if not more:
                raise ConnectionError("the daemon closed the connection")
            self.buf += more
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_line(self) -> bytes:
        return self._until(b"\r\n")

    def chunks(self) -> Iterator[bytes]:
        while True:
            n = int(self.read_line().split(b";")[0], 16)
            if n == 0:
                self.read_line()
                return
            yield self.read_exact(n)
            self.read_line()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Client:
    """The daemon's API: the local one (``target=None``) or a remote by
    the name ``gmux remote add`` gave it.  Owns one kept connection;
    ``timeout`` (seconds) bounds each request's wait for a byte."""

    def __init__(self, target: Optional[str] = None,
                 timeout: Optional[float] = 60.0) -> None:
        self.name = target
        self.timeout = timeout
        self.target: Optional[Target] = None
        if target is not None:
            default, known = remotes()
            if target not in known:
                raise ValueError("no remote named %r (gmux remote add %s "
                                 "TOKEN@HOST:PORT#PIN adds it)"
                                 % (target, target))
            self.target = known[target]
        self._conn: Optional[_Conn] = None

    def __repr__(self) -> str:
        return "Client(%r)" % (self.name,)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _head(self, method: str, path: str, body: Optional[bytes],
              extra: str = "") -> bytes:
        h = "%s %s HTTP/1.1\r\nHost: gmux\r\n" % (method, path)
        if self.target is not None:
            h += "Authorization: Bearer %s\r\n" % self.target.token
        if body is not None:
            h += ("Content-Type: application/json\r\n"
                  "Content-Length: %d\r\n" % len(body))
        return (h + extra + "\r\n").encode() + (body or b"")

    def raw(self, method: str, path: str, body: Any = None,
            stream: bool = False) -> Tuple[int, Dict[str, str], Any]:
        """One request: (status, headers, body bytes or, with stream,
        an iterator of chunks)."""
        data = None if body is None else json.dumps(body).encode()
        req = self._head(method, path, data)
        for attempt in (0, 1):
            fresh = self._conn is None
            if fresh:
                self._conn = _Conn(self.target, self.timeout)
            conn = self._conn
            try:
                conn.sock.sendall(req)
                status, hdrs = conn.read_head()
                break
            except (ConnectionError, BrokenPipeError) as e:
                self.close()
                # a kept connection the daemon had closed: once more,
                # except a POST (it may have been done)
                if fresh or attempt or method == "POST":
                    raise ConnectionError(str(e)) from None
        if stream:
            self._conn = None      # the stream owns it now
            return status, hdrs, _stream(conn, hdrs)
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            payload = b"".join(conn.chunks())
        else:
            payload = conn.read_exact(int(hdrs.get("content-length", "0")))
        if hdrs.get("connection", "").lower() == "close":
            self.close()
        return status, hdrs, payload

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON of a request's reply; APIError for a 4xx or 5xx."""
        status, _, payload = self.raw(method, path, body)
        doc = json.loads(payload) if payload.strip() else None
        if status >= 400:
            msg = doc.get("error") if isinstance(doc, dict) else None
            raise APIError(status, msg or "HTTP %d" % status)
        return doc

    def upgrade(self, path: str) -> Tuple[socket.socket, Dict[str, str],
                                          bytes]:
        """A new connection switched to the task stream: (socket, the
        101's headers, bytes already read past them)."""
        conn = _Conn(self.target, self.timeout)
        conn.sock.sendall(self._head(
            "GET", path, None,
            "Connection: Upgrade\r\nUpgrade: gmux-tasks/1\r\n"))
        status, hdrs = conn.read_head()
        if status != 101:
            payload = conn.read_exact(int(hdrs.get("content-length", "0")))
            conn.close()
            try:
                msg = json.loads(payload).get("error")
            except ValueError:
                msg = None
            raise APIError(status, msg or "HTTP %d" % status)
        conn.sock.settimeout(None)
        return conn.sock, hdrs, conn.buf


def _stream(conn: _Conn, hdrs: Dict[str, str]) -> Iterator[bytes]:
    try:
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            yield from conn.chunks()
        else:
            yield conn.read_exact(int(hdrs.get("content-length", "0")))
    finally:
        conn.close()
