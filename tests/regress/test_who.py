"""A request's who-and-how (owner, admin, transport, confined) is resolved
once, where the route is dispatched, and every handler reads it from there:
the dispatch says at debug whom each request acts as and how it came."""

import os
import pwd


def test_each_request_is_dispatched_as_its_owner(make_daemon, make_client):
    d = make_daemon()
    d.serve_tls("-v")
    line = d.gmux("token", "add", "alice", check=0).stdout.decode().split()
    alice = make_client()
    assert alice.add("gpu1", line[-1]).returncode == 0
    j = alice.gmux("run", "-d", "--share", "0.25", "--", "true",
                   check=0).stdout.decode().strip().split(":")[-1]
    d.wait_state(j, "exited")
    assert d.job(j)["owner"] == "alice"
    assert [x["id"] for x in alice.json("ps", "-a", "--json")] == [j]
    me = pwd.getpwuid(os.getuid()).pw_name
    log = open(os.path.join(d.home, "gmux.log")).read()
    assert "api_dispatch: POST /v1/jobs as alice over TCP" in log
    assert "api_dispatch: GET /v1/jobs as alice over TCP" in log
    assert "api_dispatch: GET /v1/jobs as %s\n" % me in log
