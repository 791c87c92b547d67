"""gpumesh's names, so its users switch by changing an import.

``mesh`` (the default connection: a decorator that also has GPUMesh's
methods), ``accelerate``, ``GPUMesh``.  Where gpumesh is unsafe, this
differs, and docs/python.md lists each difference; the first is that
there is no plain-HTTP coordinator: ``GPUMesh("http://...")`` is refused
with the ``gmux remote add`` line to use instead.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import api
from .mesh import mesh as _decorate
from .worker import NOMINAL

__all__ = ["GPUMesh", "accelerate", "mesh"]


def _memory(v: Any) -> Any:
    """gpumesh's "16GB" as gmux's "16G"."""
    if isinstance(v, str) and v.upper().endswith("B") and len(v) > 1 and \
            v[-2].isalpha():
        return v[:-1]
    return v


class GPUMesh:
    """A connection to the pool: ``GPUMesh()`` the default (the local
    daemon, else the configured hosts), ``GPUMesh("gpu1")`` a remote the
    CLI knows.  Call it as a decorator (``@mesh``, ``@mesh(share=...)``)."""

    def __init__(self, target: Optional[str] = None,
                 token: Optional[str] = None) -> None:
        if isinstance(target, str) and "://" in target:
            raise ValueError(
                "gmux serves TLS with a pinned key only, not %s: on the "
                "host run `gmux serve --addr HOST:PORT`, then here `gmux "
                "remote add NAME TOKEN@HOST:PORT#PIN` (the line serve "
                "prints) and use GPUMesh(\"NAME\")" % target.split("://")[0])
        if token is not None:
            raise ValueError("token=: gmux reads a host's token from the "
                             "remotes file (`gmux remote add`), never "
                             "from code")
        self.target = target
        self._api: Optional[api.Client] = None

    def __repr__(self) -> str:
        return "GPUMesh(%r)" % (self.target,)

    def __call__(self, fn: Optional[Callable] = None, **options: Any) -> Any:
        options.setdefault("target", self.target)
        return _decorate(fn, **options)

    @property
    def client(self) -> api.Client:
        if self._api is None:
            self._api = api.Client(self.target)
        return self._api

    def distribute(self, function: Callable, params: Sequence[Any],
                   timeout: Optional[float] = None) -> List[Any]:
        """One call per params item, results in order (``.map``)."""
        return self(function, timeout=timeout).map(list(params))

    def workers(self) -> List[Dict[str, Any]]:
        """The warm workers: id, device, device_name, hostname (on a
        cluster, the member each runs on), score, alive (and gmux's job,
        pool, state, tasks, member)."""
        host = self.target or socket.gethostname()
        return [{"id": w.id, "device": "cpu" if w.device == "cpu" else "gpu",
                 "device_name": w.device, "hostname": w.member or host,
                 "score": w.score, "alive": True, "job": w.job,
                 "pool": w.pool, "state": w.state, "tasks": w.tasks,
                 "member": w.member}
                for w in self.client.workers()]

    def devices(self) -> List[Dict[str, Any]]:
        """The pool's devices: each card (score: its model's nominal
        figure, fake cards included), or the CPU of a host without."""
        host = self.target or socket.gethostname()
        out = []
        for c in self.client.cards():
            score = next((v for k, v in NOMINAL.items() if k in c.model),
                         100.0)
            out.append({"id": "%s:%d" % (host, c.index), "device": "gpu",
                        "device_name": c.model, "hostname": host,
                        "score": score, "memory": c.memory,
                        "mem_free": c.mem_free, "share_free": c.share_free,
                        "alive": True})
        if not out:
            out.append({"id": host + ":cpu", "device": "cpu",
                        "device_name": "cpu", "hostname": host,
                        "score": float(os.cpu_count() or 1),
                        "alive": True})
        return out

    def device_count(self) -> int:
        return len(self.devices())

    def gpu_count(self) -> int:
        return sum(1 for d in self.devices() if d["device"] == "gpu")

    def total_score(self) -> float:
        return float(sum(d["score"] for d in self.devices()))

    def auto_device(self) -> Dict[str, Any]:
        """The strongest device (then the one with most room)."""
        return max(self.devices(),
                   key=lambda d: (d["score"], d.get("share_free", 0)))

    def submit(self, name: str, script: str,
               payloads: Sequence[Dict[str, Any]]) -> str:
        """One job per payload, running ``python3 SCRIPT`` with the
        payload's JSON on its stdin (a thin wrapper over the jobs API; the
        CLI's ``gmux submit`` is the full version).  Returns an id for
        status()."""
        path = os.path.abspath(script)
        ids = []
        for p in payloads:
            cmd = "printf '%%s' \"$GMUX_PAYLOAD\" | exec %s %s" % (
                shlex.quote(sys.executable), shlex.quote(path))
            job = self.client.run(
                ["sh", "-c", cmd], share=0, cwd=os.getcwd(),
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                     "HOME": os.environ.get("HOME", "/"),
                     "GMUX_PAYLOAD": json.dumps(p)})
            ids.append(job.id)
        return "%s:%s" % (name, ",".join(ids))

    def status(self, job_id: str) -> Dict[str, Any]:
        """Each payload's job: state, exit code, and its result (the last
        line of its output, parsed as JSON where it is)."""
        name, _, ids = job_id.rpartition(":")
        tasks = []
        for jid in ids.split(","):
            j = self.client.job(jid)
            result: Any = None
            if j.state in ("exited", "failed", "stopped"):
                out = b"".join(self.client.logs(jid)).decode(
                    errors="replace").strip().splitlines()
                if out:
                    try:
                        result = json.loads(out[-1])
                    except ValueError:
                        result = out[-1]
            tasks.append({"job": jid, "state": j.state,
                          "exit_code": j.exit_code, "result": result})
        done = all(t["state"] not in ("queued", "running") for t in tasks)
        return {"id": job_id, "name": name, "done": done, "tasks": tasks}

    @staticmethod
    def results_to_dataframe(results: Sequence[Any]) -> Any:
        """The results as a pandas DataFrame (pandas must be installed)."""
        import pandas as pd  # optional, as in gpumesh
        return pd.DataFrame(list(results))


class _Accelerate:
    """``@accelerate``, ``@accelerate(mesh, gpu=, cores=, memory=,
    timeout=)``, ``accelerate.install(mesh)``."""

    def __init__(self) -> None:
        self._mesh: Optional[GPUMesh] = None

    def install(self, mesh: GPUMesh) -> None:
        """Makes a bare ``@accelerate`` use mesh."""
        self._mesh = mesh

    def __call__(self, mesh: Any = None, *, gpu: Optional[str] = None,
                 cores: Optional[int] = None, memory: Any = None,
                 timeout: Optional[float] = None, **options: Any) -> Any:
        if callable(mesh) and not isinstance(mesh, GPUMesh):
            return self()(mesh)        # bare @accelerate
        m = mesh if mesh is not None else (self._mesh or GPUMesh())
        opts: Dict[str, Any] = dict(options)
        if gpu is not None:
            opts["gpu"] = gpu
        if cores is not None:
            opts["cpus"] = cores
        if memory is not None:
            opts["mem"] = _memory(memory)
        if timeout is not None:
            opts["timeout"] = timeout
        return lambda fn: m(fn, **opts)


accelerate = _Accelerate()

#: the default connection, as ``from gpumesh import mesh``
mesh = GPUMesh()
