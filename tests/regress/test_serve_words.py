"""The host's first words (issue 16, item 8): serve --addr says what it
serves and the line to paste on each machine, as the product's
description has it; pasting that line as printed earns no warning, since
it carries an invite that gmux remote add trades for a token of the
machine's own (the token is never on a command line); a foreground serve
says once what it serves; no gmux.pid is left when a daemon stops."""

import json
import os
import re
import signal
import subprocess
import time

from conftest import GMUX, free_port, wait_for
from remotelib import https_json

LINE = re.compile(r"^gmux remote add NAME ([A-Za-z0-9_-]{43})@127\.0\.0\.1:"
                  r"(\d+)#([0-9a-f]{64})$")


def test_serve_addr_says_what_and_the_line_to_paste(make_daemon,
                                                    make_client):
    d = make_daemon()
    d.serve_tls()
    lines = d.serve_stdout.splitlines()
    assert lines[0] == ("gmux serving machines without a GPU on "
                        "127.0.0.1:%d over TLS" % d.port), lines
    assert lines[1] == "on each of them, run:"
    m = LINE.match(lines[2])
    assert m, lines
    invite = m.group(1)
    # Pasted as printed, on two machines: no warning, each its own token.
    kept = []
    for _ in range(2):
        c = make_client()
        cmd = lines[2].split()
        cmd[3] = "gpu1"
        r = c.gmux(*cmd[1:])
        assert r.returncode == 0, r.stderr
        assert r.stderr == b"", r.stderr
        assert b"added gpu1" in r.stdout
        rs = json.load(open(os.path.join(c.home, "remotes.json")))
        token = rs["remotes"][0]["target"].split("@")[0]
        assert token != invite
        kept.append(token)
        assert c.gmux("ps").returncode == 0
    assert kept[0] != kept[1]
    # The invite itself opens nothing but the join.
    code, o = https_json(d.port, "GET", "/v1/jobs", token=invite)
    assert code == 403 and "invite" in o["error"], o
    code, o = https_json(d.port, "POST", "/v1/join", token=kept[0])
    assert code == 409 and "not an invite" in o["error"], o
    ls = d.json("token", "ls", "--json")
    # (the tests' own target joined once too: conftest)
    assert [t["invite"] for t in ls] == [True, False, False, False]
    assert all(t["owner"] == ls[0]["owner"] for t in ls)
    # A token (not an invite) on the command line still earns the warning.
    c = make_client()
    r = c.gmux("remote", "add", "gpu1", d.target)
    assert r.returncode == 0 and b"warning" in r.stderr, r


def test_token_add_prints_an_invite(make_daemon, make_client):
    d = make_daemon()
    d.serve_tls()
    r = d.gmux("token", "add", "alice", check=0)
    line = r.stdout.decode().strip()
    assert LINE.match(line), line
    assert b"invite" in r.stderr
    c = make_client()
    cmd = line.split()
    cmd[3] = "gpu1"
    r = c.gmux(*cmd[1:])
    assert r.returncode == 0 and r.stderr == b"", r
    c.gmux("run", "--", "true", check=0)
    assert d.json("ps", "-a", "--json")[0]["owner"] == "alice"
    # Revoked, it joins no more machines.
    alice = [t["id"] for t in d.json("token", "ls", "--json")
             if t["owner"] == "alice" and t["invite"]]
    d.gmux("token", "revoke", alice[0], check=0)
    c2 = make_client()
    r = c2.gmux(*cmd[1:])
    assert r.returncode != 0 and b"wrong or revoked" in r.stderr, r


def test_a_foreground_serve_says_what_it_serves_and_leaves_no_pid(home):
    env = dict(os.environ, GMUX_HOME=home, GMUX_NO_DETECT="1")
    port = free_port()
    p = subprocess.Popen([GMUX, "serve", "--fake", "2xH100:80G", "--addr",
                          "127.0.0.1:%d" % port], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sock = os.path.join(home, "gmux.sock")
    wait_for(lambda: os.path.exists(sock), 10, what="the socket")
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=10)
    said = [l for l in err.decode().splitlines()
            if l.startswith("gmux serve: serving ")]
    assert said == ["gmux serve: serving %s: 2 cards (nvidia H100 80G "
                    "(fake), nvidia H100 80G (fake)); TLS on 127.0.0.1:%d"
                    % (sock, port)], err
    assert out.decode().startswith("gmux serving machines without a GPU")
    assert not os.path.exists(os.path.join(home, "gmux.pid"))
    # A daemon started and stopped the usual way leaves none either.
    r = subprocess.run([GMUX, "serve", "-d", "--fake", "1xH100:80G"],
                       env=env, capture_output=True, timeout=30)
    assert r.returncode == 0
    pid = int(open(os.path.join(home, "gmux.pid")).read())
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not os.path.exists(os.path.join(home, "gmux.pid")),
             10, what="gmux.pid to go")
