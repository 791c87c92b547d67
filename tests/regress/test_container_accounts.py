"""Containers as the job's owner (docs/containers.md, "As the job's
owner"): with TENANT_ACCOUNTS=1 and a root daemon, a tenant's
containerized job is rootless Podman run by the tenant's account, with its
own subordinate IDs and its own store under the account's home (the image
loaded into it from the daemon's the first time); one tenant cannot see
another's containers, and none is left after the job ends.

Uses test_tenants.py's daemon (TLS, tokens, accounts made under a prefix
and removed after) and test_containers.py's scratch image."""

import os
import pwd
import subprocess

import pytest

from conftest import wait_for
from remotelib import https_json
from test_containers import home_label, image  # noqa: F401
from test_tenants import (PREFIX, ended, host, idle,  # noqa: F401
                          kill_all_of, needs_root, no_accounts_left, output,
                          run, tenant)


def account(name):
    """The tenant's account, once it is made (off the daemon's loop)."""
    def made():
        try:
            return pwd.getpwnam(PREFIX + name)
        except KeyError:
            return None
    return wait_for(made, 60, what="the account of " + name)


def as_account(name, *args):
    """podman ARGS as the tenant's account, in its home."""
    return podman_as(account(name), *args)


def podman_as(pw, *args):
    """podman ARGS as the account pw (a pwd entry), in its home."""
    return subprocess.run(
        ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
         "--clear-groups", "env", "-i", "HOME=" + pw.pw_dir,
         "PATH=/usr/bin:/bin", "podman"] + list(args),
        capture_output=True, timeout=120)


def names(name, d):
    r = as_account(name, "ps", "-a", "--filter",
                   "label=gmux.home=" + home_label(d), "--format",
                   "{{.Names}}")
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().split()


def subids(path, account):
    for line in open(path):
        n, start, count = line.strip().split(":")
        if n == account:
            return int(start), int(count)
    return None


@pytest.fixture
def leftovers():
    """After: the accounts' own processes (Podman's pause process keeps
    its user namespace), ended by pid before the accounts go."""
    yield
    kill_all_of({p.pw_uid for p in pwd.getpwall()
                 if p.pw_name.startswith(PREFIX)})


@needs_root
def test_a_tenants_container_runs_as_its_account(host, image, leftovers):
    d = host()
    alice, bob = d.token_for("alice"), d.token_for("bob")
    st, jb = run(d, bob, "true", image=image)
    assert st == 201, jb
    assert ended(d, bob, jb["id"])["exit_code"] == 0, output(d, bob,
                                                             jb["id"])
    # his last job's end: what is left of his account is killed (podman's
    # pause process), a podman of the test's too if it ran then: after it
    idle(account("bob").pw_uid)
    st, ja = run(d, alice, "sh", "-c", "id -u; cat /proc/self/uid_map; "
                 "exec sleep 600", image=image)
    assert st == 201, ja
    ua = tenant(d, "alice")["uid"]
    name = "gmux-%s-%s" % (home_label(d), ja["id"])
    wait_for(lambda: names("alice", d) == [name], 60,
             what="alice's container")
    # the container's process on the host is alice's account
    r = as_account("alice", "inspect", "--format", "{{.State.Pid}}", name)
    pid = int(r.stdout.decode().strip())
    assert os.stat("/proc/%d" % pid).st_uid == ua
    # neither bob nor the daemon's own store sees it
    assert names("bob", d) == []
    r = subprocess.run(["podman", "ps", "-a", "--filter",
                        "label=gmux.home=" + home_label(d), "--format",
                        "{{.Names}}"], capture_output=True, timeout=60)
    assert r.stdout.decode().split() == []
    # its own range, above every tenant's UID, apart from bob's
    ra = subids("/etc/subuid", PREFIX + "alice")
    rb = subids("/etc/subuid", PREFIX + "bob")
    assert ra and rb and ra[1] == rb[1] == 65536, (ra, rb)
    assert ra == subids("/etc/subgid", PREFIX + "alice")
    assert min(ra[0], rb[0]) > 299999
    assert ra[0] + ra[1] <= rb[0] or rb[0] + rb[1] <= ra[0]
    # the image went into alice's store, under her home
    assert as_account("alice", "image", "exists", image).returncode == 0
    assert os.path.isdir(os.path.join(
        tenant(d, "alice")["home"], ".local/share/containers/storage"))
    st, _ = https_json(d.port, "POST", "/v1/jobs/%s/stop" % ja["id"],
                       token=alice)
    assert st in (200, 202), st
    assert ended(d, alice, ja["id"])["state"] == "stopped"
    out = output(d, alice, ja["id"]).split("\n")
    # root inside is alice outside
    assert out[0] == "0" and out[1].split() == ["0", str(ua), "1"], out
    idle(ua)     # (as bob's above)
    assert names("alice", d) == []

