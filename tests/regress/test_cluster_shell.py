"""A cluster job's terminal through any member (docs/cluster.md, "Members
calling members"; docs/terminals.md): `gmux shell ID` on a member that
does not run the job is relayed, over the members' pinned TLS, to the one
that does; driven through a real tmux on the client's side (send-keys,
capture-pane), with a kill -9 of the client and a re-attach."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from conftest import free_port, wait_for
from clusterlib import etcd, jobs, joined, members, tmp  # noqa: F401
from remotelib import https
from test_shell import SHELL, terms  # noqa: F401

pytestmark = [
    pytest.mark.skipif(shutil.which("etcd") is None,
                       reason="etcd-server is not installed"),
    pytest.mark.skipif(shutil.which("tmux") is None,
                       reason="tmux is not installed")]

T = 60      # generous: the machine is shared


def _terminal_on(d, member, **req):
    """A terminal cluster job on member, submitted through d's socket;
    its id, once it runs."""
    st, body = d.curl("POST", "/v1/cluster/jobs", json.dumps(dict(
        {"argv": SHELL, "terminal": True, "share": 0.25,
         "server": member}, **req)))
    assert st == 201, body
    jid = json.loads(body)["id"]
    rec = wait_for(lambda: (lambda j: j if j.get("state") == "running"
                            else None)((jobs(d) or {}).get(jid, {})), T,
                   0.1, what="%s to run on %s" % (jid, member))
    assert rec["member"] == member
    return jid


def _unix_upgrade(d, path, proto):
    """An upgraded connection to d's socket, past its 101."""
    import socket
    c = socket.socket(socket.AF_UNIX)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    c.settimeout(T)
    c.connect(d.socket)
    c.sendall(("GET %s HTTP/1.1\r\nHost: gmux\r\nUpgrade: %s\r\n"
               "Connection: Upgrade\r\n\r\n" % (path, proto)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.recv(1)
    assert head.startswith(b"HTTP/1.1 101 "), head
    return c


def _rss(d):
    with open("/proc/%d/status" % d.pid()) as f:
        return [int(x.split()[1]) << 10 for x in f
                if x.startswith("VmRSS:")][0]


def read_held_back(d, c, got):
    """A reader of socket c that stops for 3 s (got bytes read so far):
    d's RSS must grow by less than 16 MiB meanwhile (d holds back what
    it relays); then the rest is read.  The bytes read in all."""
    rss = _rss(d)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        assert _rss(d) < rss + (16 << 20), (rss, _rss(d))
        time.sleep(0.1)
    while True:
        n = len(c.recv(1 << 20))
        if n == 0:
            break
        got += n
    c.close()
    return got


def _upgrade(d, jid, token):
    """The terminal's upgrade asked of d over TLS with token."""
    return https(d.port, "GET", "/v1/cluster/jobs/%s/terminal" % jid,
                 token=token, headers={"Upgrade": "gmux-term/1",
                                       "Connection": "Upgrade"})


def test_a_shell_on_b_through_a_survives_its_client(members, terms):
    a = members("a", "s1", tls=True)
    b = members("b", "s1", tls=True)
    joined(a, 2)
    joined(b, 2)
    jid = _terminal_on(a, "b")
    assert "." in jid

    # attached through a, which does not run it: typed into, seen
    t = terms(a.env, "shell", jid)
    t.wait(r"\[gmux\] ", timeout=T)
    t.keys("clear; echo marker-$((6*7)); i=0; while :; do i=$((i+1)); "
           "printf 'tick-%d\\r' $i; sleep 0.1; done", "Enter")
    t.wait(r"(?m)^marker-42\s*$", timeout=T)
    seen = int(t.wait(r"tick-(\d+)", timeout=T).group(1))
    t.keys("C-c")
    # window changes go through the relay too (30 rows, less the status)

    def size_is(want):  # asked again until the size has gone through
        t.keys("clear; stty size", "Enter")
        return wait_for(lambda: re.search(r"(?m)^\d+ \d+$", t.screen()),
                        T, what="stty's answer").group(0) == want
    wait_for(lambda: size_is("29 100"), T, 0.2, what="100x29")
    t.tmux("resize-window", "-t", "c", "-x", "90", "-y", "20")
    wait_for(lambda: size_is("19 90"), T, 0.2, what="90x19")
    t.keys("clear; echo marker-$((6*7)); i=0; while :; do i=$((i+1)); "
           "printf 'tick-%d\\r' $i; sleep 0.1; done", "Enter")
    seen = int(t.wait(r"tick-(\d+)", timeout=T).group(1))
    # the client killed -9: the session on b goes on
    os.kill(t.client_pid(), signal.SIGKILL)
    t.wait(r"CLIENT-EXIT=137", timeout=T)
    assert jobs(a)[jid]["state"] == "running"

    # through a again: the screen as it was, the loop still going
    t2 = terms(a.env, "shell", jid)
    t2.wait(r"(?m)^marker-42\s*$", timeout=T)
    wait_for(lambda: int(t2.wait(r"tick-(\d+)", timeout=T).group(1)) >
             seen + 5, T, 0.2, what="the loop to go on")
    # and through b, its own member, at the same time
    t3 = terms(b.env, "shell", jid)
    t3.wait(r"(?m)^marker-42\s*$", timeout=T)

    # another owner's token: 404, as for its log; no upgrade
    bob = a.token_for("bob")
    st, _, body = _upgrade(a, jid, bob)
    assert st == 404 and json.loads(body)["error"] == \
        "no cluster job %s" % jid, body

    # b goes: both clients end, the relay through a too; asked again
    # through a, a clear error at once, not a hang
    b.kill9()
    t2.wait(r"CLIENT-EXIT=1", timeout=T)
    t3.wait(r"CLIENT-EXIT=1", timeout=T)
    assert "the connection was lost" in t2.screen()
    start = time.monotonic()
    r = a.gmux("shell", jid, timeout=T)
    assert r.returncode == 1, r
    assert r.stderr.decode().startswith("gmux shell: member b "), r.stderr
    assert time.monotonic() - start < 30

    # b back: its session was its keeper's all along; through a again,
    # then stopped through a (its pane's shell is no keeper's child)
    b.start(fake=b.fake, addr="127.0.0.1:%d" % b.port)
    joined(b, 2)
    wait_for(lambda: a.gmux("cluster", "logs", jid).returncode == 0, T,
             0.2, what="b to take a's calls again")
    t4 = terms(a.env, "shell", jid)
    t4.wait(r"(?m)^marker-42\s*$", timeout=T)
    assert a.gmux("stop", jid, timeout=T).returncode == 0
    t4.wait(r"CLIENT-EXIT=0", timeout=T)


def test_a_tokens_shell_is_relayed_as_its_owner(members, terms,
                                                make_client):
    """From a laptop: alice's token on a; her terminal job runs on b; a
    calls b as alice (never with her token); bob's token is 404."""
    a = members("a", "s2", tls=True)
    b = members("b", "s2", tls=True)
    joined(a, 2)
    joined(b, 2)
    line = a.gmux("token", "add", "alice", check=0).stdout.decode() \
        .split()[-1]
    c = make_client()
    assert c.add("a", line).returncode == 0
    alice, bob = a.token_for("alice"), a.token_for("bob")
    st, _, body = https(a.port, "POST", "/v1/cluster/jobs", json.dumps(
        {"argv": SHELL, "terminal": True, "share": 0.25,
         "server": "b"}).encode(), token=alice)
    assert st == 201, body
    jid = json.loads(body)["id"]
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
             "running", T, 0.1, what="it to run on b")
    [local] = [j for j in b.json("ps", "--json") if j.get("terminal")]
    assert (local["owner"], local["confined"]) == ("alice", True), local

    t = terms(c.env, "shell", jid)
    t.wait(r"\[gmux\] ", timeout=T)
    t.keys("clear; echo as-$((6*7))-$GMUX_JOB_ID", "Enter")
    t.wait(r"(?m)^as-42-%s\s*$" % local["id"], timeout=T)
    st, _, body = _upgrade(a, jid, bob)
    assert st == 404, body
    # the session's end reaches the client through a
    t.keys("exit 4", "Enter")
    t.wait(r"CLIENT-EXIT=4", timeout=T)
    wait_for(lambda: (jobs(a) or {}).get(jid, {}).get("state") ==
             "exited", T, 0.1, what="its end")
    r = c.gmux("shell", jid, timeout=T)
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux shell: %s has ended: exited 4\n" % local["id"]), r


def test_a_member_that_does_not_answer_is_a_clear_error(members):
    """b stopped (SIGSTOP), its record still live (a 60 s lease): the
    upgrade through a gets a 502 in its time, not a hang."""
    a = members("a", "s3", tls=True)
    b = members("b", "s3", tls=True, extra="CLUSTER_LEASE=60\n")
    joined(a, 2)
    joined(b, 2)
    jid = _terminal_on(a, "b")
    os.kill(b.pid(), signal.SIGSTOP)
    try:
        start = time.monotonic()
        r = a.gmux("shell", jid, timeout=T)
        took = time.monotonic() - start
    finally:
        os.kill(b.pid(), signal.SIGCONT)
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux shell: member b did not answer in time\n"), r
    assert took < 40, took


def test_a_published_port_on_b_through_a(members):
    """gmux port ID PORT LOCAL on a reaches the port of a job on b."""
    a = members("a", "s4", tls=True)
    b = members("b", "s4", tls=True)
    joined(a, 2)
    joined(b, 2)
    port, local = free_port(), free_port()
    web = os.path.join(b.home, "web")
    os.makedirs(web)
    with open(os.path.join(web, "hello.txt"), "w") as f:
        f.write("hello from b\n")
    jid = _terminal_on(a, "b", argv=["python3", "-m", "http.server",
                                      "--bind", "127.0.0.1", "--directory",
                                      web, str(port)], publish=[port],
                       terminal=False)
    p = a.popen("port", jid, str(port), str(local), stderr=subprocess.PIPE)
    try:
        line = p.stderr.readline().decode()
        assert line == "gmux: 127.0.0.1:%d -> %s:%d\n" % (local, jid,
                                                          port), line

        def fetch():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/hello.txt"
                                            % local, timeout=10) as f:
                    return f.read()
            except OSError:
                return None
        assert wait_for(fetch, T, 0.2, what="b's port") == b"hello from b\n"
    finally:
        p.terminate()
        print(p.communicate()[1].decode())
    # a reader that stops reading holds back b's port, not a's memory:
    # at most 1 MiB waits on each side of a's splice
    big = os.path.join(web, "big")
    with open(big, "wb") as f:
        f.write(os.urandom(1 << 20) * 64)
    c = _unix_upgrade(a, "/v1/cluster/jobs/%s/port?port=%d" % (jid, port),
                      "gmux-port/1")
    c.sendall(b"GET /big HTTP/1.0\r\n\r\n")
    got = 0
    while got < 1 << 20:
        got += len(c.recv(65536))
    got = read_held_back(a, c, got)     # no reading: a must not take it
    assert got > 64 << 20, got          # the whole file and its head
    # a port it does not publish: said before listening
    r = a.gmux("port", jid, str(port + 1), timeout=T)
    assert (r.returncode, r.stderr.decode()) == (
        1, "gmux port: %s does not publish port %d (--publish)\n" % (
            jid, port + 1)), r
