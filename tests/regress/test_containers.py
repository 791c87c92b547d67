"""Containerized jobs (docs/containers.md): `gmux run --image` with a real
rootless-or-rootful Podman and a scratch image built here (no registry):
the shim's memory cap inside, --deny-net from inside, refusals, and no
container left behind (stop, kill -9 of the daemon, a lost keeper).

Skips, with the reason, only where Podman cannot run a container at all
(tests/setup-deps installs podman, runc and busybox-static for CI)."""

import hashlib
import io
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tarfile
import threading

import pytest

from conftest import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GMUX", ROOT / "build" / "gmux")).parent
CUDASH = BUILD / "shim-tests" / "cudash"
BUSYBOX = "/bin/busybox"
LIBS = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]


def _image_tar():
    """A scratch image: static busybox, and cudash with the C library (the
    shim and the fake driver are mounted in by gmux at their own paths)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        def add(src, dst):
            t.add(os.path.realpath(src), arcname=dst)
        add(BUSYBOX, "bin/busybox")
        for name in ("sh", "true", "echo", "cat", "sleep", "nc", "ls",
                     "id", "env"):
            info = tarfile.TarInfo("bin/" + name)
            info.type = tarfile.SYMTYPE
            info.linkname = "busybox"
            t.addfile(info)
        for lib in LIBS:
            add(lib, lib.lstrip("/"))
        add(CUDASH, "cudash")
        for d in ("tmp", "proc", "dev", "sys"):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if d == "tmp" else 0o755
            t.addfile(info)
    return buf.getvalue()


def _podman(*args, check=True, timeout=120):
    r = subprocess.run(["podman"] + list(args), capture_output=True,
                       timeout=timeout)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


@pytest.fixture(scope="module")
def image():
    """The test image, named by its content (engineers share one store)."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (tests/setup-deps installs it)")
    for p in [BUSYBOX, CUDASH] + LIBS:
        assert os.path.exists(p), "%s is missing (setup-deps, make "\
            "shim-tests)" % p
    data = _image_tar()
    name = "localhost/gmux-test-bb:" + hashlib.sha256(data).hexdigest()[:12]
    if _podman("image", "exists", name, check=False).returncode != 0:
        r = subprocess.run(["podman", "import", "-", name], input=data,
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
    r = _podman("run", "--rm", "--runtime", "runc", "--network", "none",
                "--ulimit", "nofile=1024:1024", "--ulimit",
                "nproc=1024:1024", name, "true", check=False)
    if r.returncode != 0:
        pytest.skip("podman cannot run a container here: %s" %
                    r.stderr.decode().strip()[-200:])
    return name


def home_label(d):
    return hashlib.sha256(d.home.encode()).hexdigest()[:12]


def containers(d):
    """The names of this daemon's containers, running or not."""
    r = _podman("ps", "-a", "--filter", "label=gmux.home=" + home_label(d),
                "--format", "{{.Names}}")
    return r.stdout.decode().split()


def wait_containers(d, n, timeout=90):
    """Waits until d has n containers; a timeout says what d's jobs are
    and the end of its log (podman's errors land there)."""
    try:
        wait_for(lambda: len(containers(d)) == n, timeout=timeout,
                 what="%d containers" % n)
    except AssertionError:
        with open(os.path.join(d.home, "gmux.log")) as f:
            log = f.read()[-4000:]
        raise AssertionError("%d containers, not %d: %s\njobs: %s\nlog: %s"
                             % (len(containers(d)), n, containers(d),
                                d.gmux("ps", "-a", "--json").stdout, log))


@pytest.fixture
def cdaemon(daemon, image):
    """A daemon with the fake driver; its containers and volumes (its
    workspaces' caches) are removed after."""
    daemon.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    daemon.image = image
    yield daemon
    remove_leftovers(daemon)


def remove_leftovers(d):
    """Removes what d's containers and workspaces left in podman's store."""
    for name in containers(d):
        _podman("rm", "-f", "-t", "0", name, check=False)
    r = _podman("volume", "ls", "--format", "{{.Name}}", check=False)
    for v in r.stdout.decode().split():
        if v.startswith("gmux-%s-" % home_label(d)):
            _podman("volume", "rm", "-f", v, check=False)


def run(d, *args, check=None):
    return d.gmux("run", "--image", d.image, *args, check=check)


def test_the_command_runs_inside_with_its_share(cdaemon):
    d = cdaemon.start()
    r = run(d, "--share", "0.25", "--", "sh", "-c",
            "echo in; cat /proc/1/cmdline; echo; env", check=0)
    out = r.stdout.decode()
    assert out.startswith("in\nsh"), out    # pid 1 is the job's own shell
    assert "GMUX_SHARE=0.25" in out and "GMUX_JOB_ID=j1" in out, out
    assert d.job("j1")["state"] == "exited"
    assert containers(d) == []
    # the exit code is the command's, through podman
    assert run(d, "--", "sh", "-c", "exit 7").returncode == 7


def test_the_shims_cap_holds_inside(cdaemon):
    d = cdaemon.start()
    assert d.json("cards", "--json")[0]["enforce"]["memory"] == "shim"
    r = run(d, "--share", "0.25", "--mem", "1G", "--", "/cudash", "-c",
            "init;alloc 900M;alloc 200M;info", check=0)
    lines = r.stdout.decode().split("\n")
    assert lines[1].startswith("ok") and lines[2] == "err 2", r.stdout
    assert lines[3].endswith(" 1073741824"), r.stdout
    r = run(d, "--share", "0.25", "--mem", "4G", "--", "/cudash", "-c",
            "init;alloc 3G;info", check=0)
    assert r.stdout.decode().split("\n")[1].startswith("ok"), r.stdout


class Listener:
    """A TCP server on the host's loopback that counts its connections."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            c.close()


def test_deny_net_holds_inside(cdaemon):
    d = cdaemon.start()
    srv = Listener()
    probe = "echo x | nc 127.0.0.1 %d; echo rc=$?; cat /proc/net/dev" % \
        srv.port
    r = run(d, "--", "sh", "-c", probe, check=0)
    wait_for(lambda: srv.accepted == 1, what="the unfenced connect")
    r = run(d, "--deny-net", "--", "sh", "-c", probe, check=0)
    out = r.stdout.decode()
    assert "rc=1" in out, out
    ifaces = [x.split(":")[0].strip() for x in out.splitlines()
              if ":" in x and "|" not in x]
    assert ifaces == ["lo"], out                 # an empty network
    assert srv.accepted == 1
    assert d.job("j2")["fence"] == "deny-net", d.job("j2")


def test_bad_images_are_refused_and_leave_nothing(cdaemon):
    d = cdaemon.start()
    r = d.gmux("run", "--image", "-v", "--", "true")
    assert r.returncode == 2 and b"image: '-v'" in r.stderr, r
    r = d.gmux("run", "--image", "localhost/no such", "--", "true")
    assert r.returncode == 2 and b"image: " in r.stderr, r
    assert d.json("ps", "-a", "--json") == []
    r = d.gmux("run", "--image", "localhost/gmux-no-such-image:1", "--",
               "true")
    assert r.returncode == 125, r
    assert b"image not known" in r.stderr, r.stderr
    assert d.job("j1")["state"] == "exited"
    assert containers(d) == []


def test_a_stopped_container_job_leaves_no_container(cdaemon):
    d = cdaemon.start()
    run(d, "-d", "--grace", "0", "--", "sleep", "1000", check=0)
    wait_for(lambda: containers(d) != [], what="its container")
    d.gmux("stop", "j1", check=0)
    d.wait_state("j1", "stopped")
    assert containers(d) == []


def kill9_with_keeper(d, jid):
    """kill -9 of the daemon, and of job jid's keeper and podman run: its
    container, left running under conmon, is an orphan."""
    pid = d.job(jid)["pid"]
    keeper = int(open("/proc/%d/stat" % pid).read().rpartition(")")[2]
                 .split()[1])
    d.kill9()
    os.kill(keeper, signal.SIGKILL)
    os.kill(pid, signal.SIGKILL)


def test_kill9_of_the_daemon_loses_nothing_and_leaves_no_orphan(cdaemon):
    d = cdaemon.start()
    run(d, "-d", "--share", "0.25", "--", "sleep", "1000", check=0)
    run(d, "-d", "--share", "0.25", "--", "sleep", "1000", check=0)
    wait_containers(d, 2)
    # j1's keeper and podman go with the daemon: its container is an orphan
    kill9_with_keeper(d, "j1")
    d.start()
    assert d.wait_state("j1", "failed")
    assert d.job("j2")["state"] == "running"     # re-adopted
    assert containers(d) == ["gmux-%s-j2" % home_label(d)]
    d.gmux("stop", "j2", check=0)
    d.wait_state("j2", ("stopped", "exited"))
    wait_for(lambda: containers(d) == [], what="no container")


def test_a_job_file_names_its_container(cdaemon, tmp_path):
    d = cdaemon.start()
    f = tmp_path / "job.sh"
    f.write_text("#!/bin/sh\n#GMUX --container %s\n#GMUX --share 0.5\n"
                 "echo inside\n" % d.image)
    r = d.gmux("submit", "--wait", str(f))
    assert r.returncode == 0, r
    j = d.job("j1")
    assert j["state"] == "exited", j
    logs = d.gmux("logs", "j1", check=0).stdout.decode()
    assert logs == "inside\n", logs


def workspaces(d):
    return d.json("workspace", "ls", "--json")


def test_a_workspace_holds_its_share_until_rm(cdaemon):
    d = cdaemon.start()
    r = d.gmux("workspace", "create", "dev", "--image", d.image, "--share",
               "0.5", check=0)
    assert r.stdout.decode() == "dev j1\n", r
    ws = workspaces(d)
    assert [(w["name"], w["id"], w["state"], w["share"]) for w in ws] == \
        [("dev", "j1", "running", 0.5)], ws
    assert ws[0]["image"] == d.image and ws[0]["workspace"] is True
    table = d.gmux("workspace", "ls", check=0).stdout.decode()
    assert table.splitlines()[1].split()[:4] == ["dev", "j1", "running",
                                                 "0.50"], table
    # a second of that name is refused; its seats are held meanwhile
    r = d.gmux("workspace", "create", "dev", "--image", d.image)
    assert r.returncode == 1 and b"name: a workspace dev exists" in \
        r.stderr, r
    r = d.gmux("run", "--share", "0.6", "--no-wait", "--", "true")
    assert r.returncode != 0, r
    ctr = ws[0]["container"]
    wait_for(lambda: containers(d) == [ctr], what="its container")
    assert d.gmux("workspace", "rm", "dev", check=0).stdout == b"dev\n"
    assert workspaces(d) == []
    assert d.job("j1")["state"] == "stopped"
    assert containers(d) == []
    r = d.gmux("workspace", "rm", "dev")
    assert r.returncode == 1 and b"name: no workspace dev" in r.stderr, r


def test_a_workspace_survives_restarts_and_saves_its_image(cdaemon):
    d = cdaemon.start()
    d.gmux("workspace", "create", "keep", "--image", d.image, check=0)
    ctr = "gmux-%s-j1" % home_label(d)
    # (listed once made: exec waits for it to run)
    wait_for(lambda: _podman("exec", ctr, "sh", "-c", "echo kept > "
                             "/tmp/mark", check=False).returncode == 0,
             timeout=60, what="its container to run")
    d.stop()
    d.start()
    assert [w["name"] for w in workspaces(d)] == ["keep"]
    d.kill9()
    d.start()
    assert [w["state"] for w in workspaces(d)] == ["running"]
    saved = "localhost/gmux-test-saved:" + home_label(d)
    try:
        r = d.gmux("workspace", "save", "keep", saved, check=0)
        assert r.stdout.decode() == saved + "\n"
        r = d.gmux("run", "--image", saved, "--", "cat", "/tmp/mark",
                   check=0)
        assert r.stdout == b"kept\n", r
    finally:
        _podman("rmi", "-f", saved, check=False)
    d.gmux("workspace", "rm", "keep", check=0)
    assert containers(d) == []


def test_bad_workspaces_are_refused_and_leave_nothing(cdaemon):
    d = cdaemon.start()
    for args, field in (
            (["create", "a/b", "--image", d.image], b"name: "),
            (["create", "x"], b"image: "),
            (["create", "x", "--image", "-x"], b"image: "),
            (["create", "x", "--devcontainer", "f.json"], b"devcontainer: "),
            (["create", "x", "--template", "t"], b"template: "),
            (["save", "x", "not an image"], b"image: "),
            (["bogus"], b"create NAME")):
        r = d.gmux("workspace", *args)
        assert r.returncode == 2, (args, r)
        assert r.stderr.startswith(b"gmux workspace: " + field), (args, r)
    r = d.gmux("workspace", "create", "x", "--image",
               "localhost/gmux-no-such-image:1")
    assert r.returncode == 1, r
    assert r.stderr.startswith(b"gmux workspace: image: localhost/gmux-"
                               b"no-such-image:1 is not in this host's"), r
    assert d.json("ps", "-a", "--json") == [] and containers(d) == []


def test_doctor_and_cards_say_what_containers_get_here(cdaemon):
    d = cdaemon.start()
    ct = d.json("cards", "--json")[0]["containers"]
    assert ct["podman"] is True and ct["runtime"] in ("runc", "crun"), ct
    assert ct["network"] == ["none", "host"] and ct["why"] is None, ct
    assert ct["cgroups"] in ("v2", "hybrid", "v1")
    assert ct["rootless"] == (os.geteuid() != 0)
    if ct["cgroups"] == "hybrid":
        assert ct["runtime"] == "runc"          # crun refuses hybrid ones
    out = d.gmux("cards", check=0).stdout.decode()
    assert ("containers: podman, runtime %s, network none (--deny-net) or "
            "host (unfenced)\n" % ct["runtime"]) in out, out
    checks = json.loads(d.gmux("doctor", "--json").stdout)
    pod = [c for c in checks if c["check"] == "podman"][0]
    assert pod["status"] == "ok" and "runtime " + ct["runtime"] in \
        pod["detail"], pod


def test_a_workspace_from_a_devcontainer_json(cdaemon, tmp_path):
    d = cdaemon.start()
    f = tmp_path / "devcontainer.json"
    f.write_text('// as VS Code writes it\n{\n "name": "dev",\n'
                 ' "image": "%s", /* the scratch image */\n'
                 ' "containerEnv": {"HF_HOME": "/tmp/hf // kept"},\n'
                 ' "postCreateCommand": "echo made > /tmp/post"\n}\n'
                 % d.image)
    r = d.gmux("workspace", "create", "dc", "--devcontainer", str(f),
               "--share", "0.25")
    assert r.returncode == 0 and r.stdout == b"dc j1\n", r
    ctr = "gmux-%s-j1" % home_label(d)
    wait_for(lambda: containers(d) == [ctr], what="its container")
    out = wait_for(lambda: _podman("exec", ctr, "sh", "-c",
                                   "cat /tmp/post && echo $HF_HOME",
                                   check=False).stdout, what="post-create")
    assert out == b"made\n/tmp/hf // kept\n", out
    d.gmux("workspace", "rm", "dc", check=0)
    assert containers(d) == []
    # a variable gmux sets itself is not the file's to set
    f.write_text('{"image": "%s", "containerEnv": {"LD_PRELOAD": "/x.so"}}'
                 % d.image)
    r = d.gmux("workspace", "create", "dc2", "--devcontainer", str(f))
    assert (r.returncode, r.stderr.decode().split(" (")[0]) == (
        2, "gmux workspace: container_env.LD_PRELOAD: gmux sets it itself"), r


def test_a_devcontainer_built_from_its_dockerfile(cdaemon, tmp_path):
    d = cdaemon.start()
    (tmp_path / "Containerfile").write_text(
        "FROM %s\nRUN echo built > /tmp/built\n" % d.image)
    f = tmp_path / "devcontainer.json"
    f.write_text('{"build": {"dockerfile": "Containerfile"}}')
    name = "built" + home_label(d)
    try:
        r = d.gmux("workspace", "create", name, "--devcontainer", str(f),
                   timeout=300)
        assert r.returncode == 0, r
        ws = workspaces(d)
        assert ws[0]["image"] == "localhost/gmux-devcontainer-%s:latest" \
            % name, ws
        ctr = ws[0]["container"]
        out = wait_for(lambda: _podman("exec", ctr, "cat", "/tmp/built",
                                       check=False).stdout, timeout=60,
                       what="its container to run")
        assert out == \
            b"built\n"
        d.gmux("workspace", "rm", name, check=0)
    finally:
        _podman("rmi", "-f", "localhost/gmux-devcontainer-%s:latest" % name,
                check=False)


def test_a_bad_devcontainer_json_is_refused_naming_the_field(cdaemon,
                                                             tmp_path):
    d = cdaemon.start()
    f = tmp_path / "devcontainer.json"
    for text, want in (
            ('{"image": "x", "extensions": []}', b"extensions: unknown key"),
            ('{"image": "x",', b"line "),
            ('[]', b"must be a JSON object"),
            ('{}', b"image: one of image and build.dockerfile"),
            ('{"image": "-x"}', b"image: '-x'"),
            ('{"image": "x", "containerEnv": {"1A": "v"}}',
             b"containerEnv.1A: "),
            ('{"image": "x", "forwardPorts": [70000]}', b"forwardPorts: "),
            ('{"image": "x", "mounts": ["source=a,target=/a,consistency=c"]}',
             b"mounts[0].consistency: not one gmux takes"),
            ('{"image": "x", "mounts": ["source=${localEnv:HOME},target=/a"]}',
             b"mounts[0]: ${...} is not expanded"),
            ('{"build": {"dockerfile": "D", "target": "x"}}',
             b"build.target: unknown key"),
            ('{"image": "x", "postCreateCommand": 3}',
             b"postCreateCommand: ")):
        f.write_text(text)
        r = d.gmux("workspace", "create", "x", "--devcontainer", str(f))
        assert r.returncode == 2, (text, r)
        line = r.stderr.decode()
        assert line.startswith("gmux workspace: devcontainer: %s: " % f), \
            (text, line)
        assert want.decode() in line and line.count("\n") == 1, (text, line)
    assert d.json("ps", "-a", "--json") == [] and containers(d) == []
