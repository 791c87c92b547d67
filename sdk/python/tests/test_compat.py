"""gpumesh's snippets (../shared/seeds/003_...txt), each with its import
changed from gpumesh to gmux and nothing else, except where gmux differs
on purpose (docs/python.md): a plain-HTTP coordinator URL is refused."""

import os
import subprocess
import sys
import textwrap

import pytest

import gmux

SDK = os.path.dirname(os.path.dirname(os.path.abspath(gmux.__file__)))


def run_script(tmp_path, source, env=None):
    path = tmp_path / "demo.py"
    path.write_text(textwrap.dedent(source))
    e = dict(os.environ, PYTHONPATH=SDK, **(env or {}))
    return subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=e,
                          capture_output=True, text=True, timeout=120)


def test_quickstart_demo_py(daemon, tmp_path):
    # The seed's demo.py verbatim but for its import line.
    r = run_script(tmp_path, """\
        from gmux import mesh          # auto-connects using the saved config

        @mesh
        def train(lr, epochs):
            return {"lr": lr, "accuracy": round(0.90 + lr, 3)}

        print(train(lr=0.01, epochs=100))                              # one worker
        print(train.map([{"lr": 0.01, "epochs": 100},                  # every worker
                         {"lr": 0.05, "epochs": 200}]))
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "{'lr': 0.01, 'accuracy': 0.91}",
        "[{'lr': 0.01, 'accuracy': 0.91}, {'lr': 0.05, 'accuracy': 0.95}]"]
    # "Kill the coordinator and run it again - you get the identical
    # output, computed locally."
    daemon.stop()
    r2 = run_script(tmp_path, (tmp_path / "demo.py").read_text())
    assert r2.returncode == 0 and r2.stdout == r.stdout
    assert "running calls in this process" in r2.stderr
    daemon.start()


def test_a_plain_http_coordinator_is_refused_with_the_line_to_use(daemon):
    with pytest.raises(ValueError, match="gmux remote add NAME "
                       "TOKEN@HOST:PORT#PIN"):
        gmux.GPUMesh("http://coordinator:8000", token="x")


def test_quick_demo_with_the_default_connection(daemon):
    from gmux import GPUMesh, accelerate

    mesh = GPUMesh()                   # for GPUMesh("http://...", token=)

    @accelerate(mesh)
    def train(lr, epochs):
        return {"accuracy": 0.95}

    result = train(lr=0.01, epochs=100)         # one mesh worker (or local if none)

    results = train.map([                        # spread across all mesh devices
        {"lr": 0.01, "epochs": 100},
        {"lr": 0.05, "epochs": 200},
    ])
    assert result == {"accuracy": 0.95}
    assert results == [{"accuracy": 0.95}] * 2


def train_model(lr, epochs):
    return {"lr": lr, "epochs": epochs}


def test_python_api(make_daemon, tmp_path):
    make_daemon(fake="1xH100:80G,1xA100:40G")
    from gmux import GPUMesh

    mesh = GPUMesh()
    results = mesh.distribute(
        function=train_model,
        params=[{"lr": 0.01, "epochs": 100}, {"lr": 0.05, "epochs": 200}],
        timeout=600,
    )
    assert results == [{"lr": 0.01, "epochs": 100},
                       {"lr": 0.05, "epochs": 200}]
    workers = mesh.workers()        # [{'id', 'device', 'device_name', 'hostname', 'score', 'alive'}]
    devices = mesh.devices()        # unified pool view
    count   = mesh.device_count()   # alive machines contributing compute (GPU or CPU)
    gpus    = mesh.gpu_count()      # alive GPUs only
    total   = mesh.total_score()    # combined compute score
    best    = mesh.auto_device()    # most powerful alive device
    assert workers and {"id", "device", "device_name", "hostname", "score",
                        "alive"} <= set(workers[0])
    assert count == 2 and gpus == 2 and len(devices) == 2
    assert total == 989.0 + 312.0
    assert best["device_name"] == "H100"

    (tmp_path / "process.py").write_text(
        "import json, sys\np = json.load(sys.stdin)\n"
        "print(json.dumps({'file': p['file'], 'ok': True}))\n")
    os.chdir(tmp_path)
    job_id = mesh.submit(name="preprocess", script="process.py",
                         payloads=[{"file": "data.csv"}])
    from conftest import wait_for
    status = wait_for(lambda: (lambda s: s if s["done"] else None)(
        mesh.status(job_id)), 30, what="the payload's job")
    assert status["tasks"][0]["result"] == {"file": "data.csv", "ok": True}
    try:
        import pandas  # noqa: F401
    except ImportError:
        return
    df = mesh.results_to_dataframe(results)   # requires pandas
    assert list(df["lr"]) == [0.01, 0.05]


def test_accelerate_patterns(make_daemon):
    make_daemon(fake="1xH100:80G,1xA100:40G")
    from gmux import GPUMesh, accelerate

    mesh = GPUMesh()

    # Basic
    @accelerate(mesh)
    def preprocess(chunk_id, data_path):
        return {"chunk": chunk_id, "rows": len(data_path)}

    # Hardware selection - only run on an A100
    @accelerate(mesh, gpu="A100")
    def train(model):
        import os
        return model, os.environ.get("CUDA_VISIBLE_DEVICES")

    # Resource specs
    @accelerate(mesh, cores=8, memory="16GB", timeout=300)
    def heavy_computation(data):
        import os
        return data * 2, os.environ.get("GMUX_MEM")

    assert preprocess(3, "abcd") == {"chunk": 3, "rows": 4}
    assert train("m") == ("m", "1")              # the A100 is card 1
    assert heavy_computation(21) == (42, str(16 << 30))

    # Batch: spread across every device
    @accelerate(mesh)
    def train2(lr):
        return lr * 2
    results = train2.map([{"lr": 0.01}, {"lr": 0.05}])
    assert results == [0.02, 0.1]

    # Bind to a specific device
    def predict(x):
        return x + 1
    gpu_predict = accelerate(mesh)(predict).to("cuda")
    result = gpu_predict(1)
    assert result == 2

    # Global install - @accelerate with no arguments
    accelerate.install(mesh)

    @accelerate
    def train3(lr, epochs):
        return {"accuracy": 0.95}
    assert train3(0.1, 1) == {"accuracy": 0.95}

    @accelerate(gpu="B200")
    def nowhere():
        return 1
    with pytest.raises(ValueError, match="no card here is a B200"):
        nowhere()


def test_bare_mesh_has_the_gpumesh_methods(daemon):
    from gmux import mesh
    assert mesh.device_count() == 1 and mesh.gpu_count() == 1
    assert mesh.total_score() == 989.0

    @mesh(share=0.5)
    def f(x):
        return -x
    assert f(2) == -2
    assert mesh.workers()[0]["alive"] is True
