"""gmux shell and gmux port (docs/terminals.md): a terminal that is a job
(a tmux session held by the job's keeper), relayed over an upgraded API
connection, driven here through a real tmux on the client's side too
(send-keys, capture-pane); and published ports reached through the daemon,
forwarded to a local port."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import urllib.request

import pytest

from conftest import GMUX, free_port, wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed")

SHELL = ["bash", "--norc", "--noprofile", "-i"]


class Term:
    """The client's terminal: a private tmux server whose one pane runs a
    gmux command with env; remain-on-exit keeps the pane (and what it
    printed) once the command has gone."""

    def __init__(self, env, *args):
        self.dir = tempfile.mkdtemp(prefix="gt", dir="/tmp")
        self.sock = os.path.join(self.dir, "s")
        self.env = {k: v for k, v in env.items() if not k.startswith("TMUX")}
        self.env.update(TERM="xterm-256color", SHELL="/bin/bash")
        cmd = " ".join(shlex.quote(x) for x in [GMUX] + list(args))
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "c",
                  "-x", "100", "-y", "30", "sh", "-c",
                  cmd + '; echo "CLIENT-EXIT=$?"; sleep 600')

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock] + list(args),
                              capture_output=True, timeout=10,
                              env=self.env).stdout.decode()

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "c", *keys)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "c")

    def wait(self, pattern, timeout=15):
        """Waits for pattern (a regex) on the screen; returns the match."""
        return wait_for(lambda: re.search(pattern, self.screen()), timeout,
                        what="%r on the screen:\n%s" % (pattern,
                                                        self.screen()))

    def client_pid(self):
        """The gmux client's pid: the pane's shell's child."""
        sh = int(self.tmux("display", "-p", "-t", "c", "#{pane_pid}"))
        return wait_for(lambda: [int(p) for p in subprocess.run(
            ["pgrep", "-P", str(sh), "-x", "gmux"], capture_output=True)
            .stdout.split()], what="the gmux client")[0]

    def close(self):
        self.tmux("kill-server")
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def terms():
    made = []

    def make(env, *args):
        t = Term(env, *args)
        made.append(t)
        return t
    yield make
    for t in made:
        t.close()


def started(d, t=None):
    """The terminal job a gmux shell just started on d's daemon (its line
    on the screen may be gone already under the session's), once t (if
    given) shows the session (tmux's status line)."""
    if t is not None:
        t.wait(r"\[gmux\] ")
    return wait_for(lambda: [j["id"] for j in d.json("ps", "--json")
                             if j.get("terminal")], what="the shell's job")[-1]


def test_shell_types_a_command_and_sees_its_output(daemon, terms):
    daemon.start()
    t = terms(daemon.env, "shell", "--share", "0.25", "--", *SHELL)
    jid = started(daemon, t)
    t.keys("echo hello-$((6*7))", "Enter")
    t.wait(r"(?m)^hello-42$")
    # gmux ps lists the shell like any job: its share, its command
    ps = daemon.json("ps", "--json")
    assert [(j["id"], j["state"], j["terminal"], j["cmd"], j["share"])
            for j in ps] == [(jid, "running", True, SHELL, 0.25)]
    # the session's command is the job's: its exit status is the job's
    t.keys("exit 3", "Enter")
    t.wait(r"CLIENT-EXIT=3")
    j = daemon.wait_state(jid, "exited")
    assert j["exit_code"] == 3
    # a shell on a job that ended: a clear error
    r = daemon.gmux("shell", jid)
    assert r.returncode == 1
    assert r.stderr.decode() == "gmux shell: %s has ended: exited 3\n" % jid


def test_window_size_changes_reach_the_session(daemon, terms):
    daemon.start()
    t = terms(daemon.env, "shell", "--", *SHELL)
    started(daemon, t)

    def size_is(want):  # asked again until the size has gone through
        t.keys("clear; stty size", "Enter")
        return wait_for(lambda: re.search(r"(?m)^\d+ \d+$", t.screen()),
                        what="stty's answer").group(0) == want
    # 30 rows, less tmux's status line
    wait_for(lambda: size_is("29 100"), step=0.2, what="100x29")
    t.tmux("resize-window", "-t", "c", "-x", "90", "-y", "20")
    wait_for(lambda: size_is("19 90"), step=0.2, what="90x19")


def test_kill9_of_the_client_leaves_the_session_to_attach_again(daemon,
                                                                terms):
    daemon.start()
    t = terms(daemon.env, "shell", "--", *SHELL)
    jid = started(daemon, t)
    t.keys("clear; echo marker-$((1+1)); i=0; while :; do i=$((i+1)); "
           "printf 'tick-%d\\r' $i; sleep 0.1; done", "Enter")
    seen = int(t.wait(r"tick-(\d+)").group(1))
    os.kill(t.client_pid(), signal.SIGKILL)
    t.wait(r"CLIENT-EXIT=137")
    assert daemon.job(jid)["state"] == "running"
    # attached again from another terminal: the screen as it was, and the
    # loop still printing (past what the first client saw)
    t2 = terms(daemon.env, "shell", jid)
    t2.wait(r"(?m)^marker-2$")
    wait_for(lambda: int(t2.wait(r"tick-(\d+)").group(1)) > seen + 5,
             what="the loop to go on")
    # C-b d, tmux's detach key, leaves it running too
    t2.keys("C-b", "d")
    t2.wait(r"detached from %s .*\n?.*CLIENT-EXIT=0" % jid)
    assert daemon.job(jid)["state"] == "running"
    daemon.gmux("stop", jid, check=0)


def test_bad_requests_get_clear_errors(daemon):
    daemon.start()
    jid = daemon.gmux("run", "-d", "--", "sleep", "60",
                      check=0).stdout.decode().strip()
    r = daemon.gmux("shell", jid)
    assert (r.returncode, r.stderr.decode()) == (
        2, "gmux shell: %s is not a terminal (gmux shell starts one)\n"
        % jid)
    r = daemon.gmux("shell", "j999")
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux shell: no job j999\n")
    code, o = daemon.curl("GET", "/v1/jobs/%s/terminal" % jid)
    assert (code, json.loads(o)) == (
        400, {"error": "Upgrade: gmux-term/1 is needed"})
    r = daemon.gmux("run", "-d", "--deny-net", "--publish", "80", "--",
                    "true")
    assert r.returncode == 2
    assert "publish: a job with deny_net" in r.stderr.decode()
    r = daemon.gmux("run", "-d", "--publish", "0", "--", "true")
    assert r.returncode == 2 and "--publish" in r.stderr.decode()
    daemon.gmux("stop", jid, check=0)


def remote_client(d, make_client, owner):
    c = make_client()
    line = d.gmux("token", "add", owner, check=0).stdout.decode().split()
    assert c.add("gpu1", line[-1]).returncode == 0
    return c


def test_remote_shell_over_tls_and_another_owner_is_refused(
        make_daemon, make_client, terms):
    d = make_daemon()
    d.serve_tls()
    alice = remote_client(d, make_client, "alice")
    bob = remote_client(d, make_client, "bob")
    t = terms(alice.env, "shell", "--share", "0.25", "--", *SHELL)
    jid = started(d, t)
    t.keys("echo remote-$((6*7)) $(id -u)", "Enter")
    t.wait(r"(?m)^remote-42 %d$" % os.getuid())
    j = d.job(jid)
    assert (j["owner"], j["terminal"], j["confined"]) == ("alice", True,
                                                          True)
    r = bob.gmux("shell", jid)
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux shell: no job %s\n" % jid)
    # dropped and attached again over TLS
    os.kill(t.client_pid(), signal.SIGKILL)
    t2 = terms(alice.env, "shell", jid)
    t2.wait(r"(?m)^remote-42 %d$" % os.getuid())
    t2.keys("exit", "Enter")
    t2.wait(r"CLIENT-EXIT=0")
    d.wait_state(jid, "exited")


def serve_http(run, port, cwd=None):
    """A job serving cwd over HTTP on 127.0.0.1:port, published; its id
    once it listens."""
    r = run("run", "-d", "--publish", str(port), "--", "/usr/bin/python3",
            "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1")
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip().split(":")[-1]


def forward(c, jid, port, local):
    """gmux port JOB PORT LOCAL, running, once it listens."""
    p = c.popen("port", jid, str(port), str(local), stderr=subprocess.PIPE)
    line = p.stderr.readline().decode()
    assert line == "gmux: 127.0.0.1:%d -> %s:%d\n" % (local, jid, port), \
        line
    return p


def fetch(local, path):
    with urllib.request.urlopen("http://127.0.0.1:%d/%s" % (local, path),
                                timeout=10) as f:
        return f.read()


def listening(d, jid):
    return wait_for(lambda: b"Serving HTTP" in d.gmux("logs", jid).stdout,
                    what="the server to listen")


def test_port_forwards_to_a_published_port_over_the_unix_socket(daemon,
                                                                tmp_path):
    daemon.start()
    port, local = free_port(), free_port()
    (tmp_path / "hello.txt").write_text("hello from the job\n")
    jid = serve_http(lambda *a: subprocess.run(
        [GMUX] + list(a), env=daemon.env, cwd=str(tmp_path),
        capture_output=True, timeout=30), port)
    listening(daemon, jid)
    assert daemon.job(jid)["publish"] == [port]
    p = forward(daemon, jid, port, local)
    try:
        assert fetch(local, "hello.txt") == b"hello from the job\n"
        assert fetch(local, "hello.txt") == b"hello from the job\n"
        # the local port is taken now: a clear error
        r = daemon.gmux("port", jid, str(port), str(local))
        assert (r.returncode, r.stderr.decode()) == (
            1, "gmux port: LOCAL: 127.0.0.1:%d: Address already in use\n"
            % local)
    finally:
        p.terminate()
        p.wait()
    r = daemon.gmux("port", jid, "9")
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux port: %s does not publish port 9 (--publish)\n" % jid)
    code, o = daemon.curl("GET", "/v1/jobs/%s/port?port=%d" % (jid, port))
    assert (code, json.loads(o)) == (
        400, {"error": "Upgrade: gmux-port/1 is needed"})
    daemon.gmux("stop", jid, check=0)


def test_port_forwards_over_tls_only_for_its_owner(make_daemon,
                                                   make_client):
    d = make_daemon()
    d.serve_tls()
    alice = remote_client(d, make_client, "alice")
    bob = remote_client(d, make_client, "bob")
    with open(os.path.join(alice.work, "hello.txt"), "w") as f:
        f.write("hello over TLS\n")
    port, local = free_port(), free_port()
    jid = serve_http(alice.gmux, port)
    listening(d, jid)
    p = forward(alice, jid, port, local)
    try:
        assert fetch(local, "hello.txt") == b"hello over TLS\n"
    finally:
        p.terminate()
        p.wait()
    r = bob.gmux("port", jid, str(port), str(free_port()))
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux port: no job %s\n" % jid)
    d.gmux("stop", jid, check=0)


def test_a_stop_ends_the_attached_shell(daemon, terms):
    daemon.start()
    t = terms(daemon.env, "shell", "--", *SHELL)
    jid = started(daemon, t)
    t.keys("echo up", "Enter")
    t.wait(r"(?m)^up$")
    daemon.gmux("stop", jid, check=0)
    t.wait(r"the session of %s has ended\s+CLIENT-EXIT=0" % jid)
    assert daemon.job(jid)["state"] == "stopped"


def test_the_session_outlives_a_daemon_kill9(daemon, terms):
    daemon.start()
    t = terms(daemon.env, "shell", "--", *SHELL)
    jid = started(daemon, t)
    t.keys("echo before-$((2*3))", "Enter")
    t.wait(r"(?m)^before-6$")
    daemon.kill9()
    t.wait(r"CLIENT-EXIT=1")        # its connection was lost
    daemon.start()
    daemon.wait_state(jid, "running")
    t2 = terms(daemon.env, "shell", jid)
    t2.wait(r"(?m)^before-6$")
    t2.keys("echo after-$((3*3))", "Enter")
    t2.wait(r"(?m)^after-9$")
    t2.keys("exit 0", "Enter")
    t2.wait(r"CLIENT-EXIT=0")
    daemon.wait_state(jid, "exited")


def test_a_fenced_shell_runs_under_its_fence(daemon, terms):
    daemon.start()
    t = terms(daemon.env, "shell", "--allow", "127.0.0.1:9", "--",
              *SHELL)
    jid = started(daemon, t)
    t.keys("echo fenced-$((5*5))", "Enter")
    t.wait(r"(?m)^fenced-25$")
    j = daemon.job(jid)
    assert j["fence"] == "allow 127.0.0.1:9"
    # a connect the fence does not allow is refused inside the session
    t.keys("(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; echo rc=$?"
           % free_port(), "Enter")
    t.wait(r"(?m)^rc=1$")
    wait_for(lambda: daemon.job(jid).get("refused", 0) >= 1,
             what="the refusal to be counted")
    daemon.gmux("stop", jid, check=0)
