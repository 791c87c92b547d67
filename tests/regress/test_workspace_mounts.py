"""A workspace's home, cache and mounts (docs/containers.md, "Home, cache
and mounts"): the owner's home at its own path, its cache volume at /cache
(kept after workspace rm), a devcontainer.json's bind mounts (confined to
the owner's home) and volumes, and its forwardPorts reached with gmux port
NAME PORT; with a real Podman and the scratch image built here."""

import os
import socket
import subprocess
import tempfile

import pytest

from conftest import free_port, wait_for
from test_containers import (_podman, cdaemon, containers,  # noqa: F401
                             home_label, image)


@pytest.fixture
def wdaemon(cdaemon):
    """A daemon whose owner's home is a directory of the test's; the
    owner's volumes go after."""
    d = cdaemon
    d.owner_home = os.path.realpath(tempfile.mkdtemp(prefix="gh",
                                                     dir="/tmp"))
    d.env["HOME"] = d.owner_home
    yield d     # (cdaemon removes its volumes)
    subprocess.run(["rm", "-rf", d.owner_home])


def inside(ctr, script, check=True):
    return _podman("exec", ctr, "sh", "-c", script, check=check)


def create(d, name, *args):
    r = d.gmux("workspace", "create", name, *args)
    assert r.returncode == 0, r
    ws = [w for w in d.json("workspace", "ls", "--json")
          if w["name"] == name][0]
    wait_for(lambda: inside(ws["container"], "true", check=False)
             .returncode == 0, timeout=90, what="its container")
    return ws


def owner(d):
    return d.json("ps", "--json")[0]["owner"]


def test_home_and_cache_are_mounted_and_the_cache_outlives_rm(wdaemon):
    d = wdaemon.start()
    h = d.owner_home
    with open(os.path.join(h, "hello"), "w") as f:
        f.write("from the host\n")
    ws = create(d, "dev", "--image", d.image)
    out = inside(ws["container"], "cat %s/hello; echo made > %s/back; "
                 "echo cached > /cache/x" % (h, h)).stdout
    assert out == b"from the host\n", out
    assert open(os.path.join(h, "back")).read() == "made\n"
    vol = "gmux-%s-%s-cache" % (home_label(d), owner(d))
    assert d.gmux("workspace", "rm", "dev").returncode == 0
    wait_for(lambda: containers(d) == [], timeout=90,
             what="no container")
    assert _podman("volume", "exists", vol, check=False).returncode == 0
    # the next workspace of the owner finds its cache as it was
    ws = create(d, "dev", "--image", d.image)
    assert inside(ws["container"], "cat /cache/x").stdout == b"cached\n"
    d.gmux("workspace", "rm", "dev", check=0)


def serve_once(ctr, port):
    """A server inside the container on the host's port (its network is
    the host's): says hello to each connection."""
    _podman("exec", "-d", ctr, "sh", "-c", "while :; do echo hello-port | "
            "nc -l -p %d; done" % port)


def fetch(local):
    """What the server says through the forward; None if not yet."""
    try:
        with socket.create_connection(("127.0.0.1", local),
                                      timeout=10) as s:
            data = b""
            while True:
                b = s.recv(100)
                if not b:
                    return data
                data += b
    except OSError:
        return None


def test_devcontainer_mounts_and_forwarded_ports(wdaemon, tmp_path):
    d = wdaemon.start()
    h = d.owner_home
    os.mkdir(os.path.join(h, "data"))
    with open(os.path.join(h, "data", "f"), "w") as f:
        f.write("data\n")
    port, local = free_port(), free_port()
    f = tmp_path / "devcontainer.json"
    f.write_text('{"image": "%s",\n "mounts": ["source=%s/data,target=/data,'
                 'type=bind,readonly",\n {"source": "models", "target": '
                 '"/models", "type": "volume"}],\n "forwardPorts": [%d]}\n'
                 % (d.image, h, port))
    ws = create(d, "dev", "--devcontainer", str(f))
    j = d.job(ws["id"])
    assert j["publish"] == [port] and len(j["mounts"]) == 2, j
    ctr = ws["container"]
    assert inside(ctr, "cat /data/f").stdout == b"data\n"
    r = inside(ctr, "echo x > /data/g", check=False)
    assert r.returncode != 0 and not os.path.exists(
        os.path.join(h, "data", "g")), r
    assert inside(ctr, "echo m > /models/m && cat /models/m").stdout == \
        b"m\n"
    assert _podman("volume", "exists", "gmux-%s-%s-models" % (
        home_label(d), j["owner"]), check=False).returncode == 0
    # its forwarded port, through the daemon, by the workspace's name
    serve_once(ctr, port)
    p = d.popen("port", "dev", str(port), str(local),
                stderr=subprocess.PIPE)
    try:
        line = p.stderr.readline().decode()
        assert line == "gmux: 127.0.0.1:%d -> %s:%d\n" % (local, ws["id"],
                                                          port), line
        wait_for(lambda: fetch(local) == b"hello-port\n", timeout=90,
                 what="the workspace's server")
    finally:
        p.terminate()
        p.wait()
    r = d.gmux("port", "nope", str(port))
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux port: no workspace nope\n")
    d.gmux("workspace", "rm", "dev", check=0)
    wait_for(lambda: containers(d) == [], timeout=90,
             what="no container")


def test_mounts_outside_the_home_are_refused(wdaemon, tmp_path):
    d = wdaemon.start()
    h = d.owner_home
    os.symlink("/etc", os.path.join(h, "etc"))
    f = tmp_path / "devcontainer.json"
    for mount, want in (
            ("source=/etc,target=/e",
             "mounts[0].source: /etc is outside the owner's home (%s)" % h),
            ("source=%s/etc,target=/e" % h,
             "mounts[0].source: %s/etc is outside the owner's home" % h),
            ("source=%s/../x,target=/e" % h,
             "mounts[0].source: an absolute path, without"),
            ("source=%s,target=/" % h, "mounts[0].target: "),
            ("source=-v,target=/e,type=volume", "mounts[0].source: a "
             "volume's name")):
        f.write_text('{"image": "%s", "mounts": ["%s"]}' % (d.image, mount))
        r = d.gmux("workspace", "create", "x", "--devcontainer", str(f))
        assert r.returncode == 2, (mount, r)
        assert r.stderr.decode().startswith("gmux workspace: " + want), \
            (mount, r.stderr)
    # the daemon checks a request's binds whoever sends it
    code, o = d.curl("POST", "/v1/jobs", '{"argv": ["true"], "image": "%s",'
                     ' "name": "y", "workspace": true, "mounts": [{"type": '
                     '"bind", "source": "/", "target": "/h"}]}' % d.image)
    assert code == 400 and "mounts[0].source: / is outside" in o, o
    code, o = d.curl("POST", "/v1/jobs", '{"argv": ["true"], "image": "%s",'
                     ' "mounts": [{"type": "volume", "source": "v", '
                     '"target": "/v"}]}' % d.image)
    assert code == 400 and "mounts: only for a workspace" in o, o
    assert d.json("ps", "-a", "--json") == [] and containers(d) == []
