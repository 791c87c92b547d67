"""gmux shell WORKSPACE (docs/containers.md, "A shell in a workspace"): a
terminal inside the workspace's container, its tmux session on the host
running podman exec; driven through a real tmux on the client's side
(send-keys, capture-pane), with a kill -9 of the client and a re-attach;
the session ends with the workspace; another owner's workspace is out of
reach."""

import json
import os
import signal

import pytest

from conftest import wait_for
from test_containers import (_podman, cdaemon, containers,  # noqa: F401
                             image, kill9_with_keeper, remove_leftovers)
from test_shell import terms  # noqa: F401

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/tmux"),
                                reason="tmux is not installed")


def shells(d, who=None):
    """The live shells in workspaces, as (id, workspace) pairs."""
    return [(j["id"], j["in_workspace"]) for j in (who or d).json(
        "ps", "--json") if j.get("in_workspace") is not None]


def inside(t):
    """Waits until the shell inside answers: keys typed before podman exec
    has set up its terminal may be flushed, so a probe is typed again
    until its answer shows."""
    t.wait(r"\[gmux\] ", timeout=90)

    def probe():
        t.keys("echo ready-$((40+2))", "Enter")
        try:
            return t.wait(r"(?m)^ready-42\s*$", timeout=5)
        except AssertionError:
            return None
    wait_for(probe, timeout=120, step=0.5, what="the shell inside")


def make_workspace(d, name, *flags, who=None):
    r = (who or d).gmux("workspace", "create", name, "--image", d.image,
                        *flags)
    assert r.returncode == 0, r
    ws = [w for w in (who or d).json("workspace", "ls", "--json")
          if w["name"] == name][0]
    # (podman lists it once made; exec waits for it to run)
    wait_for(lambda: _podman("exec", ws["container"], "true",
                             check=False).returncode == 0, timeout=90,
             what="its container to run")
    return ws


def test_a_shell_in_a_workspace_survives_its_client_and_ends_with_it(
        cdaemon, terms):
    d = cdaemon.start()
    ws = make_workspace(d, "dev", "--share", "0.25")
    _podman("exec", ws["container"], "sh", "-c", "echo inside > /tmp/mark")
    t = terms(d.env, "shell", "dev")
    # inside the container: its files, its share's variables
    inside(t)
    t.keys("clear; echo in-$((6*7)) $(cat /tmp/mark) $GMUX_SHARE", "Enter")
    t.wait(r"(?m)^in-42 inside 0.25\s*$", timeout=90)
    [(jid, name)] = shells(d)
    assert name == "dev"
    j = d.job(jid)
    assert (j["terminal"], j["share"], j["cmd"], j["state"]) == (
        True, 0.0, ["/bin/sh", "-l"], "running"), j
    t.keys("i=0; while :; do i=$((i+1)); printf 'tick-%d\\r' $i; "
           "sleep 0.1; done", "Enter")
    seen = int(t.wait(r"tick-(\d+)", timeout=90).group(1))
    os.kill(t.client_pid(), signal.SIGKILL)
    t.wait(r"CLIENT-EXIT=137", timeout=90)
    # gmux shell dev again: the same session (no second one), the screen as
    # it was, the loop still printing
    t2 = terms(d.env, "shell", "dev")
    t2.wait(r"(?m)^in-42 inside 0.25\s*$", timeout=90)
    wait_for(lambda: int(t2.wait(r"tick-(\d+)", timeout=90).group(1)) >
             seen + 5, timeout=90, what="the loop to go on")
    assert shells(d) == [(jid, "dev")]
    # the workspace goes: its shell ends, and the client says so
    assert d.gmux("workspace", "rm", "dev").returncode == 0
    t2.wait(r"CLIENT-EXIT=\d+", timeout=90)
    d.wait_state(jid, ("stopped", "exited"), timeout=90)
    assert shells(d) == []
    wait_for(lambda: containers(d) == [], timeout=90, what="no container")
    r = d.gmux("shell", "dev")
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux shell: in_workspace: no workspace dev\n")


def test_the_shell_in_a_workspace_outlives_a_daemon_kill9(cdaemon, terms):
    d = cdaemon.start()
    make_workspace(d, "keep")
    t = terms(d.env, "shell", "keep")
    inside(t)
    t.keys("clear; echo before-$((2*3))", "Enter")
    t.wait(r"(?m)^before-6\s*$", timeout=90)
    [(jid, _)] = shells(d)
    d.kill9()
    t.wait(r"CLIENT-EXIT=1", timeout=90)
    d.start()
    d.wait_state(jid, "running", timeout=90)
    t2 = terms(d.env, "shell", "keep")
    t2.wait(r"(?m)^before-6\s*$", timeout=90)
    t2.keys("exit 4", "Enter")
    t2.wait(r"CLIENT-EXIT=4", timeout=90)
    assert d.wait_state(jid, "exited", timeout=90)["exit_code"] == 4
    # the workspace lives on; a new gmux shell is a new session in it
    assert [w["state"] for w in d.json("workspace", "ls", "--json")] == \
        ["running"]
    d.gmux("workspace", "rm", "keep", check=0)
    wait_for(lambda: containers(d) == [], timeout=90,
             what="no container")


def test_the_shell_has_the_workspaces_fence(cdaemon, terms):
    d = cdaemon.start()
    make_workspace(d, "sealed", "--deny-net")
    t = terms(d.env, "shell", "sealed")
    inside(t)
    # only the container's own loopback: the workspace's empty network
    t.keys("clear; echo ifaces: $(cut -d: -f1 /proc/net/dev | "
           "grep -v '|' | tr -d ' ')", "Enter")
    t.wait(r"(?m)^ifaces: lo\s*$", timeout=90)
    d.gmux("workspace", "rm", "sealed", check=0)
    t.wait(r"CLIENT-EXIT=\d+", timeout=90)


def test_bad_shells_in_workspaces_are_refused(cdaemon):
    d = cdaemon.start()
    r = d.gmux("shell", "nope")
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux shell: in_workspace: no workspace nope\n")
    for name in ("j5", "12", "j3_1"):
        r = d.gmux("workspace", "create", name, "--image", d.image)
        assert r.returncode == 2, r
        assert r.stderr.decode().startswith(
            "gmux workspace: name: %s reads as a job id (gmux shell takes "
            "either)" % name), r.stderr
    make_workspace(d, "dev")
    for body, code, want in (
            ({"terminal": True, "in_workspace": "dev", "argv": ["sh"],
              "share": 0.25}, 400, "in_workspace: a shell in a workspace "
             "has the workspace's share"),
            ({"terminal": True, "in_workspace": "dev", "argv": ["sh"],
              "deny_net": True}, 400, "in_workspace: a shell in a "
             "workspace has"),
            ({"in_workspace": "dev", "argv": ["sh"]}, 400,
             "in_workspace: only for a terminal"),
            ({"terminal": True, "in_workspace": "a/b", "argv": ["sh"]}, 400,
             "in_workspace: must be"),
            ({"terminal": True, "in_workspace": "other", "argv": ["sh"]},
             404, "in_workspace: no workspace other")):
        c, o = d.curl("POST", "/v1/jobs", json.dumps(body))
        assert c == code and json.loads(o)["error"].startswith(want), \
            (body, c, o)
    assert shells(d) == []
    d.gmux("workspace", "rm", "dev", check=0)


def test_another_owners_workspace_is_out_of_reach(make_daemon, make_client,
                                                  image, terms):
    """Owners other than the daemon's user come over TLS (their own
    workspaces: test_remote_workspace.py): bob cannot find, attach to or
    stop the local owner's workspace or its shell."""
    d = make_daemon()
    d.image = image
    d.serve_tls()
    c = make_client()
    line = d.gmux("token", "add", "bob", check=0).stdout.decode()
    assert c.add("gpu1", line.split()[-1]).returncode == 0
    try:
        ws = make_workspace(d, "dev")
        assert d.job(ws["id"])["owner"] != "bob"
        t = terms(d.env, "shell", "dev")
        inside(t)
        t.keys("clear; echo mine-$((6*7))", "Enter")
        t.wait(r"(?m)^mine-42\s*$", timeout=90)
        [(jid, _)] = shells(d)
        # bob's names are his own: the local owner's dev is not his
        r = c.gmux("shell", "dev")
        assert (r.returncode, r.stderr.decode()) == (
            1, "gmux shell: in_workspace: no workspace dev\n")
        for j in (ws["id"], jid):    # (another's job is none of his)
            r = c.gmux("shell", j)
            assert (r.returncode, r.stderr.decode()) == (
                1, "gmux shell: no job %s\n" % j)
        assert c.gmux("workspace", "rm", "dev").returncode == 1
        assert [w["name"] for w in d.json("workspace", "ls", "--json")] == \
            ["dev"]
        assert d.gmux("workspace", "rm", "dev").returncode == 0
        d.wait_state(jid, ("stopped", "exited"), timeout=90)
    finally:
        remove_leftovers(d)


def test_a_workspace_lost_with_the_daemon_leaves_no_container(cdaemon,
                                                             terms):
    """kill -9 of the daemon and of the workspace's keeper (and its podman
    run): the restarted daemon finds the workspace failed, removes its
    orphaned container and ends the shell in it; a workspace whose keeper
    lived on is re-adopted and removed cleanly."""
    d = cdaemon.start()
    lost = make_workspace(d, "lost")
    kept = make_workspace(d, "kept")
    t = terms(d.env, "shell", "lost")
    inside(t)
    t.keys("clear; echo in-lost", "Enter")
    t.wait(r"(?m)^in-lost\s*$", timeout=90)
    [(jid, _)] = shells(d)
    kill9_with_keeper(d, lost["id"])
    d.start()
    assert d.wait_state(lost["id"], "failed", timeout=90)
    assert containers(d) == [kept["container"]]
    d.wait_state(jid, ("stopped", "exited", "failed"), timeout=90)
    t.wait(r"CLIENT-EXIT=\d+", timeout=90)
    assert [w["name"] for w in d.json("workspace", "ls", "--json")] == \
        ["kept"]
    assert d.gmux("workspace", "rm", "kept").returncode == 0
    wait_for(lambda: containers(d) == [], timeout=90,
             what="no container")
