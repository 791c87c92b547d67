"""A real notebook through Debian's nbclient and ipykernel: %load_ext
gmux, %%mesh, %mesh_status."""

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

import gmux  # noqa: E402

SDK = os.path.dirname(os.path.dirname(os.path.abspath(gmux.__file__)))


def test_a_notebook_runs_mesh_cells(daemon, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", SDK)
    cells = [
        "%load_ext gmux",
        "%%mesh share=0.25\nimport os\n"
        "def where(x):\n    return x * 2, os.getpid()\n"
        "def other(y):\n    return -y",
        "v, pid = where(21)\nprint(v, pid != os.getpid(), other(3))",
        "print(where.map([1, 2, 3]))",
        "%mesh_status",
        "@mesh\ndef bare(z):\n    return z + 1\nprint(bare(1))",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {
                                         "path": str(tmp_path)}})
    client.execute()

    def out(i):
        return "".join(o.get("text", "") for o in nb.cells[i].outputs
                       if o.get("output_type") == "stream")
    assert out(2) == "42 True -3\n"
    assert out(3).startswith("[(2, ")
    assert "H100" in out(4) and "tasks=" in out(4)
    assert out(5) == "2\n"
