"""gmux setup install --yes / uninstall into a temporary root: the
binary, libgmux.so, the manual page, completion, config and a systemd unit
that systemd-analyze verify accepts; twice is the same as once, and
uninstall leaves nothing."""

import os
import shutil
import stat
import subprocess

import pytest

from conftest import GMUX


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (
                stat.S_IMODE(st.st_mode),
                open(p, "rb").read() if stat.S_ISREG(st.st_mode) else None)
    return out


def setup(root, *args, env=None, home=None):
    e = dict(env or os.environ)
    e.pop("DESTDIR", None)
    if home is not None:
        e["HOME"] = home
        e.pop("XDG_CONFIG_HOME", None)
        e.pop("GMUX_HOME", None)
    return subprocess.run([GMUX, "setup"] + list(args) + ["--root",
                          str(root)], capture_output=True, text=True,
                          env=e)


def verify(root, text):
    """systemd-analyze verify on a unit's text, as a system unit of the
    root (a user manager cannot start here), with the host's own units
    linked in (the targets it names); the root is left as it was."""
    made = [d for d in ("usr", "usr/lib", "usr/lib/systemd", "etc",
                        "etc/systemd", "etc/systemd/system")
            if not (root / d).exists()]
    for d in made:
        (root / d).mkdir()
    link = root / "usr/lib/systemd/system"
    link.symlink_to("/lib/systemd/system")
    unit = root / "etc/systemd/system/gmux-check.service"
    unit.write_text(text)
    try:
        return subprocess.run(["systemd-analyze", "verify", "--man=no",
                               "--root=%s" % root, unit.name],
                              capture_output=True, text=True)
    finally:
        link.unlink()
        unit.unlink()
        for d in reversed(made):
            os.rmdir(root / d)


needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the system unit is root's")
needs_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                   reason="no systemd-analyze")


def test_without_yes_it_only_says_what_it_would_do(tmp_path):
    r = setup(tmp_path, "install")
    assert r.returncode == 2 and "would install" in r.stdout
    assert "--yes" in r.stderr and len(r.stderr.splitlines()) == 1
    assert os.listdir(tmp_path) == []
    r = setup(tmp_path, "reinstall")
    assert r.returncode == 2


@needs_root
@needs_analyze
def test_system_install_twice_verify_and_uninstall(tmp_path):
    r = setup(tmp_path, "install", "--yes")
    assert r.returncode == 0, r.stderr
    once = tree(tmp_path)
    r = setup(tmp_path, "install", "--yes")
    assert r.returncode == 0, r.stderr
    assert tree(tmp_path) == once                 # idempotent
    out = r.stdout
    gmux = tmp_path / "usr/local/bin/gmux"
    assert open(gmux, "rb").read() == open(GMUX, "rb").read()
    assert os.access(gmux, os.X_OK)
    assert (tmp_path / "usr/local/lib/gmux/libgmux.so").exists()
    assert (tmp_path / "usr/local/share/man/man1/gmux.1").exists()
    assert (tmp_path / "usr/local/share/bash-completion/completions/gmux"
            ).exists()
    conf = tmp_path / "var/lib/gmux/config"
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(conf.parent).st_mode) == 0o700
    unit = (tmp_path / "etc/systemd/system/gmux.service").read_text()
    for line in ("ExecStart=/usr/local/bin/gmux serve",
                 "NoNewPrivileges=yes", "ProtectSystem=full",
                 "Environment=GMUX_HOME=/var/lib/gmux",
                 "WantedBy=multi-user.target"):
        assert line + "\n" in unit, line
    r = verify(tmp_path, unit)
    assert r.returncode == 0, r.stderr
    # under a root it never enables (nor starts) the unit
    assert "not enabled" in out
    r = setup(tmp_path, "uninstall")
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path) == []             # nothing left
    assert setup(tmp_path, "uninstall").returncode == 0   # again: done


@needs_analyze
def test_user_install_and_a_bad_unit_fails_verify(tmp_path):
    home = "/home/someone"
    r = setup(tmp_path, "install", "--yes", "--user", home=home)
    assert r.returncode == 0, r.stderr
    path = tmp_path / "home/someone/.config/systemd/user/gmux.service"
    unit = path.read_text()
    assert "ExecStart=/home/someone/.local/bin/gmux serve\n" in unit
    assert "WantedBy=default.target\n" in unit
    assert (tmp_path / "home/someone/.local/bin/gmux").exists()
    assert (tmp_path / "home/someone/.config/gmux/config").exists()
    r = verify(tmp_path, unit)
    assert r.returncode == 0, r.stderr
    bad = unit.replace("ExecStart=/", "ExecStart=nowhere/")
    assert verify(tmp_path, bad).returncode != 0
    # a config changed since install is kept
    conf = tmp_path / "home/someone/.config/gmux/config"
    conf.write_text("JOB_RETENTION_DAYS=7\n")
    r = setup(tmp_path, "uninstall", "--user", home=home)
    assert r.returncode == 0 and "kept" in r.stdout
    left = [os.path.relpath(os.path.join(d, f), tmp_path)
            for d, _, fs in os.walk(tmp_path) for f in fs]
    assert left == ["home/someone/.config/gmux/config"]


def test_destdir_is_the_root(tmp_path):
    e = dict(os.environ, DESTDIR=str(tmp_path), HOME="/home/x")
    e.pop("GMUX_HOME", None)
    e.pop("XDG_CONFIG_HOME", None)
    r = subprocess.run([GMUX, "setup", "install", "--yes", "--user"], env=e,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path)
    r = subprocess.run([GMUX, "setup", "uninstall", "--user"], env=e,
                       capture_output=True, text=True)
    assert r.returncode == 0 and os.listdir(tmp_path) == []


def test_uninstall_removes_only_what_install_makes(tmp_path):
    home = "/home/x"
    assert setup(tmp_path, "install", "--yes", "--user",
                 home=home).returncode == 0
    victim = tmp_path / "etc/keep"
    victim.parent.mkdir()
    victim.write_text("not gmux's\n")
    listing = tmp_path / "home/x/.local/lib/gmux/installed"
    with open(listing, "a") as f:
        f.write("\nf /etc/keep\nd /etc\nf /home/x/.local/bin/../../../etc/"
                "keep\n")
    r = setup(tmp_path, "uninstall", "--user", home=home)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "not gmux's\n"
    assert sorted(os.listdir(tmp_path)) == ["etc"]


def test_a_path_the_unit_would_misread_is_refused(tmp_path):
    r = setup(tmp_path, "install", "--yes", "--user",
              home="/home/x\nExecStartPre=/bin/evil")
    assert r.returncode == 1 and "not a plain absolute path" in r.stderr
    assert os.listdir(tmp_path) == []
