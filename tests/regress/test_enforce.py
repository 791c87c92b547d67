"""End to end on a fake card with the fake driver: a job's over-cap
allocation fails, its neighbour on the same card is untouched.  Needs the
fake driver and cudash (`make regress` and `make test` build them)."""

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GMUX", ROOT / "build" / "gmux")).parent
CUDASH = BUILD / "shim-tests" / "cudash"


def run(daemon, mem, script):
    return daemon.gmux("run", "--share", "0.25", "--mem", mem, "--",
                       str(CUDASH), "-c", script)


def test_over_cap_fails_neighbour_untouched(daemon):
    assert CUDASH.exists(), "build the shim tests first (make unit-shim)"
    daemon.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    daemon.start()
    cards = daemon.json("cards", "--json")
    assert cards[0]["enforce"]["memory"] == "shim", cards
    big = run(daemon, "1G", "init;alloc 900M;alloc 200M;info")
    lines = big.stdout.decode().split("\n")
    assert lines[1].startswith("ok") and lines[2] == "err 2", big.stdout
    assert lines[3].endswith(" 1073741824"), big.stdout
    other = run(daemon, "4G", "init;alloc 3G;info")
    assert other.stdout.decode().split("\n")[1].startswith("ok"), other.stdout
