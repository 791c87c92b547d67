"""A devcontainer's build from a laptop (docs/containers.md, "A
devcontainer's build from a remote"): over loopback TLS with a token, the
directory `create` runs in is synced as a job's tree, the host builds the
Dockerfile in it (podman build --pull=never --network=none, off its loop,
as the owner's podman), named and labelled as the token's owner's, and the
workspace starts from that image.  A failing build exits non-zero with
podman's line and the build's output; a path out of the tree is refused
naming the field; another owner does not see the image."""

import functools
import http.server
import json
import os
import socket
import threading

import pytest

from conftest import wait_for
from remotelib import client_context, https_json
from test_containers import (BUILD, _podman, containers, home_label,  # noqa
                             image)
from test_container_accounts import account, leftovers, names  # noqa
from test_container_accounts import podman_as
from test_remote_host import lock_free
from test_remote_workspace import create_as_account, host  # noqa: F401
from test_tenants import host as tenant_host  # noqa: F401
from test_tenants import idle, needs_root, no_accounts_left  # noqa: F401


def devcontainer(work, build, dockerfile):
    """alice's .devcontainer/ with its Containerfile; the file's path."""
    os.makedirs(os.path.join(work, ".devcontainer"), exist_ok=True)
    with open(os.path.join(work, ".devcontainer", "Containerfile"),
              "w") as f:
        f.write(dockerfile)
    path = os.path.join(work, ".devcontainer", "devcontainer.json")
    with open(path, "w") as f:
        json.dump({"build": build}, f)
    return path


def test_a_remote_devcontainer_is_built_on_the_host(host):  # noqa: F811
    d, alice, bob = host
    name = "b" + home_label(d)
    built = "localhost/alice/gmux-devcontainer-%s:latest" % name
    with open(os.path.join(alice.work, "hello.txt"), "w") as f:
        f.write("from the laptop's tree\n")
    path = devcontainer(alice.work, {"dockerfile": "Containerfile",
                                     "context": ".."},
                        "FROM %s\nCOPY hello.txt /hello\n"
                        "RUN echo built-on-the-host > /built\n"
                        "RUN --mount=type=cache,target=/c,id=k echo %s "
                        "> /c/s\nLABEL gmux.owner=bob\n" % (d.image, name))
    try:
        r = alice.gmux("workspace", "create", name, "--devcontainer", path,
                       timeout=300)
        assert r.returncode == 0, r
        # the build's output is shown
        assert "RUN echo built-on-the-host" in r.stderr.decode(), r
        jid = r.stdout.decode().split()[1].split(":")[1]
        ws = d.wait_state(jid, "running", timeout=90)
        out = wait_for(lambda: _podman("exec", ws["container"], "cat",
                                       "/built", "/hello",
                                       check=False).stdout, timeout=90,
                       what="its container to run")
        assert out == b"built-on-the-host\nfrom the laptop's tree\n", out
        # (the file's own LABEL cannot make it another owner's)
        labels = json.loads(_podman("image", "inspect", built).stdout)[0][
            "Labels"]
        assert labels.get("gmux.owner") == "alice", labels
        # hers, listed for her only
        assert built in [i["image"] for i in alice.json(
            "workspace", "images", "--json")]
        assert built not in [i["image"] for i in bob.json(
            "workspace", "images", "--json")]
        # his build of the same cache id gets none of hers (each build
        # has its own TMPDIR, where buildah keeps it)
        bobs = "localhost/bob/gmux-devcontainer-%s:latest" % name
        devcontainer(bob.work, {"dockerfile": "Containerfile"},
                     "FROM %s\nRUN --mount=type=cache,target=/c,id=k "
                     "test ! -e /c/s\n" % d.image)
        mdigest = bob.gmux("sync", "gpu1", check=0).stdout.decode().strip()
        try:
            code, o = https_json(d.port, "POST", "/v1/builds", json.dumps(
                {"manifest": mdigest, "name": name, "dockerfile":
                 ".devcontainer/Containerfile"}).encode(),
                token=d.token_for("bob"), ctype="application/json")
        finally:
            _podman("rmi", "-f", bobs, check=False)
        assert (code, o.get("image")) == (200, bobs), o
        # the build's tree is gone once it is answered
        wait_for(lambda: os.listdir(os.path.join(d.home, "builds")) == [],
                 timeout=60, what="the build's tree to go")
        assert alice.gmux("workspace", "rm", name).returncode == 0
        wait_for(lambda: containers(d) == [], timeout=90,
                 what="no container")
    finally:
        _podman("rmi", "-f", built, check=False)


def failed_build(d, c, name, dockerfile):
    """The last line of gmux workspace create's stderr for a build of
    dockerfile that must fail (exit 1, no job made), and all of it."""
    path = devcontainer(c.work, {"dockerfile": "Containerfile"}, dockerfile)
    try:
        r = c.gmux("workspace", "create", name, "--devcontainer", path,
                   timeout=300)
    finally:
        _podman("rmi", "-f", "localhost/alice/gmux-devcontainer-%s:latest"
                % name, check=False)
    assert r.returncode == 1 and d.json("ps", "-a", "--json") == [], r
    return r.stderr.decode().splitlines()[-1], r.stderr.decode()


def test_a_failing_remote_build_says_why(host):  # noqa: F811
    d, alice, _ = host
    name = "f" + home_label(d)
    last, err = failed_build(d, alice, name, "FROM %s\nRUN echo "
                             "about-to-fail; exit 3\n" % d.image)
    # its output, then podman's reason in one line
    assert "about-to-fail" in err, err
    assert last.startswith("gmux workspace: gpu1: build.dockerfile: "
                           "podman build failed (") and \
        "exit status 3" in last, err
    # an ADD's URL is fetched by podman itself, outside RUN's network:
    # it reaches no loopback service of the host's
    with open(os.path.join(alice.work, "hello.txt"), "w") as f:
        f.write("a secret of the host's loopback\n")
    srv = http.server.HTTPServer(("127.0.0.1", 0), functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=alice.work))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        last, err = failed_build(d, alice, name, "FROM %s\nADD "
                                 "http://127.0.0.1:%d/hello.txt /stolen\n"
                                 % (d.image, srv.server_port))
    finally:
        srv.shutdown()
        srv.server_close()
    assert "network is unreachable" in last, err
    # FROM an image the host lacks: never pulled
    last, err = failed_build(d, alice, name, "FROM localhost/no-such-"
                             "image-%s\n" % name)
    assert "podman build failed" in last, err


def test_a_remote_build_stays_in_the_tree_sent(host, tmp_path):  # noqa
    d, alice, _ = host
    name = "e" + home_label(d)
    # the client's own check: the file is outside the directory sent
    (tmp_path / "Containerfile").write_text("FROM %s\n" % d.image)
    path = devcontainer(alice.work, {"dockerfile": str(tmp_path /
                                                       "Containerfile")},
                        "FROM %s\n" % d.image)
    r = alice.gmux("workspace", "create", name, "--devcontainer", path,
                   timeout=300)
    assert r.returncode == 2 and "build.dockerfile: " in r.stderr.decode() \
        and "is outside the directory sent" in r.stderr.decode(), r
    # the host's: a raw request's paths, before anything is made
    tok = d.token_for("alice")
    for body, want in (
            ({"dockerfile": "../../etc/passwd"}, "build.dockerfile: must "
             "not climb out of the directory sent (..)"),
            ({"dockerfile": "a/../../x"}, "build.dockerfile: must not "
             "climb out of the directory sent (..)"),
            ({"dockerfile": "/etc/passwd"}, "build.dockerfile: must be "
             "relative to the directory sent, not absolute"),
            ({"dockerfile": "D", "context": "/"}, "build.context: must be "
             "relative to the directory sent, not absolute"),
            ({"dockerfile": "D", "context": ".."}, "build.context: must "
             "not climb out of the directory sent (..)"),
            ({"dockerfile": "D", "tag": "x"}, "tag: unknown key "
             "(manifest, name, dockerfile, context)"),
            ({"dockerfile": "D", "name": "j3"}, "name: j3 reads as a job "
             "id (gmux shell takes either)")):
        req = dict({"manifest": "0" * 64, "name": name}, **body)
        code, o = https_json(d.port, "POST", "/v1/builds",
                             json.dumps(req).encode(), token=tok,
                             ctype="application/json")
        assert (code, o) == (400, {"error": want}), body
    assert not os.path.exists(os.path.join(d.home, "builds")) or \
        os.listdir(os.path.join(d.home, "builds")) == []
    # paths that check only once the tree is there, resolved
    with open(os.path.join(alice.work, "hello.txt"), "w") as f:
        f.write("a file\n")
    mdigest = alice.gmux("sync", "gpu1", check=0).stdout.decode().strip()
    for body, code, want in (
            ({"dockerfile": "nope"}, 400, "build.dockerfile: is not in the "
             "directory sent"),
            ({"dockerfile": ".devcontainer"}, 400, "build.dockerfile: is not "
             "a file"),
            ({"dockerfile": "hello.txt", "context": "hello.txt"}, 400,
             "build.context: is not a directory"),
            ({"dockerfile": "D", "manifest": "1" * 64}, 412, None)):
        req = dict({"manifest": mdigest, "name": name}, **body)
        code_, o = https_json(d.port, "POST", "/v1/builds",
                              json.dumps(req).encode(), token=tok,
                              ctype="application/json")
        assert code_ == code and (want is None or o == {"error": want}), \
            (body, o)
    wait_for(lambda: os.listdir(os.path.join(d.home, "builds")) == [],
             timeout=60, what="the refused builds' trees to go")


def test_a_client_gone_mid_build(host):  # noqa: F811
    """The build goes on without its client: its image is kept, its
    answer dropped, its tree removed, and the daemon serves on."""
    d, alice, _ = host
    name = "g" + home_label(d)
    built = "localhost/alice/gmux-devcontainer-%s:latest" % name
    devcontainer(alice.work, {"dockerfile": "Containerfile"},
                 "FROM %s\nRUN sleep 2\n" % d.image)
    mdigest = alice.gmux("sync", "gpu1", check=0).stdout.decode().strip()
    try:
        body = json.dumps({"manifest": mdigest, "name": name,
                           "dockerfile": ".devcontainer/Containerfile",
                           "context": "."}).encode()
        with socket.create_connection(("127.0.0.1", d.port),
                                      timeout=10) as s:
            with client_context().wrap_socket(s) as t:
                t.sendall(b"POST /v1/builds HTTP/1.1\r\nHost: x\r\n"
                          b"Authorization: Bearer %s\r\nContent-Type: "
                          b"application/json\r\nContent-Length: %d\r\n"
                          b"\r\n%s" % (d.token_for("alice").encode(),
                                        len(body), body))
                t.settimeout(0.5)
                with pytest.raises(socket.timeout):
                    t.recv(1)                      # no answer yet: gone
        wait_for(lambda: _podman("image", "exists", built,
                                 check=False).returncode == 0, timeout=120,
                 what="the build to end")
        wait_for(lambda: os.listdir(os.path.join(d.home, "builds")) == [],
                 timeout=60, what="its tree to go")
        assert d.json("ps", "-a", "--json") == []
    finally:
        _podman("rmi", "-f", built, check=False)


def post_build(d, token, body):
    """A TLS connection with POST /v1/builds body sent, its answer not
    read (the caller closes it)."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    t = client_context().wrap_socket(s)
    t.sendall(b"POST /v1/builds HTTP/1.1\r\nHost: x\r\nAuthorization: "
              b"Bearer %s\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (token.encode(),
                                                  len(data), data))
    return t


def building(under):
    """Whether a process runs with a path under `under` in its argv."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if under.encode() in f.read():
                    return True
        except OSError:
            pass
    return False


def test_builds_at_once_and_a_daemon_kill9(host):  # noqa: F811
    """Two builds at once of one owner, four of all: more are refused
    (503); a daemon killed mid-build leaves its builds' trees, which the
    next start removes."""
    d, alice, bob = host
    devcontainer(alice.work, {"dockerfile": "Containerfile"},
                 "FROM %s\nRUN sleep 3\n" % d.image)
    mdigest = alice.gmux("sync", "gpu1", check=0).stdout.decode().strip()
    toks = {o: d.token_for(o) for o in ("alice", "bob", "carol")}
    tag = home_label(d)
    images = []
    conns = []

    def body(owner, i):
        images.append("localhost/%s/gmux-devcontainer-k%d%s:latest" % (
            owner, i, tag))
        return json.dumps({"manifest": mdigest, "name": "k%d%s" % (i, tag),
                           "dockerfile": ".devcontainer/Containerfile"})

    def refused(owner, i):
        return https_json(d.port, "POST", "/v1/builds", body(
            owner, i).encode(), token=toks[owner], ctype="application/json")

    try:
        for owner, i in (("alice", 0), ("alice", 1), ("bob", 2)):
            conns.append(post_build(d, toks[owner], json.loads(body(
                owner, i))))
        builds = os.path.join(d.home, "builds")
        wait_for(lambda: os.path.isdir(builds) and
                 len(os.listdir(builds)) == 3, timeout=60,
                 what="three builds under way")
        assert refused("alice", 3) == (503, {
            "error": "build: alice has 2 builds under way (2 at most at "
            "once); try again later"})
        conns.append(post_build(d, toks["bob"], json.loads(body("bob", 4))))
        wait_for(lambda: len(os.listdir(builds)) == 4, timeout=60,
                 what="four builds under way")
        assert refused("carol", 5) == (503, {
            "error": "build: 4 builds run at once here; try again later"})
        d.kill9()
        assert len(os.listdir(builds)) == 4
        wait_for(lambda: lock_free(d.home), 10, what="the old lock")
        d.start(addr="127.0.0.1:%d" % d.port)
        wait_for(lambda: os.listdir(builds) == [], timeout=60,
                 what="the dead daemon's builds to go")
        # (their podman builds end too: their output has no reader)
        wait_for(lambda: not building(builds), timeout=120,
                 what="no podman build of the dead daemon's")
    finally:
        for c in conns:
            c.close()
        for i in images:
            _podman("rmi", "-f", i, check=False)


@needs_root
def test_a_remote_build_as_the_owners_account(  # noqa: F811
        tenant_host, make_client, image, leftovers):
    """With tenant accounts: built by her account's podman, in her store
    only (its FROM one her workspace had loaded there); bob's account
    sees none of it."""
    d = tenant_host(start=False)
    d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    d.serve_tls()
    cs = []
    for owner in ("alice", "bob"):
        line = d.gmux("token", "add", owner, check=0).stdout.decode().split()
        c = make_client()
        assert c.add("gpu1", line[-1]).returncode == 0
        cs.append(c)
    alice, bob = cs
    # her first workspace loads the base image into her store
    _, pw = create_as_account(d, alice, "base", image)
    name = "a" + home_label(d)
    built = "localhost/alice/gmux-devcontainer-%s:latest" % name
    # (a remote workspace's image went by its ID: so it is in her store)
    iid = _podman("image", "inspect", "--format", "{{.Id}}",
                  image).stdout.decode().strip()
    path = devcontainer(alice.work, {"dockerfile": "Containerfile"},
                        "FROM %s\nRUN id -u > /uid\n" % iid)
    r = alice.gmux("workspace", "create", name, "--devcontainer", path,
                   timeout=300)
    assert r.returncode == 0, r
    jid2 = r.stdout.decode().split()[1].split(":")[1]
    d.wait_state(jid2, "running", timeout=90)
    assert podman_as(pw, "image", "exists", built).returncode == 0
    assert _podman("image", "exists", built, check=False).returncode != 0
    assert built in [i["image"] for i in alice.json(
        "workspace", "images", "--json")]
    # (his account is made on his first request)
    r = wait_for(lambda: (lambda r: r if r.returncode == 0 else None)(
        bob.gmux("workspace", "images", "--json")), 90,
        what="bob's account and listing")
    assert json.loads(r.stdout) == [], r
    pb = account("bob")
    assert podman_as(pb, "image", "exists", built).returncode != 0
    for w in ("base", name):
        assert alice.gmux("workspace", "rm", w).returncode == 0
    wait_for(lambda: [j for j in d.json("ps", "-a", "--json")
                      if j["ended"] is None] == [], 90,
             what="the workspaces' jobs to end")
    idle(pw.pw_uid)
    assert names("alice", d) == []
