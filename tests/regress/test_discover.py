"""gmux serve --announce and gmux remote discover, between two network
namespaces of the test's own joined by a veth pair (never any other
network): the host heard with its name, address, port and pin, checked
against the key the datagram carries; added with an invite on stdin and
run on through the pinned TLS; forged announcements dropped."""

import json
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

from conftest import GMUX, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
SEED = os.path.join(ROOT, "tests", "fuzz", "seeds", "announce", "valid")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="needs root and ip(8) to make network namespaces")


def ip(*args):
    subprocess.run(["ip"] + list(args), check=True, capture_output=True)


@pytest.fixture
def lan():
    """Two namespaces, A (10.231.N.1) and B (10.231.N.2), on one veth."""
    tag = "%d" % (os.getpid() % 100000)
    a, b, net = "gmxa" + tag, "gmxb" + tag, "10.231.%d" % (os.getpid() % 250)
    ip("netns", "add", a)
    ip("netns", "add", b)
    try:
        ip("link", "add", "gva" + tag, "type", "veth", "peer", "name",
           "gvb" + tag)
        for ns, dev, host in ((a, "gva" + tag, 1), (b, "gvb" + tag, 2)):
            ip("link", "set", dev, "netns", ns)
            ip("-n", ns, "addr", "add", "%s.%d/24" % (net, host), "brd", "+",
               "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield a, b, net
    finally:
        ip("netns", "del", a)
        ip("netns", "del", b)


class Side:
    """A GMUX_HOME in a namespace; its gmux runs there."""

    def __init__(self, ns):
        self.ns = ns
        self.home = tempfile.mkdtemp(prefix="gmd", dir="/tmp")
        self.env = dict(os.environ, GMUX_HOME=self.home, GMUX_NO_DETECT="1",
                        GMUX_ANNOUNCE_INTERVAL="1")
        self.env.pop("XDG_CONFIG_HOME", None)

    def cmd(self, *args):
        return ["ip", "netns", "exec", self.ns, GMUX] + list(args)

    def gmux(self, *args, input=None, timeout=60):
        return subprocess.run(self.cmd(*args), env=self.env, input=input,
                              capture_output=True, timeout=timeout)

    def serve(self, addr):
        r = self.gmux("serve", "-d", "--fake", "1xH100:80G", "--addr",
                      addr, "--announce")
        assert r.returncode == 0, r
        line = [x for x in r.stdout.decode().splitlines()
                if x.startswith("gmux remote add ")][0]
        return line.split()[-1]

    def close(self):
        pidfile = os.path.join(self.home, "gmux.pid")
        if os.path.exists(pidfile):
            pid = int(open(pidfile).read())
            os.kill(pid, 15)
            wait_for(lambda: not os.path.exists("/proc/%d" % pid), 10)
        shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture
def sides(lan):
    a, b, net = lan
    made = [Side(a), Side(b)]
    yield made[0], made[1], net
    for s in made:
        s.close()


def listening(side, port=7071):
    r = subprocess.run(["ip", "netns", "exec", side.ns, "ss", "-Hlun",
                        "sport = :%d" % port], capture_output=True, text=True)
    return r.stdout.strip() != ""


def send_from(side, host, data, port=7071):
    code = ("import socket, sys; s = socket.socket(socket.AF_INET, "
            "socket.SOCK_DGRAM); s.sendto(sys.stdin.buffer.read(), "
            "(%r, %d))" % (host, port))
    subprocess.run(["ip", "netns", "exec", side.ns, "/usr/bin/python3", "-c",
                    code], input=data, check=True)


def test_discover_lists_the_host_and_its_pin(sides):
    host, client, net = sides
    invite = host.serve("%s.1:7070" % net)
    pin = invite.rsplit("#", 1)[1]
    r = client.gmux("remote", "discover", "--first", "--wait", "30s",
                    "--json")
    assert r.returncode == 0, r
    heard = json.loads(r.stdout)
    assert len(heard) == 1
    h = heard[0]
    assert h["name"] == socket.gethostname().split(".")[0]
    assert h["addrs"] == ["%s.1" % net] and h["port"] == 7070
    assert h["pin"] == pin
    r = client.gmux("remote", "discover", "--first", "--wait", "30s")
    assert r.returncode == 0
    assert ("%s.1:7070 %s" % (net, pin)).encode() in r.stdout
    assert client.gmux("remote", "ls", "--json").stdout.strip() == b"[]"


def test_discover_adds_the_host_with_an_invite_on_stdin(sides):
    host, client, net = sides
    host.serve("%s.1:7070" % net)
    line = host.gmux("token", "add", "bob").stdout.decode().split()[-1]
    invite = line.split("@")[0]
    r = client.gmux("remote", "discover", "--add", "gpu1", "--first",
                    "--wait", "30s", input=invite.encode())
    assert r.returncode == 0, r
    assert b"added gpu1" in r.stdout
    r = client.gmux("run", "--", "echo", "ran-there")
    assert r.returncode == 0 and r.stdout.strip() == b"ran-there", r
    remotes = open(os.path.join(client.home, "remotes.json")).read()
    assert invite not in remotes            # traded for a token
    # neither the invite nor a token is in the announcement
    got = capture(client)
    assert invite.encode() not in got and b"@" not in got


def capture(side):
    code = ("import socket; s = socket.socket(socket.AF_INET, "
            "socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET, "
            "socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 7071)); "
            "s.settimeout(30); import sys; "
            "sys.stdout.buffer.write(s.recv(2048))")
    return subprocess.run(["ip", "netns", "exec", side.ns, "/usr/bin/python3",
                           "-c", code], capture_output=True, check=True,
                          timeout=60).stdout


def test_forged_announcements_are_dropped(sides):
    """A copy with another address (its signature no longer holds), and
    one that claims the real host's pin with another key: both dropped;
    the host's own is heard."""
    host, client, net = sides
    seed = open(SEED, "rb").read()
    moved = seed.replace(b"addr 10.231.7.1\n", b"addr %s.9\n" % net.encode())
    assert moved != seed
    d = subprocess.Popen(client.cmd("-v", "remote", "discover", "--first",
                                    "--wait", "60s", "--json"),
                         env=client.env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        wait_for(lambda: listening(client), 10, what="discover listening")
        send_from(host, "%s.2" % net, moved)
        invite = host.serve("%s.1:7070" % net)
        pin = invite.rsplit("#", 1)[1].encode()
        lines = seed.split(b"\n")
        stolen = b"\n".join(b"pin " + pin if x.startswith(b"pin ") else x
                            for x in lines)
        send_from(host, "%s.2" % net, stolen)
        out, err = d.communicate(timeout=90)
    finally:
        if d.poll() is None:
            d.kill()
    heard = json.loads(out)
    assert [h["addrs"] for h in heard] == [["%s.1" % net]]
    assert heard[0]["pin"] == pin.decode()
    assert b"dropped: its signature or key does not match its pin" in err


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    env = dict(os.environ, GMUX_HOME=str(tmp_path), GMUX_NO_DETECT="1")
    for args, word in ((["remote", "discover", "--wait", "x"], "--wait"),
                       (["remote", "discover", "--host", "a"], "--host"),
                       (["remote", "discover", "gpu1"], "argument"),
                       (["serve", "--announce"], "--addr")):
        r = subprocess.run([GMUX] + args, env=env, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2 and word in r.stderr, (args, r)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not os.path.exists(tmp_path / "gmux.sock")
