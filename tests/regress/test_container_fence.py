"""The --allow fence inside a container (docs/containers.md, "The
fence"): gmux-fence-exec installs the seccomp filter as the container's
first process, so every process in it is fenced as a native job is; a
fence that could not hold is refused, never run unfenced.

Uses test_containers.py's scratch image (busybox-static, built here)."""

import socket
import threading

from conftest import wait_for
from test_containers import (Listener, cdaemon, containers,  # noqa: F401
                             image, run)


class Address(Listener):
    """A Listener on another loopback address."""

    def __init__(self, addr):
        self.sock = socket.socket()
        self.sock.bind((addr, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()


def probe(*targets):
    """A shell line: nc to each ADDR:PORT, its exit status after each."""
    return "; ".join("echo x | nc %s %d; echo rc=$?" % t for t in targets)


def test_allowed_connects_and_refused_ones_inside(cdaemon):
    d = cdaemon.start()
    ok, port, addr = Listener(), Listener(), Address("127.0.0.3")
    # a child of a child: every process of the container is fenced
    line = probe(("127.0.0.1", ok.port), ("127.0.0.1", port.port),
                 ("127.0.0.3", addr.port))
    r = run(d, "--allow", "127.0.0.1:%d" % ok.port, "--", "sh", "-c",
            "sh -c '%s'" % line, check=0)
    out = r.stdout.decode()
    assert out.split() == ["rc=0", "rc=1", "rc=1"], (out, r.stderr)
    wait_for(lambda: ok.accepted == 1, what="the allowed connect")
    assert port.accepted == 0 and addr.accepted == 0
    j = d.job("j1")
    assert j["state"] == "exited" and j["exit_code"] == 0, j
    assert j["fence"] == "allow 127.0.0.1:%d" % ok.port, j
    st = j["fence_stats"]
    assert st["refused"] == 2 and st["allowed"] == 1, st
    assert st["last_refused"] == "127.0.0.3:%d" % addr.port, st
    assert containers(d) == []
    # the Landlock backstop went in as a native fenced job's does
    d.gmux("run", "--allow", "127.0.0.1:%d" % ok.port, "--", "true",
           check=0)
    assert st["landlock"] == d.job("j2")["fence_stats"]["landlock"], st


def test_the_fenced_command_is_the_containers_own(cdaemon):
    """The command is pid 1 after gmux-fence-exec's exec, with one filter
    more than an unfenced container's (podman's own); its exit code is its
    own."""
    d = cdaemon.start()
    line = "cat /proc/1/cmdline; echo; grep Seccomp_filters /proc/1/status"
    r = run(d, "--", "sh", "-c", line)
    plain = int(r.stdout.decode().split()[-1])
    r = run(d, "--allow", "127.0.0.1:9", "--", "sh", "-c", line + "; exit 5")
    out = r.stdout.decode()
    assert r.returncode == 5, (out, r.stderr)
    assert out.startswith("sh\0-c\0"), out
    assert int(out.split()[-1]) == plain + 1, (plain, out)
    assert d.job("j2")["exit_code"] == 5


def test_a_missing_command_inside_a_fence(cdaemon):
    d = cdaemon.start()
    r = run(d, "--allow", "127.0.0.1:9", "--", "no-such-command")
    assert r.returncode == 127, r
    assert b"no-such-command" in r.stderr, r.stderr
    assert containers(d) == []


def test_a_stopped_fenced_container_leaves_nothing(cdaemon):
    d = cdaemon.start()
    run(d, "-d", "--grace", "0", "--allow", "127.0.0.1:9", "--", "sleep",
        "1000", check=0)
    d.wait_state("j1", "running")
    wait_for(lambda: containers(d) != [], what="its container")
    d.gmux("stop", "j1", check=0)
    d.wait_state("j1", "stopped")
    assert containers(d) == []


def test_a_fence_it_cannot_cover_stays_refused(cdaemon, tmp_path):
    d = cdaemon.start()
    sock = tmp_path / "s.sock"
    for args, why in (
            (["run", "--image", d.image, "--allow", "unix:%s" % sock],
             "a unix: rule cannot reach"),
            (["run", "--image", d.image, "--deny-net", "--allow",
              "unix:%s" % sock], "a unix: rule cannot reach"),
            (["workspace", "create", "w", "--image", d.image, "--allow",
              "127.0.0.1:9"], "podman exec")):
        r = d.gmux(*args, "--", "true") if args[0] == "run" else \
            d.gmux(*args)
        err = r.stderr.decode()
        assert r.returncode == 2, (args, r)
        assert ": allow: " in err and why in err, err
        assert "not run unfenced" in err, err
    assert d.json("ps", "-a", "--json") == []
    assert containers(d) == []


def test_a_missing_image_inside_a_fence(cdaemon):
    d = cdaemon.start()
    r = d.gmux("run", "--image", "localhost/gmux-no-such-image:1",
               "--allow", "127.0.0.1:9", "--", "true")
    assert r.returncode == 125, r
    assert b"image not known" in r.stderr, r.stderr
    assert containers(d) == []
