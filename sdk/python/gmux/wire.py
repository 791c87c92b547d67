"""Framing and serialisation: the one place that knows the bytes.

A task frame (docs/tasks.md) is one type byte, a 4-byte big-endian
length, then a 4-byte big-endian header length, a JSON header and opaque
bytes.  A call's bytes are the pickled function (kept once per function,
so a worker unpickles it once) and the pickled arguments; an outcome's
are the pickled value or the exception with its traceback's text.
"""

from __future__ import annotations

import json
import pickle
import struct
import traceback
from typing import Any, Callable, Optional, Tuple

import cloudpickle

FRAME_MAX = 1024 * 1024          # the daemon's limit on one frame
INLINE_MAX = FRAME_MAX - 64 * 1024   # a value past this goes by file

SUBMIT, ACK, RESULT, POOL = b"T", b"K", b"R", b"P"
WITHDRAW = b"X"
HELLO, LEASE, DONE, CANCEL = b"H", b"L", b"D", b"C"
VALUE, UPLOAD = b"V", b"U"       # a streamed call's part, a result's
CHUNK = 960 * 1024               # one streamed part (docs/tasks.md)

_LEN = struct.Struct(">I")
_HEAD = struct.Struct(">BII")


def frame(kind: bytes, header: dict, data: bytes = b"") -> bytes:
    """One task frame."""
    h = json.dumps(header, separators=(",", ":")).encode()
    return _HEAD.pack(kind[0], 4 + len(h) + len(data), len(h)) + h + data


class FrameError(Exception):
    """The peer broke the framing."""


class Reader:
    """Cuts frames out of the bytes a stream delivers."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list:
        """Adds bytes; returns the whole frames now in the buffer, each
        (kind, header, data)."""
        self._buf += data
        out = []
        buf = self._buf
        pos = 0
        while len(buf) - pos >= 5:
            n = _LEN.unpack_from(buf, pos + 1)[0]
            if n > FRAME_MAX or n < 4:
                raise FrameError("frame of %d bytes" % n)
            if len(buf) - pos < 5 + n:
                break
            kind = bytes(buf[pos:pos + 1])
            hl = _LEN.unpack_from(buf, pos + 5)[0]
            if hl > n - 4:
                raise FrameError("header of %d bytes" % hl)
            start = pos + 9
            header = json.loads(bytes(buf[start:start + hl]))
            data = bytes(buf[start + hl:pos + 5 + n])
            out.append((kind, header, data))
            pos += 5 + n
        if pos:
            del buf[:pos]
        return out


_fn_cache: "dict[int, Tuple[Any, bytes]]" = {}


def dump_function(fn: Callable) -> bytes:
    """The function pickled by value where it must be (cloudpickle),
    kept for the function's life so a map pickles it once."""
    hit = _fn_cache.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    data = cloudpickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
    if len(_fn_cache) > 256:
        _fn_cache.clear()
    _fn_cache[id(fn)] = (fn, data)
    return data


def dump_call(fn_bytes: bytes, args: tuple, kwargs: dict) -> bytes:
    """A call: the function's bytes, then the arguments."""
    rest = cloudpickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(fn_bytes)) + fn_bytes + rest


def split_call(data: bytes) -> Tuple[bytes, bytes]:
    """(function bytes, argument bytes) of a call."""
    n = _LEN.unpack_from(data, 0)[0]
    return data[4:4 + n], data[4 + n:]


def dump_outcome(ok: bool, value: Any) -> bytes:
    """A value, or an exception with the text of its traceback."""
    if ok:
        return b"v" + cloudpickle.dumps(value,
                                        protocol=pickle.HIGHEST_PROTOCOL)
    tb = "".join(traceback.format_exception(type(value), value,
                                            value.__traceback__))
    try:
        exc = cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(exc)
    except Exception:
        exc = b""
    return b"e" + _LEN.pack(len(tb.encode())) + tb.encode() + exc


class RemoteTraceback(Exception):
    """The traceback of an exception raised on a worker (as the
    ``__cause__`` of the re-raised exception, as concurrent.futures'
    process pool does)."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return '\n"""\n%s"""' % self.tb


class RemoteError(Exception):
    """An exception from a worker that could not be carried back."""


def load_outcome(data: bytes) -> Tuple[bool, Any]:
    """(True, value) or (False, exception with the remote traceback as
    its cause and in its notes)."""
    if data[:1] == b"v":
        return True, pickle.loads(data[1:])
    n = _LEN.unpack_from(data, 1)[0]
    tb = data[5:5 + n].decode(errors="replace")
    rest = data[5 + n:]
    exc: Optional[BaseException] = None
    if rest:
        try:
            exc = pickle.loads(rest)
        except Exception:
            exc = None
    if not isinstance(exc, BaseException):
        last = tb.strip().splitlines()[-1] if tb.strip() else "error"
        exc = RemoteError(last)
    exc.__cause__ = RemoteTraceback(tb)
    if hasattr(exc, "add_note"):
        exc.add_note("remote traceback:\n" + tb.rstrip())
    return False, exc
