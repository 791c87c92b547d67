"""Containers for remote (confined) jobs (docs/containers.md, "Remote
jobs"): a job that came over TCP with an image runs in its container in its
synced tree at /work, its output streams back and its results can be
pulled; it sees nothing of the host's but its image, its tree and its
share's paths, has no network, and podman runs on the host's terms, not
the client's (a client's CONTAINERS_CONF is not podman's).  Image names
that are not plain references are refused naming the field."""

import json
import os

import pytest

from remotelib import https_json, job_file
from test_containers import BUILD, _podman, containers, image  # noqa: F401


@pytest.fixture(params=["overlay", "copy"])
def host(request, make_daemon, make_client, image):  # noqa: F811
    """A host over loopback TLS and a client of alice's, the host giving
    jobs their trees as the parameter says."""
    d = make_daemon()
    d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    if request.param == "copy":
        d.env["GMUX_REMOTE_OVERLAY"] = "0"
    d.serve_tls()
    line = d.gmux("token", "add", "alice", check=0).stdout.decode().split()[-1]
    c = make_client()
    assert c.add("gpu1", line).returncode == 0
    d.image, d.tree = image, request.param
    yield d, c
    for name in containers(d):
        _podman("rm", "-f", "-t", "0", name, check=False)


def test_it_runs_in_the_container_in_its_synced_tree(host):
    d, c = host
    with open(os.path.join(c.work, "in.txt"), "w") as f:
        f.write("from the client\n")
    r = c.gmux("run", "--image", d.image, "--pull", "made.txt", "--", "sh",
               "-c", "pwd; cat in.txt; echo made here > made.txt; "
               "echo to stderr >&2; test -x /bin/busybox && echo inside; "
               "exit 3")
    assert r.returncode == 3, r
    assert r.stdout == b"/work\nfrom the client\ninside\n", r
    assert b"to stderr" in r.stderr, r
    # its writes are the job's, on the host, and came back with --pull
    assert open(job_file(d.home, "j1", "made.txt")).read() == "made here\n"
    assert open(os.path.join(c.work, "made.txt")).read() == "made here\n"
    if d.tree == "overlay" and os.path.isdir(
            os.path.join(d.home, "jobs", "j1", "upper")):
        # the stored tree was not written: the write went to the job's layer
        assert not os.path.exists(os.path.join(
            d.home, "trees", open(os.path.join(
                d.home, "jobs", "j1", "tree")).read().strip(), "made.txt"))
    job = d.json("ps", "-a", "--json")[0]
    assert job["state"] == "exited" and job["exit_code"] == 3, job
    assert containers(d) == []


def test_it_sees_nothing_of_the_hosts(host):
    d, c = host
    c.env["MY_SECRET_VAR"] = "client-side"
    r = c.gmux("run", "--image", d.image, "--", "sh", "-c",
               "ls /; echo ---; cat /proc/net/dev; echo ---; env; echo ---; "
               "test -e %s && echo HOME-SEEN; "
               "cat /proc/self/status | grep CapEff" % d.home)
    assert r.returncode == 0, r
    root, net, env, rest = r.stdout.decode().split("---\n")
    assert "work" in root.split() and "home" not in root.split(), root
    # no network but its own loopback
    ifaces = [ln.split(":")[0].strip() for ln in net.splitlines()[2:]]
    assert ifaces == ["lo"], net
    assert "MY_SECRET_VAR" not in env and "GMUX_SHARE=" in env, env
    assert "HOME-SEEN" not in rest
    assert "CapEff:\t0000000000000000" in rest, rest


def test_podman_runs_on_the_hosts_terms(host, tmp_path):
    """A client's CONTAINERS_CONF would give podman default volumes (here
    a host directory); podman's environment is the daemon's, so no."""
    d, c = host
    mark = tmp_path / "hostdir"
    mark.mkdir()
    (mark / "secret").write_text("the host's\n")
    conf = tmp_path / "containers.conf"
    conf.write_text('[containers]\nvolumes = ["%s:/hostdir:ro"]\n' % mark)
    probe = "cat /hostdir/secret || echo NOT-SEEN"
    # the probe works: a local job's podman takes its caller's environment
    env = dict(d.env, CONTAINERS_CONF=str(conf))
    import subprocess
    from conftest import GMUX
    r = subprocess.run([GMUX, "run", "--image", d.image, "--", "sh", "-c",
                        probe], env=env, capture_output=True, timeout=120)
    assert r.returncode == 0 and r.stdout == b"the host's\n", r
    c.env["CONTAINERS_CONF"] = str(conf)
    r = c.gmux("run", "--image", d.image, "--", "sh", "-c", probe)
    assert r.returncode == 0 and r.stdout == b"NOT-SEEN\n", r


def test_what_it_cannot_have_is_refused(host):
    d, c = host
    for bad in ("dir:/etc", "docker-archive:/tmp/x.tar", "oci-archive:x.tar",
                "-v", "localhost/../x", "/etc"):
        r = c.gmux("run", "--image", bad, "--", "true")
        assert r.returncode == 2 and b"image: '" in r.stderr, (bad, r)
    tok = d.token_for("bob")
    for bad in ("dir:/etc", "docker-archive:/tmp/x.tar", "--privileged",
                "localhost/a/../../b"):
        body = json.dumps({"argv": ["true"], "image": bad}).encode()
        code, o = https_json(d.port, "POST", "/v1/jobs", body, token=tok,
                             ctype="application/json")
        assert code == 400 and o["error"].startswith("image: '"), (bad, o)
    # a fence it cannot cover inside: refused, never run unfenced
    r = c.gmux("run", "--image", d.image, "--allow", "127.0.0.1:1", "--",
               "true")
    assert r.returncode == 2 and b"it is not run unfenced" in r.stderr, r
    assert d.json("ps", "-a", "--json") == []
    # --deny-net is what it has anyway
    r = c.gmux("run", "--image", d.image, "--deny-net", "--", "true")
    assert r.returncode == 0, r
