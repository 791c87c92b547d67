"""The audit of GPU processes, end to end, with real detection and a fake
nvidia-smi on PATH: the daemon asks the tool without waiting for it (a slow
or hung nvidia-smi never stops the API), one scan at a time, and acts on
the answer (GMUX_AUDIT_TICKS=1: a scan every second instead of every ten)."""

import os
import statistics
import time

from conftest import wait_for

UUID = "GPU-5d1f0e2a-6b1c-4b6e-9a51-3f0c2d7e8a10"

# Lists one H100; for --query-compute-apps, notes the scan in $DIR/scans,
# sleeps $DIR/sleep seconds if that file exists, then prints $DIR/apps.
TOOL = """#!/bin/sh
DIR=%s
case "$*" in
*query-gpu=index,uuid*)
    echo "0, %s, NVIDIA H100 80GB HBM3, 81559, 00000000:18:00.0";;
*query-gpu=index,utilization.gpu*)
    echo "0, 37, 1024";;
*query-compute-apps*)
    echo scan >> "$DIR/scans"
    [ -f "$DIR/sleep" ] && sleep "$(cat "$DIR/sleep")"
    cat "$DIR/apps" 2>/dev/null
    exit 0;;
*) exit 2;;
esac
"""


def real_card_daemon(daemon, tmp_path, *args, sleep=None):
    """Starts daemon with one 'real' NVIDIA card that tmp_path's tool
    reports."""
    tool = tmp_path / "nvidia-smi"
    tool.write_text(TOOL % (tmp_path, UUID))
    tool.chmod(0o755)
    if sleep is not None:
        (tmp_path / "sleep").write_text(str(sleep))
    del daemon.env["GMUX_NO_DETECT"]
    daemon.env["PATH"] = "%s:%s" % (tmp_path, daemon.env["PATH"])
    daemon.env["GMUX_AUDIT_TICKS"] = "1"
    daemon.start(*args, fake=None)
    cards = daemon.json("cards", "--json")
    assert len(cards) == 1 and cards[0]["uuid"] == UUID, cards
    return daemon


def scans(tmp_path):
    try:
        return len((tmp_path / "scans").read_text().split())
    except FileNotFoundError:
        return 0


def test_a_hung_nvidia_smi_does_not_stop_the_daemon(daemon, tmp_path):
    real_card_daemon(daemon, tmp_path, sleep=3)
    wait_for(lambda: scans(tmp_path) >= 1, 10, what="the first scan")
    t0 = time.monotonic()
    took = []
    while time.monotonic() - t0 < 2.5:
        t = time.monotonic()
        daemon.gmux("ps", check=0)
        took.append(time.monotonic() - t)
    # The scan is still running (it sleeps 3 s), and no second one started.
    assert scans(tmp_path) == 1
    print("gmux ps during a 3 s nvidia-smi: %d calls, median %.1f ms, "
          "max %.1f ms" % (len(took), statistics.median(took) * 1000,
                           max(took) * 1000))
    assert len(took) >= 10, took
    assert statistics.median(took) < 0.1, took
    assert max(took) < 0.5, took
    # Scans go on, one at a time: about one per 3 s, not one per second.
    wait_for(lambda: scans(tmp_path) >= 2, 10, what="the next scan")
    assert scans(tmp_path) <= 3


def test_an_unregistered_gpu_process_is_stopped(daemon, tmp_path):
    real_card_daemon(daemon, tmp_path)
    daemon.gmux("run", "-d", "--share", "0.25", "--card", "0", "--",
                "sleep", "60", check=0)
    pid = wait_for(lambda: daemon.job("j1").get("pid"), what="pid")
    # The driver sees the job's process on the card; it never asked
    # libgmux.so for memory, so the region does not know it.
    (tmp_path / "apps").write_text("%d, %s, 1024\n" % (pid, UUID))
    j = daemon.wait_state("j1", ("exited", "stopped", "failed"), 15)
    assert j["exit_code"] == 137, j
    assert "not registered with libgmux (stopped)" in j["audit"], j


def test_report_only_leaves_the_process_running(daemon, tmp_path):
    real_card_daemon(daemon, tmp_path, "--audit-report-only")
    daemon.gmux("run", "-d", "--share", "0.25", "--card", "0", "--",
                "sleep", "60", check=0)
    pid = wait_for(lambda: daemon.job("j1").get("pid"), what="pid")
    (tmp_path / "apps").write_text("%d, %s, 1024\n" % (pid, UUID))
    j = wait_for(lambda: (lambda j: j if j.get("audit") else None)
                 (daemon.job("j1")), 15, what="the audit's report")
    assert "not registered with libgmux" in j["audit"], j
    assert "stopped" not in j["audit"], j
    time.sleep(1.5)
    assert daemon.job("j1")["state"] == "running"
    assert os.path.exists("/proc/%d" % pid)
    daemon.gmux("stop", "--grace", "0", "j1", check=0)


def test_measured_use_reaches_cards_top_and_metrics(daemon, tmp_path):
    real_card_daemon(daemon, tmp_path)
    wait_for(lambda: daemon.json("cards", "--json")[0]["util"] is not None,
             10, what="a measurement")
    assert daemon.json("cards", "--json")[0]["util"] == 0.37
    code, text = daemon.curl("GET", "/metrics")
    assert any(l.startswith("gmux_card_utilization") and
               l.split()[-1] == "0.37" for l in text.splitlines()), text
    top = daemon.gmux("top", "--once", check=0).stdout.decode()
    assert "37%" in top, top


UUID1 = "GPU-77aa0e2a-6b1c-4b6e-9a51-3f0c2d7e8a11"


def children(pid):
    return [int(p) for p in open("/proc/%d/task/%d/children" %
                                  (pid, pid)).read().split()]


def test_a_two_card_job_is_held_to_each_cards_cap(daemon, tmp_path):
    """A job on two cards has a cap on each: 30G on each of two 40G caps
    is within them (its first card's cap alone is not the bound), and 50G
    on the second card is over that card's cap."""
    tool = tmp_path / "nvidia-smi"
    tool.write_text((TOOL % (tmp_path, UUID)).replace(
        'echo "0, %s, NVIDIA H100 80GB HBM3, 81559, 00000000:18:00.0";;' %
        UUID,
        'echo "0, %s, NVIDIA H100 80GB HBM3, 81559, 00000000:18:00.0"\n'
        '    echo "1, %s, NVIDIA H100 80GB HBM3, 81559, '
        '00000000:19:00.0";;' % (UUID, UUID1)))
    tool.chmod(0o755)
    del daemon.env["GMUX_NO_DETECT"]
    daemon.env["PATH"] = "%s:%s" % (tmp_path, daemon.env["PATH"])
    daemon.env["GMUX_AUDIT_TICKS"] = "1"
    daemon.start("--audit-report-only", fake=None)
    assert len(daemon.json("cards", "--json")) == 2
    daemon.gmux("run", "-d", "--cards", "2", "--share", "0.5", "--mem",
                "40G", "--", "sh", "-c", "sleep 60 & sleep 60", check=0)
    pid = wait_for(lambda: daemon.job("j1").get("pid"), what="pid")
    kids = wait_for(lambda: (lambda k: k if len(k) == 2 else None)
                    (children(pid)), what="two processes")
    apps = tmp_path / "apps"
    apps.write_text("%d, %s, %d\n%d, %s, %d\n" % (
        kids[0], UUID, 30 << 10, kids[1], UUID1, 30 << 10))
    n = scans(tmp_path)
    wait_for(lambda: scans(tmp_path) >= n + 3, 15, what="three scans")
    j = daemon.job("j1")
    assert j["audit"] and "memory cap" not in j["audit"], j
    apps.write_text("%d, %s, %d\n%d, %s, %d\n" % (
        kids[0], UUID, 30 << 10, kids[1], UUID1, 50 << 10))
    j = wait_for(lambda: (lambda j: j if "memory cap" in (j["audit"] or "")
                          else None)(daemon.job("j1")), 15,
                 what="the cap report")
    assert "card 1" in j["audit"], j
    daemon.gmux("stop", "--grace", "0", "j1", check=0)
