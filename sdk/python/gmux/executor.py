"""``gmux.Executor``: the pool as a ``concurrent.futures.Executor``."""

from __future__ import annotations

import concurrent.futures as cf
import threading
from typing import Any, Callable, Set

from .mesh import Options, _run_local, _sessions, session

__all__ = ["Executor"]


class Executor(cf.Executor):
    """Runs calls on gmux workers with the given options (those of
    ``@mesh``).  ``submit`` returns a Future, ``map`` behaves as
    ``Executor.map`` (results in order, an exception raised where its
    result is reached), ``shutdown`` stops the workers it started."""

    def __init__(self, **options: Any) -> None:
        self._opts = Options().replace(**options)
        self._lock = threading.Lock()
        self._shutdown = False
        self._futures: Set[cf.Future] = set()
        self._pools: Set[str] = set()

    def submit(self, fn: Callable, /, *args: Any,  # type: ignore[override]
               **kwargs: Any) -> cf.Future:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
        s = session(self._opts.target)
        if s is None:
            return _run_local(fn, args, kwargs)
        f = s.submit(self._opts, fn, [(args, kwargs)])[0]
        with self._lock:
            self._pools.add(s.key(self._opts))
            self._futures.add(f)
        f.add_done_callback(self._forget)
        return f

    def _forget(self, f: cf.Future) -> None:
        with self._lock:
            self._futures.discard(f)

    def shutdown(self, wait: bool = True, *,
                 cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            futs = list(self._futures)
        if wait and not cancel_futures:
            cf.wait(futs)
        s = _sessions.get(self._opts.target)
        if s is not None:
            s.stop_workers(self._pools)
