"""Remote workspaces, the laptop case (docs/containers.md, "A remote
workspace"): over loopback TLS with a token, `gmux workspace create` makes
a confined container job of the token's owner (its synced tree at /work,
no network, no host home), `workspace ls/rm` act on the owner's own only,
`gmux shell NAME` is a terminal inside it that survives a kill -9 of its
client (driven through a real tmux on the client's side), and `gmux port
NAME PORT LOCAL` reaches a busybox httpd in the container's own network
through the daemon.  Another token's owner finds none of it."""

import json
import os
import re
import signal
import socket
import subprocess
import urllib.request

import pytest

from conftest import free_port, wait_for
from remotelib import https, https_json
from test_containers import (BUILD, _podman, containers, image,  # noqa: F401
                             remove_leftovers)
from test_remote_host import lock_free
from test_container_accounts import account, leftovers, names  # noqa
from test_shell import terms  # noqa: F401
from test_tenants import host as tenant_host  # noqa: F401
from test_tenants import idle, needs_root, no_accounts_left  # noqa: F401
from test_workspace_shell import inside

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/tmux"),
                                reason="tmux is not installed")


@pytest.fixture
def host(make_daemon, make_client, image):  # noqa: F811
    """A host over loopback TLS, and clients of alice's and bob's."""
    d = make_daemon()
    d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    d.serve_tls()
    d.image = image
    cs = []
    for owner in ("alice", "bob"):
        line = d.gmux("token", "add", owner,
                      check=0).stdout.decode().split()[-1]
        c = make_client()
        assert c.add("gpu1", line).returncode == 0
        cs.append(c)
    try:
        yield d, cs[0], cs[1]
    finally:
        remove_leftovers(d)


def create(d, c, name, *flags):
    """alice's workspace name, made over TLS, once its container runs."""
    r = c.gmux("workspace", "create", name, "--image", d.image, *flags,
               timeout=120)
    assert r.returncode == 0, r
    jid = r.stdout.decode().split()[1].split(":")[1]
    assert r.stdout.decode() == "%s gpu1:%s\n" % (name, jid), r
    ws = d.wait_state(jid, "running", timeout=90)
    wait_for(lambda: _podman("exec", ws["container"], "true",
                             check=False).returncode == 0, timeout=90,
             what="its container to run")
    return ws


def create_as_account(d, c, name, image, owner="alice"):  # noqa: F811
    """The owner's workspace name (made over TLS by client c) once its
    container is in the owner's account's store, and the account."""
    r = c.gmux("workspace", "create", name, "--image", image, timeout=120)
    assert r.returncode == 0, r
    jid = r.stdout.decode().split()[1].split(":")[1]
    ws = d.wait_state(jid, "running", timeout=90)
    pw = account(owner)
    wait_for(lambda: names(owner, d) == [ws["container"]], 90,
             what="%s's container in her store" % owner)
    return ws, pw


def inspect(ctr):
    return json.loads(_podman("inspect", ctr).stdout)[0]


def test_a_remote_workspace_is_its_owners_confined_container(host):
    d, alice, bob = host
    with open(os.path.join(alice.work, "mine.txt"), "w") as f:
        f.write("from the laptop\n")
    ws = create(d, alice, "dev", "--share", "0.5", "--publish", "8888")
    assert (ws["owner"], ws["confined"], ws["workspace"], ws["name"],
            ws["share"], ws["publish"]) == ("alice", True, True, "dev", 0.5,
                                            [8888]), ws
    # its owner's listing over TCP, as a table and as JSON
    [w] = alice.json("workspace", "ls", "--json")
    assert (w["id"], w["name"], w["state"]) == (ws["id"], "dev", "running")
    out = alice.gmux("workspace", "ls").stdout.decode()
    assert re.search(r"(?m)^dev +%s +running +0\.50 " % ws["id"], out), out
    # confined: its tree at /work, no network, no host home, no capability
    ctr = ws["container"]
    r = _podman("exec", ctr, "sh", "-c", "pwd; cat mine.txt; "
                "cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' '; "
                "grep CapEff /proc/self/status; ls -A %s; "
                "test -e %s && echo HOME-SEEN; echo end" % (
                    d.home, os.path.expanduser("~")))
    # (of $GMUX_HOME only its share's region: no tokens, no key)
    assert r.stdout.decode() == ("/work\nfrom the laptop\nlo\n"
                                 "CapEff:\t0000000000000000\nshim.region\n"
                                 "end\n"), r
    binds = [m["Source"] for m in inspect(ctr)["Mounts"]
             if m["Type"] == "bind"]
    assert not [b for b in binds if b == os.environ.get("HOME", "/root")
                or d.home.startswith(b + "/") or b == d.home], binds
    assert inspect(ctr)["HostConfig"]["NetworkMode"] == "none"
    # bob sees none of it, and cannot remove it
    assert bob.json("workspace", "ls", "--json") == []
    r = bob.gmux("workspace", "rm", "dev")
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux workspace: name: no workspace dev\n")
    code, o = https_json(d.port, "POST", "/v1/jobs/%s/stop" % ws["id"],
                         b"{}", token=d.token_for("bob"),
                         ctype="application/json")
    assert (code, o) == (404, {"error": "no job %s" % ws["id"]})
    # his own of the same name is his, beside hers
    assert bob.gmux("workspace", "create", "dev", "--image", d.image,
                    timeout=120).returncode == 0
    assert [w["owner"] for w in d.json("workspace", "ls", "--json")] == \
        ["alice", "bob"]
    assert alice.gmux("workspace", "rm", "dev").stdout == b"dev\n"
    assert d.wait_state(ws["id"], "stopped", timeout=90)
    assert [w["owner"] for w in d.json("workspace", "ls", "--json")] == \
        ["bob"]
    assert bob.gmux("workspace", "rm", "dev").returncode == 0
    wait_for(lambda: containers(d) == [], timeout=90, what="no container")


def test_what_a_remote_workspace_cannot_have_is_refused(host):
    d, alice, _ = host
    tok = d.token_for("alice")
    for body, want in (
            ({"argv": ["/bin/sh"], "image": d.image, "workspace": True,
              "name": "w", "mounts": [{"type": "bind", "source": "/etc",
                                       "target": "/x"}]},
             "mounts[0].source: a remote workspace binds no path of the "
             "host's (a volume is its own)"),
            ({"argv": ["--privileged", "sh"], "terminal": True,
              "in_workspace": "w"},
             "argv: a shell in a workspace runs a command (not an "
             "option) inside")):
        code, o = https_json(d.port, "POST", "/v1/jobs",
                             json.dumps(body).encode(), token=tok,
                             ctype="application/json")
        assert (code, o) == (400, {"error": want}), body
    assert d.json("ps", "-a", "--json") == []


def test_from_a_devcontainer_json(host):
    """A devcontainer.json's image, forwardPorts and containerEnv go to the
    remote workspace as they do to a local one: the values by an env file
    of the job's (0600, gone with it), never through podman's own
    environment; a value an env file cannot hold and a name gmux sets
    itself are refused naming the field."""
    d, alice, _ = host
    port = free_port()
    path = os.path.join(alice.work, "devcontainer.json")
    dev = {"image": d.image, "forwardPorts": [port]}
    for env, want in (
            ({"A": "x", "B": "one\nC=smuggled"}, "container_env.B: its "
             "value holds a line break (an env file has one variable a "
             "line)"),
            ({"B": "x\r"}, "container_env.B: its value holds a line break"),
            ({"LD_PRELOAD": "/tmp/evil.so"}, "container_env.LD_PRELOAD: "
             "gmux sets it itself"),
            ({"GMUX_REGION": "/x"}, "container_env.GMUX_REGION: gmux sets "
             "it itself"),
            ({"CUDA_MPS_PIPE_DIRECTORY": "/x"}, "container_env."
             "CUDA_MPS_PIPE_DIRECTORY: gmux sets it itself")):
        with open(path, "w") as f:
            json.dump(dict(dev, containerEnv=env), f)
        r = alice.gmux("workspace", "create", "dev", "--devcontainer", path,
                       timeout=120)
        err = r.stderr.decode()
        assert r.returncode == 2 and err.startswith(
            "gmux workspace: gpu1: " + want) and err.count("\n") == 1, r
    assert d.json("ps", "-a", "--json") == []
    # a raw request's: a name without a value, values too big
    big = ["V%d=%s" % (i, "x" * 60000) for i in range(20)]
    for names, env, want in (
            (["NOPE"], [], "container_env.NOPE: has no value in env"),
            (["BIG"], ["BIG=" + "x" * (64 * 1024 + 1)],
             "container_env.BIG: its value is over 64 KiB"),
            (["V%d" % i for i in range(20)], big,
             "container_env: the values are over 1 MiB in all")):
        code, o = https_json(d.port, "POST", "/v1/jobs", json.dumps(
            {"argv": ["/bin/sh"], "image": d.image, "workspace": True,
             "name": "w", "container_env": names, "env": env}).encode(),
            token=d.token_for("alice"), ctype="application/json")
        assert (code, o) == (400, {"error": want}), names
    val = " spaced = and # not a comment 'quoted' \"x\" $HOME \\n"
    with open(path, "w") as f:
        json.dump(dict(dev, containerEnv={"GREETING": "hello world",
                                          "ODD": val, "EMPTY": ""}), f)
    r = alice.gmux("workspace", "create", "dev", "--devcontainer", path,
                   timeout=120)
    assert r.returncode == 0, r
    jid = r.stdout.decode().split()[1].split(":")[1]
    ws = d.wait_state(jid, "running", timeout=90)
    assert (ws["confined"], ws["publish"]) == (True, [port]), ws
    envf = os.path.join(d.home, "jobs", jid, "container.env")
    st = os.stat(envf)
    assert (oct(st.st_mode & 0o777), st.st_uid) == ("0o600", os.getuid())
    wait_for(lambda: _podman("exec", ws["container"], "true",
                             check=False).returncode == 0, timeout=90,
             what="its container to run")
    # the values, each exactly, inside (as its shell sees them)
    out = _podman("exec", ws["container"], "env").stdout.decode()
    env = dict(line.split("=", 1) for line in out.splitlines()
               if "=" in line)
    assert (env.get("GREETING"), env.get("ODD"), env.get("EMPTY")) == (
        "hello world", val, ""), out
    assert "C" not in env and env["GMUX_JOB_ID"] == jid, out
    # podman's own argv names the file, never a value
    args = inspect(ws["container"])["Config"].get("CreateCommand") or []
    assert "--env-file" in args and not [a for a in args
                                         if "hello world" in a], args
    assert alice.gmux("workspace", "rm", "dev").returncode == 0
    d.wait_state(jid, "stopped", timeout=90)
    assert not os.path.exists(envf)
    wait_for(lambda: containers(d) == [], timeout=90, what="no container")


def test_a_remote_shell_in_it_survives_its_client(host, terms):  # noqa
    d, alice, bob = host
    ws = create(d, alice, "dev")
    t = terms(alice.env, "shell", "dev")
    inside(t)
    t.keys("clear; echo in-$((6*7)) $(pwd) $GMUX_JOB_ID "
           "$(grep CapEff /proc/self/status)", "Enter")
    # the workspace's container: its tree, its job, no capability
    t.wait(r"(?m)^in-42 /work %s CapEff: 0000000000000000\s*$" % ws["id"],
           timeout=90)
    [sh] = [j for j in d.json("ps", "--json") if j.get("in_workspace")]
    assert (sh["owner"], sh["confined"], sh["in_workspace"]) == (
        "alice", True, "dev"), sh
    # its tmux runs no command of the user's on the host: no prompt
    t.keys("C-b", ":")
    t.keys("new-window", "Enter")
    t.wait(r"new-window: not found", timeout=90)
    sock = os.path.join(d.home, "jobs", sh["id"], "term", "tmux.sock")
    r = subprocess.run(["tmux", "-S", sock, "list-windows"],
                       capture_output=True, timeout=10)
    assert len(r.stdout.decode().splitlines()) == 1, r
    t.keys("clear; echo marker-$((1+1)); i=0; while :; do i=$((i+1)); "
           "printf 'tick-%d\\r' $i; sleep 0.1; done", "Enter")
    seen = int(t.wait(r"tick-(\d+)", timeout=90).group(1))
    os.kill(t.client_pid(), signal.SIGKILL)
    t.wait(r"CLIENT-EXIT=137", timeout=90)
    assert d.job(sh["id"])["state"] == "running"
    # bob finds neither the workspace nor its shell
    r = bob.gmux("shell", "dev")
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux shell: in_workspace: no workspace dev\n")
    for j in (ws["id"], sh["id"]):
        r = bob.gmux("shell", j)
        assert (r.returncode, r.stderr.decode()) == (
            1, "gmux shell: no job %s\n" % j)
    # alice again: the same session, the screen as it was, the loop on
    t2 = terms(alice.env, "shell", "dev")
    t2.wait(r"(?m)^marker-2\s*$", timeout=90)
    wait_for(lambda: int(t2.wait(r"tick-(\d+)", timeout=90).group(1)) >
             seen + 5, timeout=90, what="the loop to go on")
    assert [j["id"] for j in d.json("ps", "--json")
            if j.get("in_workspace")] == [sh["id"]]
    assert alice.gmux("workspace", "rm", "dev").returncode == 0
    t2.wait(r"CLIENT-EXIT=\d+", timeout=90)
    d.wait_state(sh["id"], ("stopped", "exited"), timeout=90)
    wait_for(lambda: containers(d) == [], timeout=90, what="no container")


def through_port(c, word, port, local, path="hello.txt"):
    """What gmux port WORD PORT LOCAL (run by client c) fetches of path
    over HTTP, once it listens."""
    p = c.popen("port", word, str(port), str(local), stderr=subprocess.PIPE)
    try:
        line = p.stderr.readline().decode()
        assert line.startswith("gmux: 127.0.0.1:%d -> " % local), line
        return fetch(local, path)
    finally:
        p.terminate()
        p.wait()


def fetch(local, path):
    with urllib.request.urlopen("http://127.0.0.1:%d/%s" % (local, path),
                                timeout=10) as f:
        return f.read()


def test_a_port_of_it_is_forwarded_to_the_laptop(host):
    d, alice, bob = host
    port, idle, local = free_port(), free_port(), free_port()
    while idle in (port, local):
        idle = free_port()
    with open(os.path.join(alice.work, "hello.txt"), "w") as f:
        f.write("hello from the workspace\n")
    ws = create(d, alice, "web", "--publish", str(port), "--publish",
                str(idle))
    _podman("exec", "-d", ws["container"], "busybox", "httpd", "-f", "-p",
            "127.0.0.1:%d" % port, "-h", "/work")
    wait_for(lambda: listening(ws["container"], port), timeout=90,
             what="httpd to listen in the container")
    # the port is the container's alone: not on the host's loopback
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    p = alice.popen("port", "web", str(port), str(local),
                    stderr=subprocess.PIPE)
    try:
        line = p.stderr.readline().decode()
        assert line == "gmux: 127.0.0.1:%d -> %s:%d\n" % (local, ws["id"],
                                                         port), line
        assert fetch(local, "hello.txt") == b"hello from the workspace\n"
        assert fetch(local, "hello.txt") == b"hello from the workspace\n"
    finally:
        p.terminate()
        p.wait()
    # bob's names are his own, and her job is none of his
    r = bob.gmux("port", "web", str(port), str(free_port()))
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux port: no workspace web\n")
    r = bob.gmux("port", ws["id"], str(port), str(free_port()))
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux port: no job %s\n" % ws["id"])
    # nothing listens on its other published port: a clear error
    code, _, o = https(d.port, "GET", "/v1/jobs/%s/port?port=%d" % (
        ws["id"], idle), token=d.token_for("alice"),
        headers={"Upgrade": "gmux-port/1"})
    assert (code, json.loads(o)) == (502, {
        "error": "%s's port %d: Connection refused" % (ws["id"], idle)})
    assert alice.gmux("workspace", "rm", "web").returncode == 0
    wait_for(lambda: containers(d) == [], timeout=90, what="no container")


def listening(ctr, port):
    """Whether a server listens on port in container ctr's network."""
    return _podman("exec", ctr, "sh", "-c", "grep -qi ':%04X 00000000:0000 "
                   "0A' /proc/net/tcp" % port, check=False).returncode == 0


def test_it_outlives_a_daemon_kill9(host):
    """The workspace, its server and its forwarded port go on after the
    daemon's kill -9: the restarted daemon finds its container again."""
    d, alice, _ = host
    port, local = free_port(), free_port()
    with open(os.path.join(alice.work, "hello.txt"), "w") as f:
        f.write("still here\n")
    ws = create(d, alice, "keep", "--publish", str(port))
    _podman("exec", "-d", ws["container"], "busybox", "httpd", "-f", "-p",
            "127.0.0.1:%d" % port, "-h", "/work")
    wait_for(lambda: listening(ws["container"], port), timeout=90,
             what="httpd to listen")
    d.kill9()
    # (a thread of its may hold its lock a moment after: test_remote_host)
    wait_for(lambda: lock_free(d.home), 10, what="the old daemon's lock")
    d.start(addr="127.0.0.1:%d" % d.port)
    d.wait_state(ws["id"], "running", timeout=90)
    assert through_port(alice, "keep", port, local) == b"still here\n"
    assert [w["name"] for w in alice.json("workspace", "ls", "--json")] == \
        ["keep"]
    assert alice.gmux("workspace", "rm", "keep").returncode == 0
    wait_for(lambda: containers(d) == [], timeout=90, what="no container")


@needs_root
def test_as_its_owners_account(tenant_host, make_client, image,  # noqa
                               terms, leftovers, tmp_path):
    """With tenant accounts: the workspace, its shell, its port and its
    devcontainer's env file are the owner's account's (its own podman
    store, its home mounted)."""
    d = tenant_host(start=False)
    d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    # the daemon's own runtime directory, which her podman must not take
    d.env["XDG_RUNTIME_DIR"] = str(tmp_path)
    d.serve_tls()
    d.image = image
    line = d.gmux("token", "add", "alice", check=0).stdout.decode().split()
    alice = make_client()
    assert alice.add("gpu1", line[-1]).returncode == 0
    port, local = free_port(), free_port()
    with open(os.path.join(alice.work, "hello.txt"), "w") as f:
        f.write("hello from the account\n")
    dev = os.path.join(alice.work, "devcontainer.json")
    with open(dev, "w") as f:
        json.dump({"image": image, "forwardPorts": [port],
                   "containerEnv": {"GREETING": "hi from her env"}}, f)
    r = alice.gmux("workspace", "create", "dev", "--devcontainer", dev,
                   timeout=120)
    assert r.returncode == 0, r
    jid = r.stdout.decode().split()[1].split(":")[1]
    ws = d.wait_state(jid, "running", timeout=90)
    pw = account("alice")
    # her podman reads the values from a file of hers, 0600
    envf = os.path.join(d.home, "jobs", jid, "container.env")
    st = os.stat(envf)
    assert (oct(st.st_mode & 0o777), st.st_uid) == ("0o600", pw.pw_uid)
    wait_for(lambda: names("alice", d) == [ws["container"]], 90,
             what="alice's container in her store")
    t = terms(alice.env, "shell", "dev")
    inside(t)
    t.keys("clear; echo in-$((6*7)) $(cat /proc/self/uid_map) "
           "$(test -d %s && echo HOME) $GREETING" % pw.pw_dir, "Enter")
    # root inside is her account outside (then her subordinate IDs), and
    # her home is mounted: it is her own
    t.wait(r"(?m)^in-42 0 %d 1 1 \d+ 65536 HOME hi from her env\s*$"
           % pw.pw_uid, timeout=90)
    t.keys("busybox httpd -f -p 127.0.0.1:%d -h /work" % port, "Enter")
    p = alice.popen("port", "dev", str(port), str(local),
                    stderr=subprocess.PIPE)
    try:
        p.stderr.readline()
        assert wait_for(lambda: _fetch_or_none(local, "hello.txt"), 90,
                        step=0.2, what="httpd through the port") == \
            b"hello from the account\n"
    finally:
        p.terminate()
        p.wait()
    assert alice.gmux("workspace", "rm", "dev").returncode == 0
    t.wait(r"CLIENT-EXIT=\d+", timeout=90)
    wait_for(lambda: [j for j in d.json("ps", "-a", "--json")
                      if j["id"] == jid and j["ended"] is not None], 90,
             what="the workspace's job to end")
    assert not os.path.exists(envf)
    # what the daemon ends after her last job (podman's pause process,
    # a podman of the test's as her too): then her store has no container
    idle(pw.pw_uid)
    assert names("alice", d) == []


def _fetch_or_none(local, path):
    try:
        return fetch(local, path)
    except OSError:
        return None
