"""--mode overcommit on one host (docs/scheduling.md, "Overcommit"), with
real detection and a fake nvidia-smi on PATH whose card reports the memory
in use that the test writes: admitted on measured free with nothing
reserved (so where a shared job of the same size is refused), its cap its
--mem, else the card's memory less what is reserved there, its ask kept
from the shared jobs after it; refused when measured use grows, and where
no card measures it; past its cap, its allocation fails (the shim and the
fake driver: `make unit-shim` builds cudash)."""

import json
import os
import pathlib

from conftest import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[2]

UUID = "GPU-0c0ffee0-6b1c-4b6e-9a51-3f0c2d7e8a10"
MIB = 1 << 20
CARD = 81559 * MIB

# One H100; its memory.used (MiB) is $DIR/used.
TOOL = """#!/bin/sh
DIR=%s
case "$*" in
*query-gpu=index,uuid*)
    echo "0, %s, NVIDIA H100 80GB HBM3, 81559, 00000000:18:00.0";;
*query-gpu=index,utilization.gpu*)
    echo "0, 10, $(cat "$DIR/used")";;
*query-compute-apps*)
    exit 0;;
*) exit 2;;
esac
"""


def measured_card(daemon, tmp_path, used_mib):
    """Starts daemon on one 'real' card that tmp_path's tool reports."""
    tool = tmp_path / "nvidia-smi"
    tool.write_text(TOOL % (tmp_path, UUID))
    tool.chmod(0o755)
    set_used(daemon, tmp_path, used_mib, wait=False)
    del daemon.env["GMUX_NO_DETECT"]
    daemon.env["PATH"] = "%s:%s" % (tmp_path, daemon.env["PATH"])
    daemon.start(fake=None)
    wait_measured(daemon, used_mib)
    return daemon


def set_used(daemon, tmp_path, used_mib, wait=True):
    (tmp_path / "used.new").write_text("%d\n" % used_mib)
    os.rename(tmp_path / "used.new", tmp_path / "used")
    if wait:
        wait_measured(daemon, used_mib)


def wait_measured(daemon, used_mib):
    wait_for(lambda: daemon.json("cards", "--json")[0].get(
        "mem_measured") == used_mib * MIB, 30, 0.1,
        what="the card's measured use to be %d MiB" % used_mib)


def run(daemon, *flags):
    return daemon.gmux("run", "-d", *flags, "--", "sh", "-c",
                       'echo "mem=$GMUX_MEM"; exec sleep 600')


def running(daemon, r):
    assert r.returncode == 0, r.stderr
    jid = r.stdout.decode().strip()
    daemon.wait_state(jid, ("running",), timeout=30)
    wait_for(lambda: b"mem=" in daemon.gmux("logs", jid).stdout, 30, 0.1,
             what="%s's first line" % jid)
    mem = daemon.gmux("logs", jid).stdout.decode().split("mem=")[1]
    return jid, int(mem.split()[0])


def test_admitted_on_measured_free_not_on_reservations(daemon, tmp_path):
    measured_card(daemon, tmp_path, 2048)
    # a card held whole takes none, even one that asks nothing
    x, _ = running(daemon, run(daemon, "--mode", "exclusive"))
    r = run(daemon, "--mode", "overcommit", "--share", "0.25")
    assert b"mode: overcommit: 1 card with 1G free by measure needed, " \
        b"0 now" in r.stderr, r.stderr
    daemon.gmux("stop", x)
    daemon.wait_state(x, ("stopped",), timeout=30)
    # a shared job holds every seat and 8G
    full, mem = running(daemon, run(daemon, "--share", "1", "--mem", "8G"))
    assert mem == 8 << 30
    # one of the same size in shared mode does not fit now
    r = run(daemon, "--share", "0.25", "--mem", "8G", "--no-wait")
    assert r.returncode != 0, r.stdout
    assert b"no room now for 0.25 of a card" in r.stderr, r.stderr
    # overcommitted, it runs: no seat, nothing reserved, its cap its --mem
    o, mem = running(daemon, run(daemon, "--mode", "overcommit",
                                 "--share", "0.25", "--mem", "8G"))
    assert mem == 8 << 30
    # no seat held; its 8G withheld from what may be promised after it
    card = daemon.json("cards", "--json")[0]
    assert card["guaranteed"] == 1.0 and card["mem_used"] == 16 << 30, card
    assert daemon.job(o)["state"] == "running"
    # measured use grows: 80G - 70G measured - 8G reserved - 8G asked
    set_used(daemon, tmp_path, 70 * 1024)
    r = run(daemon, "--mode", "overcommit", "--share", "0.25", "--mem", "8G")
    assert r.returncode != 0, r.stdout
    assert b"mode: overcommit: 1 card with 8G free by measure needed, " \
        b"0 now" in r.stderr, r.stderr
    # it shrinks: without --mem, the cap is what nobody reserved
    set_used(daemon, tmp_path, 4096)
    _, mem = running(daemon, run(daemon, "--mode", "overcommit",
                                 "--share", "0.25"))
    assert mem == CARD - (16 << 30), mem
    # a shared job after them is not promised what they were admitted on
    daemon.gmux("stop", full)
    daemon.wait_state(full, ("stopped",), timeout=30)
    r = run(daemon, "--share", "0.25", "--mem", "72G", "--no-wait")
    assert r.returncode != 0, r.stdout
    running(daemon, run(daemon, "--share", "0.25", "--mem", "70G"))
    # a daemon restarted withholds the same again
    before = daemon.json("cards", "--json")[0]["mem_used"]
    assert before == (78 << 30), before
    daemon.kill9()
    daemon.start(fake=None)
    assert daemon.json("cards", "--json")[0]["mem_used"] == before


def test_refused_where_no_card_measures(daemon):
    daemon.start(fake="1xH100:80G")
    r = daemon.gmux("run", "--mode", "overcommit", "--share", "0.5", "--",
                    "true")
    assert r.returncode != 0, r.stdout
    assert b"mode: overcommit admits on measured memory use, and no card " \
        b"here measures it (fake cards do not)" in r.stderr, r.stderr
    assert json.loads(daemon.gmux("ps", "--json").stdout) == []


def test_the_overcommitted_job_is_the_one_capped(daemon, tmp_path):
    """Its cap is enforced as any job's: with the shim and the fake
    driver, its allocation past its --mem fails; a shared job beside it
    allocates what it reserved."""
    build = pathlib.Path(os.environ.get("GMUX", ROOT / "build" / "gmux"))
    cudash = build.parent / "shim-tests" / "cudash"
    assert cudash.exists(), "build the shim tests first (make unit-shim)"
    measured_card(daemon, tmp_path, 1024)
    assert daemon.json("cards", "--json")[0]["enforce"]["memory"] == "shim"

    def sh(mode, mem, script):
        return daemon.gmux("run", "--mode", mode, "--share", "0.25",
                           "--mem", mem, "--", "env", "LD_LIBRARY_PATH=%s" %
                           (build.parent / "fake-cuda"), str(cudash), "-c",
                           script)
    over = sh("overcommit", "1G", "init;alloc 900M;alloc 200M")
    lines = over.stdout.decode().split("\n")
    assert lines[1].startswith("ok") and lines[2] == "err 2", over.stdout
    shared = sh("shared", "4G", "init;alloc 3G")
    assert shared.stdout.decode().split("\n")[1].startswith("ok"), \
        shared.stdout
