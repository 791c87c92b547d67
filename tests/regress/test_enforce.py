"""End to end on a fake card with the fake driver: a job's over-cap
allocation fails, its neighbour on the same card is untouched.

Needs the daemon ($GMUX) and `make unit-shim` (the fake driver and
cudash); skipped when either is missing.
"""
import os
import pathlib
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
GMUX = os.environ.get("GMUX", str(BUILD / "gmux"))
CUDASH = BUILD / "shim-tests" / "cudash"


@pytest.fixture
def daemon(tmp_path):
    if not (pathlib.Path(GMUX).exists() and CUDASH.exists()):
        pytest.skip("needs build/gmux and make unit-shim")
    env = dict(os.environ, GMUX_HOME=str(tmp_path / "h"),
               GMUX_FAKE_CUDA=str(BUILD / "fake-cuda"), GMUX_NO_DETECT="1")
    proc = subprocess.Popen([GMUX, "serve", "--fake", "1xH100:80G"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run([GMUX, "cards", "--json"], env=env,
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.skip("the daemon did not start")
    yield env
    proc.terminate()
    proc.wait(timeout=10)


def run(env, mem, script):
    return subprocess.run([GMUX, "run", "--share", "0.25", "--mem", mem, "--",
                           str(CUDASH), "-c", script], env=env,
                          capture_output=True, text=True, timeout=60)


def test_over_cap_fails_neighbour_untouched(daemon):
    big = run(daemon, "1G", "init;alloc 900M;alloc 200M;info")
    lines = big.stdout.split("\n")
    assert lines[1].startswith("ok") and lines[2] == "err 2", big.stdout
    assert lines[3].endswith(" 1073741824"), big.stdout
    other = run(daemon, "4G", "init;alloc 3G;info")
    assert other.stdout.split("\n")[1].startswith("ok"), other.stdout
