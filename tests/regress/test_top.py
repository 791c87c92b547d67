"""gmux top's live loop in a real terminal (tmux): it draws full-screen,
redraws each second, follows the window's size and quits on q.

The loop is driven through build/tests/test-top --loop FILE, which feeds it
snapshots from FILE instead of the daemon, so no daemon is needed here.
"""

import json
import os
import shutil
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
BIN = os.path.join(ROOT, os.environ.get("GMUX_BUILD", "build"), "tests",
                   "test-top")

CARD = {"index": 0, "vendor": "nvidia", "model": "H100",
        "memory": 80 << 30, "guaranteed": 0.75, "burst": 0.25,
        "mem_used": 40 << 30, "util": 0.4}


def job(n: int, owner: str) -> dict:
    return {"id": f"j{n}", "owner": owner, "share": 0.25, "mem": 20 << 30,
            "state": "running", "card": 0,
            "started": int(time.time() * 1000) - 5000}


def write_snapshot(path, jobs: list) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"cards": [CARD], "jobs": jobs}, f)
    os.rename(tmp, path)


class Tmux:
    def __init__(self, name: str):
        self.name = name

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null",
                               *args], check=True, capture_output=True,
                              text=True).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "top")

    def wait_for(self, want: str, timeout: float = 5.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if want in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{want!r} not on screen:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def top(tmp_path):
    assert shutil.which("tmux") is not None, "tests/setup-deps installs tmux"
    assert os.path.exists(BIN), "make units builds build/tests/test-top"
    snap = tmp_path / "snapshot.json"
    write_snapshot(snap, [job(1, "alice")])
    # A server of its own per test: a killed one may linger a moment.
    t = Tmux(f"gmux-test-top-{os.getpid()}-{tmp_path.name}")
    t.run("new-session", "-d", "-s", "top", "-x", "100", "-y", "30",
          f"{BIN} --loop {snap}; echo EXITED $?; sleep 60")
    try:
        yield t, snap
    finally:
        subprocess.run(["tmux", "-L", t.name, "kill-server"],
                       capture_output=True)


def test_draws_and_quits_on_q(top):
    t, _ = top
    t.wait_for("card 0  nvidia H100  80G  1 job")
    # the job rows are drawn last: once they are there, the frame is whole
    text = t.wait_for("j1     alice      0    0.25  20G    running")
    # 100 columns: bars of 25.
    assert "  guaranteed [###################......] 75%" in text
    assert "j1     alice      0    0.25  20G    running" in text
    t.run("send-keys", "-t", "top", "q")
    text = t.wait_for("EXITED 0")
    # The alternate screen is gone with the frame on it.
    assert "guaranteed" not in text


def test_redraws_each_second(top):
    t, snap = top
    t.wait_for("j1     alice")
    write_snapshot(snap, [job(1, "alice"), job(2, "bob")])
    t.wait_for("j2     bob", timeout=3)


def test_follows_the_window_size(top):
    t, _ = top
    t.wait_for("[###################......] 75%")
    t.run("resize-window", "-t", "top", "-x", "60", "-y", "20")
    text = t.wait_for("  guaranteed [####.] 75%")
    assert all(len(line) <= 60 for line in text.splitlines())


def test_plain_when_not_a_terminal(tmp_path):
    assert os.path.exists(BIN), "make units builds build/tests/test-top"
    snap = tmp_path / "snapshot.json"
    write_snapshot(snap, [job(1, "alice")])
    p = subprocess.Popen([BIN, "--loop", str(snap)], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        first = p.stdout.readline()
        assert first.startswith("gmux top  ")
        assert "\033" not in first
    finally:
        p.kill()
        p.wait()


def test_gmux_top_against_a_daemon(daemon):
    """The real command: gmux top in a tmux window, with a daemon's cards
    and jobs, redrawn as they change, q quits."""
    daemon.start(fake="1xH100:80G")
    daemon.gmux("run", "-d", "--share", "0.25", "--", "sleep", "100",
                check=0)
    name = "gmux-top-%d" % os.getpid()
    t = Tmux(name)
    env = " ".join("%s=%s" % (k, daemon.env[k]) for k in ("GMUX_HOME",))
    gmux = os.environ.get("GMUX") or os.path.join(ROOT, "build", "gmux")
    t.run("new-session", "-d", "-s", "top", "-x", "100", "-y", "30",
          "env %s %s top; echo EXITED $?; sleep 60" % (env, gmux))
    try:
        t.wait_for("card 0  nvidia H100  80G  1 job")
        t.wait_for("j1 ")
        daemon.gmux("run", "-d", "--share", "0.5", "--", "sleep", "100",
                    check=0)
        t.wait_for("j2 ", timeout=4)
        t.wait_for("75%")
        t.run("send-keys", "-t", "top", "q")
        t.wait_for("EXITED 0")
    finally:
        subprocess.run(["tmux", "-L", name, "kill-server"],
                       capture_output=True)
