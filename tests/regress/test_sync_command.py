"""gmux sync NAME [DIR]: a directory sent to a host as gmux run sends its
working directory, its manifest's digest printed; a job started there
with that manifest runs in the tree (what the Python package's remote
workers do, docs/tasks.md "Remote hosts")."""

import json
import os
import re

from remotelib import https_json


def test_sync_sends_a_tree_a_job_then_runs_in(make_daemon, make_client):
    d = make_daemon()
    target = d.serve_tls()
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    src = os.path.join(c.work, "proj")
    os.makedirs(os.path.join(src, "sub"))
    with open(os.path.join(src, "sub", "a.txt"), "w") as f:
        f.write("hello\n")
    r = c.gmux("sync", "--json", "gpu1", src, check=0)
    o = json.loads(r.stdout)
    assert o["remote"] == "gpu1" and o["dir"] == os.path.realpath(src)
    assert re.fullmatch(r"[0-9a-f]{64}", o["manifest"])
    plain = c.gmux("sync", "gpu1", cwd=src, check=0).stdout.decode()
    assert plain == o["manifest"] + "\n"           # unchanged, the same
    token = target.split("@")[0]
    code, job = https_json(d.port, "POST", "/v1/jobs", json.dumps(
        {"argv": ["cat", "sub/a.txt"], "manifest": o["manifest"],
         "share": 0}).encode(), token=token)
    assert code == 201, job
    r = c.gmux("logs", "--remote", "gpu1", "--follow", job["id"], check=0)
    assert r.stdout == b"hello\n"


def test_sync_refuses_bad_input(make_client):
    c = make_client()
    r = c.gmux("sync", check=2)
    assert r.stderr.count(b"\n") == 1 and b"NAME" in r.stderr
    r = c.gmux("sync", "nosuch", check=2)
    assert b"NAME: no remote 'nosuch'" in r.stderr
    r = c.gmux("sync", "gpu1", "/nonexistent/dir", check=2)
    assert b"DIR: /nonexistent/dir" in r.stderr
    r = c.gmux("sync", "a", "b", "c", check=2)
    assert b"unexpected argument 'c'" in r.stderr
