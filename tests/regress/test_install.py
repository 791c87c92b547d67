"""make install PREFIX=... DESTDIR=...: what was built, where it belongs,
and the installed gmux finds its preload library beside it."""

import os
import subprocess

from conftest import GMUX

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def test_make_install(tmp_path):
    build = os.path.dirname(GMUX)
    r = subprocess.run(["make", "-s", "install", "O=" + build,
                        "DESTDIR=" + str(tmp_path), "PREFIX=/opt/gx"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    gmux = tmp_path / "opt/gx/bin/gmux"
    shim = tmp_path / "opt/gx/lib/gmux/libgmux.so"
    assert gmux.exists() and os.access(gmux, os.X_OK)
    assert shim.exists()
    env = dict(os.environ, GMUX_HOME=str(tmp_path / "h"), GMUX_NO_DETECT="1",
               GMUX_FAKE_CUDA=os.path.join(build, "fake-cuda"))
    env.pop("GMUX_SHIM", None)
    r = subprocess.run([str(gmux), "version"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith("gmux ")
    subprocess.run([str(gmux), "serve", "-d", "--fake", "1xH100:80G"],
                   env=env, check=True)
    try:
        r = subprocess.run([str(gmux), "cards", "--json"], env=env,
                           capture_output=True, text=True, check=True)
        # the shim was found beside the installed binary, in ../lib/gmux
        assert '"memory": "shim"' in r.stdout, r.stdout
    finally:
        pid = int(open(tmp_path / "h" / "gmux.pid").read())
        os.kill(pid, 15)
