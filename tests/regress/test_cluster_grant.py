"""Several clusters per token (docs/cluster.md, "Several clusters"): a
token is granted clusters (`gmux token grant ID CLUSTER`); a member whose
cluster the token is not granted answers its cluster routes 403 naming
the cluster and shows it none of that cluster's jobs.  Two clusters on one
etcd, one member each, sharing one token file (TOKENS), and two tokens."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import GMUX, free_port, wait_for
from clusterlib import https_json, joined
from clusterlib import VERBOSE, members, tmp  # noqa
from remotelib import https
from test_ui import parse_sse

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")


def _start(d):
    """Serves TLS on a free loopback port; a second host of a shared token
    file prints no invite (the file has tokens already)."""
    d.port = free_port()
    d.start(*VERBOSE, fake=d.fake, addr="127.0.0.1:%d" % d.port)
    joined(d, 1)
    return d


def _token_id(d, owner):
    """The id of owner's token (not an invite) in d's token ls."""
    ids = [t["id"] for t in d.json("token", "ls", "--json")
           if t["owner"] == owner and not t["invite"]]
    assert len(ids) == 1, ids
    return ids[0]


def _events_state(d, token):
    """The first state of the dashboard's stream, as token sees it."""
    st, _, body = https(d.port, "GET", "/v1/events", token=token,
                        timeout=2, stream_for=1.5)
    assert st == 200, (st, body)
    return next(json.loads(x) for e, x in parse_sse(body) if e == "state")


def _sleeps(state):
    return [j for j in state["jobs"] if j["cmd"] == ["sleep", "120"]]


def _ended(d, token, jid):
    def done():
        st, o = https_json(d, "GET", "/v1/cluster/jobs/%s" % jid, token)
        return st == 200 and o.get("state") in ("exited", "failed") and o
    return wait_for(done, 60, 0.2, what="%s to end" % jid)


CLUSTER_ROUTES = (("GET", "/v1/cluster", None),
                  ("GET", "/v1/cluster/members", None),
                  ("GET", "/v1/cluster/queue", None),
                  ("GET", "/v1/cluster/jobs", None),
                  ("POST", "/v1/cluster/jobs", {"argv": ["true"],
                                                "share": 0.25}))


def _refused(d, token, cid, jid=None):
    routes = list(CLUSTER_ROUTES)
    if jid is not None:
        routes += [("GET", "/v1/cluster/jobs/%s" % jid, None),
                   ("GET", "/v1/cluster/jobs/%s/log" % jid, None),
                   ("POST", "/v1/cluster/jobs/%s/stop" % jid, None)]
    for method, path, body in routes:
        st, o = https_json(d, method, path, token, body)
        assert st == 403, (path, st, o)
        assert o["error"].startswith("cluster %s: this token is not "
                                     "granted it" % cid), (path, o)


def test_a_token_sees_and_submits_only_to_its_clusters(members, tmp):
    shared = os.path.join(tmp, "tokens.json")
    conf = "TOKENS=%s\n" % shared
    a = _start(members("a", "g1", start=False, extra=conf + "UI=1\n"))
    b = _start(members("b", "g2", start=False, extra=conf))
    assert a.invite is not None and b.invite is None

    # alice's token, made on a: granted a's cluster, g1, not b's
    alice = a.token_for("alice")
    tid = _token_id(a, "alice")
    listed = {t["id"]: t for t in b.json("token", "ls", "--json")}
    assert listed[tid]["clusters"] == ["g1"]
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["sh", "-c", "echo on-g1"], "share": 0.25})
    assert st == 201, o
    on_a = o["id"]
    assert _ended(a, alice, on_a)["member"] == "a"
    st, o = https_json(a, "GET", "/v1/cluster/members", alice)
    assert st == 200 and [m["name"] for m in o] == ["a"], o
    # b knows the token (the file is shared) but not for its cluster: its
    # cluster routes say so, its host's own routes serve
    _refused(b, alice, "g2", jid=on_a)
    st, o = https_json(b, "GET", "/v1/jobs?all=1", alice)
    assert st == 200 and o == [], o
    # the dashboard's session shows no cluster to it
    st, o = https_json(b, "GET", "/v1/session", alice)
    assert st == 200 and o["cluster"] is None, o
    st, o = https_json(a, "GET", "/v1/session", alice)
    assert st == 200 and o["cluster"]["id"] == "g1", o

    # granted g2 (on a: the file is shared), alice submits to g2 through b
    r = a.gmux("token", "grant", tid, "g2")
    assert r.stdout.decode() == "%s granted g2\n" % tid
    st, o = https_json(b, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["sh", "-c", "echo on-g2"], "share": 0.25})
    assert st == 201, o
    on_b = o["id"]
    assert _ended(b, alice, on_b)["member"] == "b"
    st, _, out = https(b.port, "GET", "/v1/cluster/jobs/%s/log?from=0&raw=1"
                       % on_b, token=alice)
    assert st == 200 and out.endswith(b"on-g2\n"), out
    # each cluster lists its own jobs only
    st, o = https_json(b, "GET", "/v1/cluster/jobs", alice)
    assert st == 200 and [j["id"] for j in o] == [on_b], o
    st, o = https_json(a, "GET", "/v1/cluster/jobs", alice)
    assert st == 200 and [j["id"] for j in o] == [on_a], o
    table = a.gmux("token", "ls").stdout.decode().splitlines()
    assert table[0].split() == ["ID", "OWNER", "CREATED", "STATE",
                                "CLUSTERS"]
    assert [x.split()[-1] for x in table if x.startswith(tid + " ")] == \
        ["g1,g2"]

    # a local job of alice's on a, over TCP: not the cluster's
    st, o = https_json(a, "POST", "/v1/jobs", alice, {"argv": ["true"],
                                                 "share": 0.25})
    assert st == 201, o
    mine = o["id"]
    st, o = https_json(a, "GET", "/v1/jobs?all=1", alice)
    local_of_a = [j["id"] for j in o]
    assert mine in local_of_a and len(local_of_a) == 2, o
    cluster_local = [x for x in local_of_a if x != mine][0]

    # a g1 job of alice's that runs on a: her dashboard's stream shows it
    # and the cluster while she is granted g1
    st, o = https_json(a, "POST", "/v1/cluster/jobs", alice,
                       {"argv": ["sleep", "120"], "share": 0.25})
    assert st == 201, o
    wait_for(lambda: _sleeps(_events_state(a, alice)), 60, 0.5,
             what="the g1 job in alice's stream")
    assert _events_state(a, alice)["cluster"] is not None

    # g1 taken back (on b): a refuses alice's cluster routes, and hides
    # the local job that ran g1's job, by list and by name
    r = b.gmux("token", "revoke", tid, "g1")
    assert r.stdout.decode() == "%s no longer granted g1\n" % tid
    assert b.json("token", "ls", "--json")[-1]["clusters"] == ["g2"]
    _refused(a, alice, "g1", jid=on_a)
    st, o = https_json(a, "GET", "/v1/jobs?all=1", alice)
    assert st == 200 and [j["id"] for j in o] == [mine], o
    # and her dashboard's stream shows neither the cluster nor that job
    state = _events_state(a, alice)
    assert state["cluster"] is None and _sleeps(state) == [], state
    for path in ("/v1/jobs/%s" % cluster_local,
                 "/v1/jobs/%s/log" % cluster_local):
        st, o = https_json(a, "GET", path, alice)
        assert st == 404, (path, st, o)
    st, o = https_json(b, "GET", "/v1/cluster/jobs", alice)
    assert st == 200 and [j["id"] for j in o] == [on_b], o
    # the books: a's own only, not merged from g1's members
    st, o = https_json(a, "GET", "/v1/usage", alice)
    assert st == 200 and "members" not in o, o
    # the host's own user still sees everything on its socket
    assert on_a in {j["id"] for j in json.loads(
        a.gmux("cluster", "ps", "--json").stdout)}

    # bob's token, made on b: g2 only
    bob = b.token_for("bob")
    st, o = https_json(b, "GET", "/v1/cluster/members", bob)
    assert st == 200, o
    _refused(a, bob, "g1")


def test_grant_refuses_bad_input(members, tmp):
    a = _start(members("a", "g3", start=False))
    a.token_for("carol")
    tid = _token_id(a, "carol")
    for args, msg in ((("grant", tid, "no/good"), b"CLUSTER: 'no/good'"),
                      (("grant", tid), b"grant ID CLUSTER (see"),
                      (("grant", "t/1", "g3"), b"ID: 't/1'")):
        r = subprocess.run([GMUX, "token"] + list(args), env=a.env,
                           capture_output=True, timeout=30)
        assert r.returncode == 2, (args, r)
        assert msg in r.stderr, (args, r.stderr)
    r = a.gmux("token", "grant", "t99", "g3")
    assert r.returncode == 1 and b"no token t99" in r.stderr, r.stderr
    # the route itself names the field
    for body in (None, "{}", '{"cluster": 3}', '{"cluster": "a b"}'):
        code, text = a.curl("POST", "/v1/tokens/%s/grant" % tid, body)
        assert code == 400 and "cluster" in json.loads(text)["error"], \
            (body, text)
    code, text = a.curl("POST", "/v1/tokens/t99/grant", '{"cluster": "x"}')
    assert code == 404, text
    # nothing was written for them
    assert [t["clusters"] for t in a.json("token", "ls", "--json")
            if t["id"] == tid] == [["g3"]]
