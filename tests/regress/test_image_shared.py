"""Images across members that share home storage (HOME_SHARED=1,
docs/containers.md, "Images that travel"): the first member that runs a
job with an image archives it once (podman save) into IMAGE_STORE, a
directory both daemons share; a member whose podman lacks the image loads
it from there when a job needs it.  Each daemon has podman storage of its
own (CONTAINERS_STORAGE_CONF), as two machines would."""

import os

import pytest

from test_containers import BUILD, _image_tar, image  # noqa: F401
from test_image_travel import drop_storage, podman, storage


@pytest.fixture
def members(make_daemon, image, tmp_path):  # noqa: F811
    store = tmp_path / "shared"
    store.mkdir()
    ds = []
    for name in ("a", "b"):
        d = make_daemon()
        d.conf = storage(str(tmp_path), name)
        d.env["CONTAINERS_STORAGE_CONF"] = d.conf
        d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
        d.env["GMUX_HOME_SHARED"] = "1"
        d.env["GMUX_IMAGE_STORE"] = str(store)
        d.start()
        ds.append(d)
    podman(ds[0].conf, "import", "-", "localhost/shared:1",
           input=_image_tar())
    yield ds[0], ds[1], store
    for d in ds:
        drop_storage(d.conf)


@pytest.mark.once
def test_archived_once_and_loaded_where_it_runs(members):
    a, b, store = members
    iid = podman(a.conf, "image", "inspect", "--format", "{{.Id}}",
                 "localhost/shared:1").stdout.decode().strip()
    # b cannot run it yet: nothing archived
    r = b.gmux("run", "--image", "localhost/shared:1", "--", "true")
    assert r.returncode == 125 and b"image not known" in r.stderr, r
    r = a.gmux("run", "--image", "localhost/shared:1", "--", "echo", "on a")
    assert r.returncode == 0 and r.stdout == b"on a\n", r
    tar = store / (iid + ".tar")
    assert tar.exists()
    stamp = tar.stat().st_mtime_ns
    r = b.gmux("run", "--image", "localhost/shared:1", "--", "echo", "on b")
    assert r.returncode == 0 and r.stdout == b"on b\n", r
    assert podman(b.conf, "image", "inspect", "--format", "{{.Id}}",
                  "localhost/shared:1").stdout.decode().strip() == iid
    # archived once: neither run again writes it
    for d in (a, b):
        r = d.gmux("run", "--image", "localhost/shared:1", "--", "true")
        assert r.returncode == 0, r
    assert tar.stat().st_mtime_ns == stamp
    assert sorted(os.listdir(store)) == [iid + ".tar", "names"]


def test_without_shared_homes_nothing_is_archived(make_daemon, image,  # noqa
                                                  tmp_path):
    d = make_daemon()
    d.env["GMUX_FAKE_CUDA"] = str(BUILD / "fake-cuda")
    d.env["GMUX_IMAGE_STORE"] = str(tmp_path)
    d.start()
    r = d.gmux("run", "--image", image, "--", "true")
    assert r.returncode == 0, r
    assert os.listdir(tmp_path) == []
