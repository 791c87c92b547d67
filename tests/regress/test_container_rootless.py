"""Rootless containers under a plain user's daemon (docs/containers.md):
the daemon runs as nobody (setpriv, as test_tenants.py's unprivileged
daemon does), so Podman is rootless as nobody, with the single mapping a
user without subordinate IDs gets; gmux cards says so and gmux doctor
warns with the fix, a containerized job runs as nobody on the host, its
--allow fence holds inside, and no container is left."""

import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import GMUX, Daemon, _kill_keepers, wait_for
from test_containers import Listener, home_label, image  # noqa: F401

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root to start a daemon as another user")


class Rootless:
    """A daemon of nobody's, its CLI and Podman as nobody, in dirs of its
    own (the home, Podman's HOME and runtime directory)."""

    def __init__(self):
        self.pw = pwd.getpwnam("nobody")
        self.dirs = [tempfile.mkdtemp(prefix="gmr", dir="/tmp")
                     for _ in range(3)]
        for p in self.dirs:
            os.chown(p, self.pw.pw_uid, self.pw.pw_gid)
        self.d = Daemon(self.dirs[0])
        self.d.env["HOME"] = self.dirs[1]
        self.d.env["XDG_RUNTIME_DIR"] = self.dirs[2]

    def cmd(self, *argv, input=None, timeout=120):
        return subprocess.run(
            ["setpriv", "--reuid=%d" % self.pw.pw_uid,
             "--regid=%d" % self.pw.pw_gid, "--clear-groups"] + list(argv),
            env=self.d.env, capture_output=True, input=input,
            timeout=timeout, cwd=self.dirs[1])

    def gmux(self, *args):
        return self.cmd(GMUX, *args)

    def containers(self):
        r = self.cmd("podman", "ps", "-a", "--filter", "label=gmux.home=" +
                     home_label(self.d), "--format", "{{.Names}}")
        assert r.returncode == 0, r.stderr
        return r.stdout.decode().split()

    def close(self):
        if self.d.running is not None:
            self.d.stop()
        _kill_keepers(self.d.home)
        # Podman's pause process of this runtime directory, by its pid
        pause = os.path.join(self.dirs[2], "libpod", "tmp", "pause.pid")
        try:
            os.kill(int(open(pause).read().strip()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
        for p in self.dirs:
            subprocess.run(["rm", "-rf", "--one-file-system", p],
                           capture_output=True)


@pytest.fixture
def rootless(image):
    r = Rootless()
    beside = os.path.join(os.path.dirname(GMUX), "gmux-fence-exec")
    if r.cmd("test", "-r", beside).returncode != 0:
        r.close()
        pytest.skip("nobody cannot read %s (a checkout under a 0700 "
                    "directory)" % beside)
    save = subprocess.run(["podman", "save", image], capture_output=True,
                          timeout=120)
    assert save.returncode == 0, save.stderr
    load = r.cmd("podman", "load", "-q", input=save.stdout)
    assert load.returncode == 0, load.stderr
    r.image = image
    yield r
    r.close()


def test_a_plain_users_daemon_runs_rootless_containers(rootless):
    r = rootless
    s = r.gmux("serve", "-d", "--fake", "1xH100:80G")
    assert s.returncode == 0, s.stderr
    r.d.running = r.d.pid()
    assert os.stat("/proc/%d" % r.d.running).st_uid == r.pw.pw_uid
    c = r.gmux("cards", "--json")
    assert c.returncode == 0, c.stderr
    host = json.loads(c.stdout)[0]["containers"]
    assert host["podman"] and host["rootless"] and host["fence"], host
    # nobody has no subordinate IDs: it works, with one mapping, and
    # gmux doctor says what that costs and how to give it a range
    assert host["subuids"] is False, host
    checks = json.loads(r.gmux("doctor", "--json").stdout)
    pod = [x for x in checks if x["check"] == "podman"][0]
    assert pod["status"] == "warn", pod
    assert "nobody has no subordinate UIDs" in json.dumps(pod), pod
    assert "usermod --add-subuids" in json.dumps(pod), pod
    j = r.gmux("run", "--image", r.image, "--", "sh", "-c",
               "id -u; cat /proc/self/uid_map")
    out = j.stdout.decode().splitlines()
    assert j.returncode == 0, (j.stdout, j.stderr)
    # root inside is nobody outside
    assert out[0] == "0" and out[1].split() == ["0", str(r.pw.pw_uid), "1"]
    # its --allow fence holds inside a rootless container too
    ok, other = Listener(), Listener()
    j = r.gmux("run", "--image", r.image, "--allow", "127.0.0.1:%d" %
               ok.port, "--", "sh", "-c",
               "echo x | nc 127.0.0.1 %d; echo rc=$?; "
               "echo x | nc 127.0.0.1 %d; echo rc=$?" % (ok.port, other.port))
    assert j.stdout.decode().split() == ["rc=0", "rc=1"], (j.stdout,
                                                           j.stderr)
    wait_for(lambda: ok.accepted == 1, what="the allowed connect")
    assert other.accepted == 0
    assert r.containers() == []


def test_a_remote_workspaces_port_under_a_plain_users_daemon(rootless,
                                                             make_client):
    """The daemon reaches a remote workspace's port inside its container's
    network through the container's user namespace, which a rootless
    daemon's user owns (docs/terminals.md, "Published ports")."""
    from conftest import free_port
    from test_remote_workspace import through_port
    r = rootless
    r.d.port = free_port()
    s = r.gmux("serve", "-d", "--fake", "1xH100:80G", "--addr",
               "127.0.0.1:%d" % r.d.port)
    assert s.returncode == 0, s.stderr
    r.d.running = r.d.pid()
    line = r.gmux("token", "add", "alice").stdout.decode().split()[-1]
    c = make_client()
    assert c.add("gpu1", line).returncode == 0
    port, local = free_port(), free_port()
    with open(os.path.join(c.work, "hello.txt"), "w") as f:
        f.write("hello, rootless\n")
    w = c.gmux("workspace", "create", "web", "--image", r.image,
               "--publish", str(port), timeout=120)
    assert w.returncode == 0, w
    # (a workspace just made may be starting: no container yet)
    ws = wait_for(lambda: [w for w in c.json("workspace", "ls", "--json")
                           if w["state"] == "running" and
                           w.get("container")], 90, what="it to run")[0]
    wait_for(lambda: r.cmd("podman", "exec", ws["container"], "true")
             .returncode == 0, 90, what="its container to run")
    assert r.cmd("podman", "exec", "-d", ws["container"], "busybox",
                 "httpd", "-f", "-p", "127.0.0.1:%d" % port, "-h",
                 "/work").returncode == 0
    wait_for(lambda: r.cmd("podman", "exec", ws["container"], "sh", "-c",
                           "grep -qi ':%04X 00000000:0000 0A' /proc/net/tcp"
                           % port).returncode == 0, 90,
             what="httpd to listen")
    assert through_port(c, "web", port, local) == b"hello, rootless\n"
    assert c.gmux("workspace", "rm", "web").returncode == 0
    wait_for(lambda: r.containers() == [], 90, what="no container")
