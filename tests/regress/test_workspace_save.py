"""A workspace saved from a laptop (docs/containers.md, "Saving a
workspace"): over loopback TLS with a token, `gmux workspace save NAME
IMAGE` has the host's daemon commit the workspace's container, named in
the token's owner's own namespace (localhost/OWNER/IMAGE) and labelled as
the owner's; `gmux workspace images` lists the caller's saved images only,
and a new remote workspace starts from one.  Another owner can neither
save nor see it."""

import json

from conftest import wait_for
from remotelib import https_json
from test_containers import (BUILD, _podman, containers, home_label,  # noqa
                             image)
from test_container_accounts import account, leftovers, names  # noqa
from test_container_accounts import podman_as
from test_remote_workspace import create, create_as_account  # noqa
from test_remote_workspace import host  # noqa: F401
from test_tenants import host as tenant_host  # noqa: F401
from test_tenants import idle, needs_root, no_accounts_left  # noqa: F401


def test_a_remote_save_is_its_owners_image(host):  # noqa: F811
    d, alice, bob = host
    ws = create(d, alice, "dev")
    _podman("exec", ws["container"], "sh", "-c", "echo kept > /tmp/mark")
    tag = home_label(d)
    saved = "localhost/alice/gws-env:" + tag
    try:
        r = alice.gmux("workspace", "save", "dev", "gws-env:" + tag,
                       timeout=300)
        assert (r.returncode, r.stdout.decode()) == (0, saved + "\n"), r
        labels = json.loads(_podman("image", "inspect", saved).stdout)[0][
            "Labels"]
        assert labels.get("gmux.owner") == "alice", labels
        # her listing has it; bob's has none of hers
        [im] = alice.json("workspace", "images", "--json")
        assert (im["image"], len(im["id"])) == (saved, 12), im
        out = alice.gmux("workspace", "images").stdout.decode()
        assert out.splitlines()[0].split() == ["IMAGE", "ID", "AGE"], out
        assert out.splitlines()[1].split()[:2] == [saved, im["id"]], out
        assert bob.json("workspace", "images", "--json") == []
        # bob can neither save her workspace nor name one in her space
        r = bob.gmux("workspace", "save", "dev", "mine:1")
        assert (r.returncode, r.stderr.decode()) == (
            1, "gmux workspace: name: no workspace dev\n")
        code, o = https_json(d.port, "POST", "/v1/jobs/%s/save" % ws["id"],
                             b'{"image": "x:1"}', token=d.token_for("bob"),
                             ctype="application/json")
        assert (code, o) == (404, {"error": "no job %s" % ws["id"]})
        # bad names and bodies: one line naming the field
        r = alice.gmux("workspace", "save", "dev", "bob/x:1")
        assert (r.returncode, r.stderr.decode()) == (
            2, "gmux workspace: image: a remote save is named NAME[:TAG] "
            "(kept as localhost/alice/NAME[:TAG])\n"), r
        for body, err in ((b'{"image": 3}', "image: a string is needed"),
                          (b'{"image": "x:1", "tag": 1}',
                           "tag: unknown key (image is the only one)")):
            code, o = https_json(d.port, "POST", "/v1/jobs/%s/save" % ws[
                "id"], body, token=d.token_for("alice"),
                ctype="application/json")
            assert (code, o) == (400, {"error": err}), body
        # her next workspace starts from it
        r = alice.gmux("workspace", "create", "again", "--image", saved,
                       timeout=120)
        assert r.returncode == 0, r
        jid = r.stdout.decode().split()[1].split(":")[1]
        ws2 = d.wait_state(jid, "running", timeout=90)
        wait_for(lambda: _podman("exec", ws2["container"], "cat",
                                 "/tmp/mark", check=False).stdout ==
                 b"kept\n", timeout=90, what="her saved file in it")
        assert alice.gmux("workspace", "rm", "again").returncode == 0
        assert alice.gmux("workspace", "rm", "dev").returncode == 0
        wait_for(lambda: containers(d) == [], timeout=90,
                 what="no container")
    finally:
        _podman("rmi", "-f", saved, check=False)


@needs_root
def test_a_remote_save_goes_into_the_owners_account(  # noqa: F811
        tenant_host, make_client, image, leftovers):
    """With tenant accounts: committed as her account, into her store
    only; listed from there."""
    d = tenant_host(start=False)
    d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    d.serve_tls()
    line = d.gmux("token", "add", "alice", check=0).stdout.decode().split()
    alice = make_client()
    assert alice.add("gpu1", line[-1]).returncode == 0
    ws, pw = create_as_account(d, alice, "dev", image)
    jid = ws["id"]
    saved = "localhost/alice/gws-acct:" + home_label(d)
    r = alice.gmux("workspace", "save", "dev", "gws-acct:" + home_label(d),
                   timeout=300)
    assert (r.returncode, r.stdout.decode()) == (0, saved + "\n"), r
    assert podman_as(pw, "image", "exists", saved).returncode == 0
    assert _podman("image", "exists", saved, check=False).returncode != 0
    assert [i["image"] for i in alice.json("workspace", "images",
                                           "--json")] == [saved]
    assert alice.gmux("workspace", "rm", "dev").returncode == 0
    wait_for(lambda: [j for j in d.json("ps", "-a", "--json")
                      if j["id"] == jid and j["ended"] is not None], 90,
             what="the workspace's job to end")
    idle(pw.pw_uid)
    assert names("alice", d) == []
