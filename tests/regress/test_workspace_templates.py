"""Templates, the images' policy and the pre-pull (docs/containers.md,
"Templates, images and the policy"): CONTAINERS_TEMPLATES,
CONTAINERS_ALLOW_OWN_IMAGES and CONTAINERS_IMAGES in the daemon's config
(here through GMUX_KEY, which overrides the file), with a real Podman and
the scratch image built here; the pre-pull's registry is a loopback port
nothing listens on (no registry is reachable from here)."""

import json
import os

from conftest import free_port, wait_for
from test_containers import (_podman, cdaemon, containers,  # noqa: F401
                             image, wait_containers)


def workspaces(d):
    return d.json("workspace", "ls", "--json")


def test_a_workspace_from_a_template(cdaemon):
    d = cdaemon
    d.env["GMUX_CONTAINERS_TEMPLATES"] = (
        "small=%s,share=0.25,mem=2G ; bad=%s,bogus=1; sealed=%s,deny-net"
        % (d.image, d.image, d.image))
    d.start()
    log = open(os.path.join(d.home, "gmux.log")).read()
    assert "CONTAINERS_TEMPLATES: bad: bogus: not one of gmux run's " \
        "flags" in log, log
    r = d.gmux("workspace", "create", "dev", "--template", "small")
    assert (r.returncode, r.stdout) == (0, b"dev j1\n"), r
    r = d.gmux("workspace", "create", "big", "--template", "small",
               "--share", "0.5")
    assert r.returncode == 0, r
    r = d.gmux("workspace", "create", "shut", "--template", "sealed")
    assert r.returncode == 0, r
    ws = {w["name"]: w for w in workspaces(d)}
    assert [(ws[n]["image"], ws[n]["template"], ws[n]["share"])
            for n in ("dev", "big")] == [(d.image, "small", 0.25),
                                         (d.image, "small", 0.5)], ws
    assert ws["dev"]["mem"] == 2 << 30 and ws["shut"]["fence"] == \
        "deny-net", ws
    wait_containers(d, 3)
    for n in ("dev", "big", "shut"):
        assert d.gmux("workspace", "rm", n).returncode == 0
    wait_for(lambda: containers(d) == [], timeout=90,
             what="no container")
    # an unknown template (a bad entry is none): exit 2, naming it
    for args, want in (
            (["--template", "nope"], "template: no template nope here "
             "(CONTAINERS_TEMPLATES has small, sealed)"),
            (["--template", "bad"], "template: no template bad here"),
            (["--template", "small", "--image", d.image],
             "image: create needs one of --image IMAGE, --devcontainer "
             "FILE and --template T")):
        r = d.gmux("workspace", "create", "x", *args)
        assert r.returncode == 2, (args, r)
        assert r.stderr.decode().startswith("gmux workspace: " + want), \
            (args, r.stderr)
    # through the API too: a template names its image
    code, o = d.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "template": "small", "image": d.image}))
    assert (code, json.loads(o)["error"]) == (
        400, "template: small names its image; not with image"), o
    assert d.json("ps", "--json") == []


def test_without_a_template_none_is_offered(cdaemon):
    d = cdaemon.start()
    r = d.gmux("workspace", "create", "x", "--template", "t")
    assert (r.returncode, r.stderr.decode()) == (
        2, "gmux workspace: template: no template t here "
        "(CONTAINERS_TEMPLATES names none)\n")


def test_the_policy_allows_only_templates_and_listed_images(cdaemon):
    d = cdaemon
    # the same image under another name: here, runnable, but not offered
    other = "localhost/gmux-test-not-offered:" + d.image.rsplit(":")[-1]
    _podman("tag", d.image, other)
    try:
        policy(d, other)
    finally:
        _podman("untag", other, other, check=False)


def policy(d, other):
    d.env["GMUX_CONTAINERS_TEMPLATES"] = "base=%s" % d.image
    d.env["GMUX_CONTAINERS_ALLOW_OWN_IMAGES"] = "0"
    d.start()
    # (gmux run's 125: gmux itself failed, as docker run's)
    for args, rc in ((["run", "--image", other, "--", "true"], 125),
                     (["workspace", "create", "own", "--image", other], 1)):
        r = d.gmux(*args)
        assert r.returncode == rc, (args, r)
        err = r.stderr.decode()
        assert ("image: %s is not offered here (the host's policy, "
                "CONTAINERS_ALLOW_OWN_IMAGES=0: a template's image or one "
                "of CONTAINERS_IMAGES)\n" % other) in err, err
    assert d.json("ps", "-a", "--json") == []
    # the template's image is offered, by the template or by its name
    r = d.gmux("run", "--image", d.image, "--", "echo", "offered")
    assert (r.returncode, r.stdout) == (0, b"offered\n"), r
    assert d.gmux("workspace", "create", "dev", "--template",
                  "base").returncode == 0
    d.gmux("workspace", "rm", "dev", check=0)
    d.stop()
    # and one of CONTAINERS_IMAGES, without templates
    del d.env["GMUX_CONTAINERS_TEMPLATES"]
    d.env["GMUX_CONTAINERS_IMAGES"] = d.image
    d.start()
    r = d.gmux("run", "--image", d.image, "--", "echo", "listed")
    assert (r.returncode, r.stdout) == (0, b"listed\n"), r
    r = d.gmux("run", "--image", other, "--", "true")
    assert r.returncode == 125 and b"CONTAINERS_ALLOW_OWN_IMAGES=0" in \
        r.stderr, r


def test_images_that_cannot_be_pulled_are_a_warning(cdaemon):
    d = cdaemon
    # a registry on a loopback port nothing listens on: the pull fails
    gone = "127.0.0.1:%d/gmux-none:1" % free_port()
    d.env["GMUX_CONTAINERS_IMAGES"] = "%s, %s, -bad" % (gone, d.image)
    d.start()
    assert d.json("ps", "--json") == []       # up, and answering
    path = os.path.join(d.home, "images")

    def found():
        try:
            o = json.load(open(path))
        except (OSError, ValueError):
            return None
        return o if len(o) == 3 else None
    o = wait_for(found, timeout=120, what="the pre-pulls")
    assert o[d.image] == "ok", o
    assert o[gone].startswith("could not be pulled ("), o
    assert o["-bad"].startswith("image: '-bad' is not an image's name"), o
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    log = open(os.path.join(d.home, "gmux.log")).read()
    assert "warning: CONTAINERS_IMAGES: %s could not be pulled" % gone in \
        log, log
    checks = json.loads(d.gmux("doctor", "--json").stdout)
    images = [c for c in checks if c["check"] == "images"]
    assert [c["status"] for c in images] == ["warn", "warn"], images
    assert images[0]["detail"].startswith(gone + " could not be pulled") or \
        images[1]["detail"].startswith(gone + " could not be pulled"), images
    # the daemon runs jobs meanwhile, containers too
    r = d.gmux("run", "--image", d.image, "--", "echo", "up")
    assert (r.returncode, r.stdout) == (0, b"up\n"), r
