"""Fixtures of the Python package's tests: real daemons on fake cards,
from tests/regress/conftest.py (its Daemon, the way the regress tests use
it), and the package imported from this checkout."""

import importlib.util
import os
import shutil
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))          # sdk/python

_spec = importlib.util.spec_from_file_location(
    "gmux_regress_conftest", os.path.join(ROOT, "tests", "regress",
                                          "conftest.py"))
regress = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regress)
Daemon, wait_for, free_port = regress.Daemon, regress.wait_for, \
    regress.free_port

import gmux                                        # noqa: E402
from gmux.mesh import reset                       # noqa: E402


def _fresh(d, monkeypatch):
    monkeypatch.setenv("GMUX_HOME", d.home)
    monkeypatch.setenv("GMUX_NO_DETECT", "1")
    monkeypatch.delenv("GMUX_LOCAL", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    # A remote's workers get the caller's directory only where a test
    # says so (test_remote_workers_import_the_caller_s_own_modules): not
    # the checkout pytest runs in.
    monkeypatch.setenv("GMUX_SYNC", "0")
    reset()


@pytest.fixture
def home():
    d = tempfile.mkdtemp(prefix="gp", dir="/tmp")
    yield d
    reset()
    regress._kill_keepers(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def daemon(home, monkeypatch):
    """A daemon on one fake H100, and this process's gmux pointed at it."""
    d = Daemon(home)
    d.start()
    _fresh(d, monkeypatch)
    yield d
    reset()
    d.stop()
    regress._check_sanitizers(d)


@pytest.fixture
def make_daemon(monkeypatch):
    made = []

    def make(*args, fake="1xH100:80G", tls=False, env=None):
        h = tempfile.mkdtemp(prefix="gp", dir="/tmp")
        d = Daemon(h)
        d.env.update(env or {})
        if tls:
            d.serve_tls(*args, fake=fake)
        else:
            d.start(*args, fake=fake)
        made.append(d)
        _fresh(d, monkeypatch)
        return d
    yield make
    reset()
    for d in made:
        d.stop()
        regress._check_sanitizers(d)
        regress._kill_keepers(d.home)
        shutil.rmtree(d.home, ignore_errors=True)


def jobs_of(d):
    return d.json("ps", "-a", "--json")
