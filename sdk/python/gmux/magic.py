"""Jupyter: ``%load_ext gmux``, then ``%%mesh`` wraps every top-level
def of a cell as ``@mesh`` (options as on the magic line: ``%%mesh
share=0.5 mem=8G``) and ``%mesh_status`` shows the workers."""

from __future__ import annotations

import ast
from typing import Any, Dict

from .compat import mesh as default_mesh


def _options(line: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for word in line.split():
        k, eq, v = word.partition("=")
        if not eq:
            raise ValueError("%%%%mesh: %r is not NAME=VALUE" % word)
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def load_ipython_extension(ipython: Any) -> None:
    from IPython.core.magic import register_cell_magic, register_line_magic

    ipython.user_ns.setdefault("mesh", default_mesh)

    @register_cell_magic("mesh")
    def mesh_cell(line: str, cell: str) -> None:
        opts = _options(line)
        tree = ast.parse(cell)
        names = [n.name for n in tree.body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        ipython.run_cell(cell)
        for name in names:
            fn = ipython.user_ns.get(name)
            if callable(fn):
                ipython.user_ns[name] = default_mesh(fn, **opts)

    @register_line_magic("mesh_status")
    def mesh_status(line: str) -> None:
        ws = default_mesh.workers()
        if not ws:
            print("no workers")
        for w in ws:
            print("%-5s %-5s %-6s %-4s tasks=%d score=%s" % (
                w["id"], w["job"], w["device_name"], w["state"], w["tasks"],
                w["score"]))
