"""A remote job's PATH is the host's (issue 16, item 1): the daemon's own
PATH, or REMOTE_PATH in its config, so a command resolves on the host as
it does in the host user's shell (a venv's python, say); the jail lets
those directories be read and run, and nothing more (docs/isolation.md)."""

import os
import shutil
import stat
import tempfile

import pytest


def make_env(root, name, marker="pyvenv.cfg"):
    """A Python-environment-like tree: ROOT/NAME/bin/mytool, a script that
    reads ROOT/NAME/lib/data (so its prefix must be readable too)."""
    env = os.path.join(root, name)
    os.makedirs(os.path.join(env, "bin"))
    os.makedirs(os.path.join(env, "lib"))
    if marker == "conda-meta":
        os.makedirs(os.path.join(env, marker))
    elif marker is not None:
        open(os.path.join(env, marker), "w").write("home = /usr/bin\n")
    with open(os.path.join(env, "lib", "data"), "w") as f:
        f.write("data of %s\n" % name)
    tool = os.path.join(env, "bin", "mytool")
    with open(tool, "w") as f:
        f.write('#!/bin/sh\necho "tool of %s"\ncat "${0%%/bin/*}/lib/data"\n'
                % name)
    os.chmod(tool, 0o755)
    return env


@pytest.fixture
def envroot():
    d = tempfile.mkdtemp(prefix="gp", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def host_client(make_daemon, make_client, path=None, config=None):
    d = make_daemon()
    if path is not None:
        d.env["PATH"] = path
    if config is not None:
        with open(os.path.join(d.home, "config"), "w") as f:
            f.write(config)
    target = d.serve_tls()
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    return d, c


def test_remote_job_finds_the_hosts_venv_on_its_path(make_daemon,
                                                     make_client, envroot):
    venv = make_env(envroot, "venv")
    d, c = host_client(make_daemon, make_client,
                       path=venv + "/bin:" + os.environ["PATH"])
    r = c.gmux("run", "--", "mytool")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"tool of venv\ndata of venv\n"
    r = c.gmux("run", "--", "sh", "-c", 'echo "$PATH"', check=0)
    assert r.stdout.decode().split(":")[0] == venv + "/bin"
    # Readable and runnable, not writable; and nothing beside it.
    r = c.gmux("run", "--", "sh", "-c", "echo x > %s/bin/new" % venv)
    assert r.returncode != 0
    assert not os.path.exists(os.path.join(venv, "bin", "new"))
    r = c.gmux("run", "--", "ls", envroot)
    assert r.returncode != 0
    assert c.json("ps", "-a", "--json")[0]["confined"] is True


def test_remote_path_from_the_config_wins(make_daemon, make_client,
                                          envroot):
    a = make_env(envroot, "a", marker="conda-meta")
    b = make_env(envroot, "b")
    d, c = host_client(make_daemon, make_client,
                       path=b + "/bin:" + os.environ["PATH"],
                       config="REMOTE_PATH=%s/bin:/usr/bin:/bin\n" % a)
    r = c.gmux("run", "--", "mytool")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"tool of a\ndata of a\n"
    r = c.gmux("run", "--", "sh", "-c", 'echo "$PATH"', check=0)
    assert r.stdout == ("%s/bin:/usr/bin:/bin\n" % a).encode()
    # b is the daemon's PATH, not the remote jobs': not even readable.
    r = c.gmux("run", "--", "cat", b + "/lib/data")
    assert r.returncode != 0


def test_a_plain_bin_dir_lends_only_itself(make_daemon, make_client,
                                           envroot):
    # Not a Python environment: its parent (a home, say) stays closed.
    plain = make_env(envroot, "home", marker=None)
    d, c = host_client(make_daemon, make_client,
                       path=plain + "/bin:" + os.environ["PATH"])
    r = c.gmux("run", "--", "sh", "-c", "ls %s/bin" % plain)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"mytool\n"
    r = c.gmux("run", "--", "cat", plain + "/lib/data")
    assert r.returncode != 0


def test_a_path_entry_holding_gmuxs_state_is_not_lent(make_daemon,
                                                      make_client):
    d = make_daemon()
    d.env["PATH"] = os.path.dirname(d.home) + ":" + os.environ["PATH"]
    target = d.serve_tls()
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    r = c.gmux("run", "--", "cat", os.path.join(d.home, "state.db"))
    assert r.returncode != 0
    assert b"Permission denied" in r.stderr
    r = c.gmux("run", "--", "true")
    assert r.returncode == 0, r.stderr
