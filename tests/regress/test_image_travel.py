"""Images that travel (docs/containers.md, "Images that travel"): with
independent homes, an image the host lacks is sent by the client the first
time a job there needs it (podman save as an OCI directory, synced through
the blob store: layers the host has already are not sent again), loaded by
the host and kept; the second run sends nothing.  The client and the host
each have podman storage of their own (CONTAINERS_STORAGE_CONF), as two
machines would."""

import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import wait_for
from remotelib import https_json, manifest, sha
from test_containers import BUILD, _image_tar, image  # noqa: F401


def storage(tmp, name):
    """A podman storage of its own (vfs: no mount needed) under tmp.  Its
    runroot has a short path of its own: conmon's sockets are made under
    it, and where their paths are past a socket's 108 bytes (as under
    pytest's tmp_path) podman waits 20 s for each container's end."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    run = tempfile.mkdtemp(prefix="gpr", dir="/tmp")
    conf = os.path.join(d, "storage.conf")
    with open(conf, "w") as f:
        f.write('[storage]\ndriver = "vfs"\ngraphroot = "%s/graph"\n'
                'runroot = "%s"\n' % (d, run))
    return conf


def drop_storage(conf):
    """Removes storage conf's containers and images, and its runroot."""
    podman(conf, "rm", "-a", "-f", "-t", "0", check=False)
    podman(conf, "system", "reset", "-f", check=False)
    with open(conf) as f:
        run = re.search(r'runroot = "(.*)"', f.read()).group(1)
    shutil.rmtree(run, ignore_errors=True)


def podman(conf, *args, input=None, check=True):
    env = dict(os.environ, CONTAINERS_STORAGE_CONF=conf)
    r = subprocess.run(["podman"] + list(args), env=env, input=input,
                       capture_output=True, timeout=300)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


@pytest.fixture
def two(make_daemon, make_client, image, tmp_path):  # noqa: F811
    """A host and a client over loopback TLS, each with its own storage;
    the client's holds the test image (its ID in c.image_id)."""
    hconf = storage(str(tmp_path), "host")
    cconf = storage(str(tmp_path), "client")
    d = make_daemon()
    d.env["CONTAINERS_STORAGE_CONF"] = hconf
    d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    d.serve_tls()
    line = d.gmux("token", "add", "alice", check=0).stdout.decode().split()[-1]
    c = make_client()
    c.env["CONTAINERS_STORAGE_CONF"] = cconf
    assert c.add("gpu1", line).returncode == 0
    podman(cconf, "import", "-", "localhost/travel:1", input=_image_tar())
    c.image_id = podman(cconf, "image", "inspect", "--format", "{{.Id}}",
                        "localhost/travel:1").stdout.decode().strip()
    d.hconf, c.cconf = hconf, cconf
    yield d, c
    for conf in (hconf, cconf):
        drop_storage(conf)


def sent(stderr):
    """The syncs a -v run made: (files, bytes sent) each."""
    return [(int(m.group(1)), int(m.group(2))) for m in re.finditer(
        rb"run_remote_sync: gpu1: (\d+) files, \d+ hashed, (\d+) sent",
        stderr)]


@pytest.mark.once
def test_an_image_the_host_lacks_travels_once(two):
    d, c = two
    assert podman(d.hconf, "image", "exists", c.image_id,
                  check=False).returncode == 1
    r = c.gmux("-v", "run", "--image", "localhost/travel:1", "--", "sh",
               "-c", "echo inside; exit 4")
    assert r.returncode == 4 and r.stdout == b"inside\n", r
    syncs = sent(r.stderr)
    # the image's directory (oci-layout, index, manifest, config, layer),
    # then the job's tree (empty)
    assert len(syncs) == 2 and syncs[0][0] == 5 and syncs[0][1] == 5, syncs
    # the host keeps it, under a name of gmux's own, never the client's
    assert podman(d.hconf, "image", "exists", c.image_id).returncode == 0
    names = podman(d.hconf, "images", "--format",
                   "{{.Repository}}:{{.Tag}}").stdout.decode().split()
    assert names == ["localhost/gmux-image-%s:latest" % c.image_id], names
    assert os.path.exists(os.path.join(d.home, "images", c.image_id))
    job = d.json("ps", "-a", "--json")[0]
    assert job["image"] == c.image_id, job
    code, o = https_json(d.port, "GET", "/v1/images/" + c.image_id,
                         token=c_token(c))
    assert code == 200 and o["state"] == "present", o
    assert os.listdir(os.path.join(d.home, "images", "tmp")) == []
    # the second run sends nothing of the image
    r = c.gmux("-v", "run", "--image", "localhost/travel:1", "--", "echo",
               "again")
    assert r.returncode == 0 and r.stdout == b"again\n", r
    assert len(sent(r.stderr)) == 1, r.stderr


@pytest.mark.once
def test_an_image_the_host_has_already_is_not_sent(two):
    """The host's own copy (the same ID) counts: podman is asked."""
    d, c = two
    data = podman(c.cconf, "save", "localhost/travel:1").stdout
    podman(d.hconf, "load", input=data)
    r = c.gmux("-v", "run", "--image", "localhost/travel:1", "--", "echo",
               "ran")
    assert r.returncode == 0 and r.stdout == b"ran\n", r
    assert len(sent(r.stderr)) == 1, r.stderr
    assert os.path.exists(os.path.join(d.home, "images", c.image_id))


@pytest.mark.once
def test_layers_the_host_has_are_not_sent_again(two, tmp_path):
    d, c = two
    r = c.gmux("run", "--image", "localhost/travel:1", "--", "true")
    assert r.returncode == 0, r
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "extra").write_text("one more layer\n")
    (ctx / "Containerfile").write_text("FROM %s\nCOPY extra /extra\n"
                                       % c.image_id)
    podman(c.cconf, "build", "--pull=never", "-t", "localhost/travel:2",
           str(ctx))
    r = c.gmux("-v", "run", "--image", "localhost/travel:2", "--", "cat",
               "/extra")
    assert r.returncode == 0 and r.stdout == b"one more layer\n", r
    syncs = sent(r.stderr)
    # its new layer, config and manifest, and the index: not the base layer
    assert len(syncs) == 2 and syncs[0][0] == 6 and syncs[0][1] == 4, syncs


def c_token(c):
    with open(os.path.join(c.home, "remotes.json")) as f:
        return json.load(f)["remotes"][0]["target"].split("@")[0]


def upload(port, token, files):
    """Syncs {path: bytes} as a tree by hand (as a hostile client would);
    returns the manifest's digest."""
    entries, dirs = [], set()
    for p in sorted(files):
        parts = p.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    rows = [("d", 755, 0, "-", x) for x in dirs]
    rows += [("f", 644, len(v), sha(v), p) for p, v in files.items()]
    rows.sort(key=lambda e: e[4].encode())
    body = manifest(rows)
    code, o = https_json(port, "POST", "/v1/sync/manifest", body, token,
                         "text/x-gmux-manifest")
    assert code == 200, (code, o)
    batch = b"gmux-batch 1\n" + b"".join(
        ("%s %d\n" % (sha(v), len(v))).encode() + v
        for v in files.values() if sha(v) in o["missing"])
    if o["missing"]:
        code, _ = https_json(port, "POST", "/v1/blobs", batch, token,
                             "application/x-gmux-batch")
        assert code == 200
    return o["manifest"]


def test_what_is_not_an_image_is_refused(two):
    d, c = two
    tok = c_token(c)
    post = lambda o: https_json(d.port, "POST", "/v1/images",  # noqa: E731
                                json.dumps(o).encode(), tok,
                                "application/json")
    code, o = https_json(d.port, "GET", "/v1/images/nothex", token=tok)
    assert code == 400 and o["error"].startswith("id: "), o
    # an image podman does not have: asked once ("checking"), then 404
    code, o = https_json(d.port, "GET", "/v1/images/" + "a" * 64, token=tok)
    assert code == 200 and o["state"] == "checking", o
    wait_for(lambda: https_json(d.port, "GET", "/v1/images/" + "a" * 64,
                                token=tok)[0] == 404, timeout=120,
             what="podman's answer")
    code, o = post({"id": "x", "manifest": "a" * 64})
    assert code == 400 and o["error"].startswith("id: "), o
    code, o = post({"id": "a" * 64, "manifest": "zz"})
    assert code == 400 and o["error"].startswith("manifest: "), o
    code, o = post({"id": "a" * 64, "manifest": "b" * 64})
    assert code == 404 and o["error"].startswith("manifest: "), o
    # a tree that is not an OCI directory: nothing is loaded
    cfg = b'{"not": "an image"}'
    md = upload(d.port, tok, {"etc/passwd": b"x\n", "blobs/sha256/" +
                              sha(cfg): cfg})
    code, o = post({"id": sha(cfg), "manifest": md})
    assert code == 400 and "etc is not part of an OCI" in o["error"], o
    # an index that names no manifest
    md = upload(d.port, tok, {"index.json": b'{"manifests":[]}',
                              "oci-layout": b"{}",
                              "blobs/sha256/" + sha(cfg): cfg})
    code, o = post({"id": sha(cfg), "manifest": md})
    assert code == 400 and "index.json" in o["error"], o
    assert os.listdir(os.path.join(d.home, "images", "tmp")) == []
