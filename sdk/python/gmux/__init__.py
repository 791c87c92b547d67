"""gmux: Python calls on shares of GPU cards.

    import gmux

    @gmux.mesh(share=0.25, mem="8G")
    def train(lr, epochs):
        return {"lr": lr}

    train(lr=0.01, epochs=1)                 # a task on a warm worker
    train.map([{"lr": 0.01, "epochs": 1}])   # results in input order

docs/python.md is the guide; docs/api.md the contract with the daemon.
"""

from __future__ import annotations

from .api import Card, Client, Job, Usage, Worker
from .client import APIError, NoDaemon, PinError
from .executor import Executor
from .mesh import MapError, MeshFunction, Options, TaskError, TaskTimeout
from .wire import RemoteError, RemoteTraceback
from .compat import GPUMesh, accelerate, mesh

__version__ = "0.1.0"

__all__ = ["APIError", "Card", "Client", "Executor", "GPUMesh", "Job",
           "MapError", "MeshFunction", "NoDaemon", "Options", "PinError",
           "RemoteError", "RemoteTraceback", "TaskError", "TaskTimeout",
           "Usage", "Worker", "accelerate", "mesh", "load_ipython_extension"]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext gmux``: the ``%%mesh`` and ``%mesh_status`` magics."""
    from .magic import load_ipython_extension as load
    load(ipython)
