"""Tenants' remaining parts (docs/tenants.md, issues 14 and 17): disk
quotas through the filesystem's project quotas where it has them, the
account's end (its archive, userdel, its home's removal) and its
subordinate IDs off the daemon's loop, and no container of an account's
left behind by a daemon's kill -9.

Uses test_tenants.py's daemon (TLS, tokens, accounts) with this file's own
account prefix (gq...), whose accounts and processes are removed after."""

import json
import os
import pwd
import random
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import wait_for
from remotelib import https_json
from test_containers import home_label, image  # noqa: F401
from test_container_accounts import podman_as
from test_tenants import (ended, host, idle, kill_all_of,  # noqa: F401
                          needs_root, output, run, tenant, tenants, _tool)

PREFIX = "gq%04x-" % random.randrange(0x10000)


def _mine():
    return [p for p in pwd.getpwall() if p.pw_name.startswith(PREFIX)]


@pytest.fixture(autouse=True)
def no_accounts_left():
    """After: this file's accounts' processes ended by pid (Podman's pause
    process keeps its user namespace), then the accounts removed."""
    yield
    kill_all_of({p.pw_uid for p in _mine()})
    for p in _mine():
        subprocess.run(["userdel", "-r", "-f", p.pw_name],
                       capture_output=True)
        subprocess.run(["groupdel", p.pw_name], capture_output=True)
    assert _mine() == []


@pytest.fixture
def qhost(host):  # noqa: F811
    """host(), its accounts under this file's prefix; homes= another
    TENANT_HOME_ROOT."""
    def make(extra="", homes=None, **kw):
        conf = "TENANT_ACCOUNT_PREFIX=%s\n" % PREFIX
        if homes is not None:
            conf += "TENANT_HOME_ROOT=%s\n" % homes
        d = host(extra + conf, **kw)
        if homes is not None:
            d.homes = homes
        return d
    return make


# -- disk: project quotas, or the walk ----------------------------------------


def _why(r):
    """mount's failure, and the kernel's reason for it if dmesg says."""
    why = r.stderr.decode(errors="replace").strip().split("\n")[0]
    k = subprocess.run(["dmesg"], capture_output=True).stdout.decode(
        errors="replace").strip().split("\n")
    said = [x for x in k if "EXT4-fs (loop" in x]
    return why + (" (%s)" % said[-1].split("] ", 1)[-1] if said else "")


@pytest.fixture
def prjquota_fs():
    """A small ext4 with project quotas, mounted with prjquota on a loop
    device; skipped with the reason where the host cannot have one."""
    if os.geteuid() != 0:
        pytest.skip("a loop device's filesystem needs root")
    top = tempfile.mkdtemp(prefix="gqfs", dir="/tmp")
    img, mnt = os.path.join(top, "img"), os.path.join(top, "mnt")
    os.mkdir(mnt)
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    r = subprocess.run(["mkfs.ext4", "-q", "-O", "quota,project", img],
                       capture_output=True)
    if r.returncode == 0:
        r = subprocess.run(["mount", "-o", "loop,prjquota", img, mnt],
                           capture_output=True)
    if r.returncode != 0:
        os.remove(img)
        os.rmdir(mnt)
        os.rmdir(top)
        pytest.skip("no ext4 with project quotas on a loop device here: "
                    + _why(r))
    os.chmod(top, 0o755)
    os.chmod(mnt, 0o755)
    yield mnt
    subprocess.run(["umount", "-l", mnt], capture_output=True)
    os.remove(img)
    os.rmdir(mnt)
    os.rmdir(top)


@needs_root
def test_homes_have_project_quotas_where_the_filesystem_does(qhost,
                                                            prjquota_fs):
    homes = os.path.join(prjquota_fs, "homes")
    # a day between walks: a figure that follows a write is the kernel's
    d = qhost("USER_DISK_LIMIT=4M\nTENANT_DISK_EVERY=86400\n", homes=homes)
    alice = d.token_for("alice")
    assert tenants(d)["disk_method"] == "quota"
    assert b"disk: the filesystem's project quotas" in d.gmux(
        "tenant", "ls").stdout
    st, j = run(d, alice, "sh", "-c", 'dd if=/dev/zero of="$HOME/a" bs=1M '
                'count=2 2>/dev/null && echo two')
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] == 0
    t = tenant(d, "alice")
    wait_for(lambda: tenant(d, "alice")["disk"]["used"] >= 2 << 20, 20,
             what="the kernel's figure of 2M")
    # past the limit the kernel refuses the write
    st, j = run(d, alice, "sh", "-c", 'dd if=/dev/zero of="$HOME/b" bs=1M '
                'count=8')
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] != 0
    assert "Disk quota exceeded" in output(d, alice, j["id"])
    used = tenant(d, "alice")["disk"]["used"]
    wait_for(lambda: tenant(d, "alice")["disk"]["used"] >= 4 << 20, 20,
             what="the kernel's figure at the limit")
    used = tenant(d, "alice")["disk"]["used"]
    assert used <= (4 << 20) + (64 << 10), used
    # a larger --disk is the kernel's limit at once
    d.gmux("tenant", "quota", "alice", "--disk", "16M")
    st, j = run(d, alice, "sh", "-c", 'rm -f "$HOME/b"; dd if=/dev/zero '
                'of="$HOME/b" bs=1M count=8 2>/dev/null && echo ok')
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] == 0
    assert os.stat(t["home"]).st_uid == t["uid"]


@needs_root
def test_without_project_quotas_the_homes_are_walked(qhost):
    d = qhost("USER_DISK_LIMIT=4M\n")
    if tenants(d)["disk_method"] == "quota":
        pytest.skip("/tmp's filesystem has project quotas here")
    assert b"disk: measured by a walk" in d.gmux("tenant", "ls").stdout
    r = d.gmux("doctor", "--json")
    found = [f for f in json.loads(r.stdout) if f["check"] == "tenant disk"]
    assert len(found) == 1 and found[0]["status"] == "warn", found
    assert "no project quotas" in found[0]["detail"]


# -- nothing slow in the loop -------------------------------------------------


def _gate(tools, name, real):
    """tools/NAME: marks that it began, waits for the test's word (a file),
    then runs the real one.  Returns (began, go)."""
    began, go = tools / (name + ".began"), tools / (name + ".go")
    _tool(tools / name, ': > %s\nwhile [ ! -e %s ]; do sleep 0.02; done\n'
          'exec %s "$@"\n' % (began, go, real))
    return began, go


def _answers(d, what):
    """The daemon answers at once, over the Unix socket and TLS."""
    r = d.gmux("tenant", "ls", "--json", check=0, timeout=10)
    assert json.loads(r.stdout)["accounts"] is True, what
    assert d.gmux("ps", check=0, timeout=10).returncode == 0, what


def _warnings(d, text):
    with open(os.path.join(d.home, "gmux.log"), errors="replace") as f:
        return [x for x in f if text in x]


@needs_root
def test_an_accounts_end_and_its_ids_are_off_the_loop(qhost, tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    os.chmod(tmp_path, 0o755)
    gates = {n: _gate(tools, n, real) for n, real in (
        ("usermod", "/usr/sbin/usermod"), ("tar", "/bin/tar"),
        ("userdel", "/usr/sbin/userdel"))}
    d = qhost(start=False)
    d.env["PATH"] = "%s:%s" % (tools, d.env["PATH"])
    d.serve_tls()
    alice = d.token_for("alice")
    st, j = run(d, alice, "sh", "-c", 'echo kept > "$HOME/f"; id -un')
    assert st == 201, j
    # usermod gives the account its subordinate IDs: the job waits, the
    # daemon answers
    wait_for(gates["usermod"][0].exists, 60, what="usermod to begin")
    st, e = https_json(d.port, "GET", "/v1/jobs/%s/explain" % j["id"],
                       token=alice)
    assert st == 200 and e["explain"] == "%s queued: tenant: giving " \
        "alice's account its subordinate IDs" % j["id"], e
    _answers(d, "while usermod runs")
    gates["usermod"][1].touch()
    assert ended(d, alice, j["id"])["exit_code"] == 0
    assert output(d, alice, j["id"]).strip() == PREFIX + "alice"
    home = tenant(d, "alice")["home"]
    # tenant rm: the archive, then userdel, each while the daemon answers
    rm = d.popen("tenant", "rm", "alice", stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE)
    wait_for(gates["tar"][0].exists, 60, what="tar to begin")
    _answers(d, "while tar runs")
    assert tenant(d, "alice")["state"] == "active"
    gates["tar"][1].touch()
    wait_for(gates["userdel"][0].exists, 60, what="userdel to begin")
    _answers(d, "while userdel runs")
    gates["userdel"][1].touch()
    out, err = rm.communicate(timeout=120)
    assert rm.returncode == 0 and out == b"removed alice\n", (out, err)
    assert tenant(d, "alice") is None
    assert not os.path.exists(home)
    assert PREFIX + "alice" not in [p.pw_name for p in _mine()]
    arch = os.path.join(d.home, "tenants", "archive")
    [tarball] = os.listdir(arch)
    assert os.stat(os.path.join(arch, tarball)).st_mode & 0o777 == 0o600
    r = subprocess.run(["tar", "-xzOf", os.path.join(arch, tarball),
                        PREFIX + "alice/f"], capture_output=True)
    assert r.stdout == b"kept\n", r


@needs_root
def test_a_failing_removal_is_told_once_per_failure(qhost, tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    os.chmod(tmp_path, 0o755)
    _tool(tools / "userdel", 'echo "userdel: the test says no" >&2\n'
          'exit 8\n')
    d = qhost(start=False)
    d.env["PATH"] = "%s:%s" % (tools, d.env["PATH"])
    d.serve_tls()
    bob = d.token_for("bob")
    st, j = run(d, bob, "true")
    assert st == 201, j
    assert ended(d, bob, j["id"])["exit_code"] == 0
    why = "tenant: userdel %sbob failed: userdel: the test says no" % PREFIX
    # the CLI says why and stops waiting; the daemon says it once
    r = d.gmux("tenant", "rm", "bob", check=1, timeout=120)
    assert r.stderr.decode().startswith("gmux tenant: " + why), r.stderr
    assert tenant(d, "bob")["error"] == why
    wait_for(lambda: len(_warnings(d, why)) == 1, 20, what="the warning")
    # seconds later still once (the next try is a minute away): nothing
    # to wait for, what is asserted is that nothing more comes
    t0 = tenant(d, "bob")
    time.sleep(3)
    assert len(_warnings(d, why)) == 1, _warnings(d, why)
    assert tenant(d, "bob")["state"] == t0["state"] == "active"
    # tenant rm again tries at once: now it goes
    os.remove(tools / "userdel")
    r = d.gmux("tenant", "rm", "bob", check=0, timeout=120)
    assert r.stdout == b"removed bob\n", r
    assert tenant(d, "bob") is None
    assert len(_warnings(d, why)) == 1


# -- no orphan container of an account's --------------------------------------


def _names(pw, d, check=True):
    """d's containers in the store of the account pw; None if podman could
    not say (unchecked: its home is not made yet)."""
    r = podman_as(pw, "ps", "-a", "--filter", "label=gmux.home=" +
                  home_label(d), "--format", "{{.Names}}")
    assert r.returncode == 0 or not check, r.stderr
    return sorted(r.stdout.decode().split()) if r.returncode == 0 else None


@needs_root
def test_no_container_of_an_account_outlives_a_kill9(qhost, image):
    d = qhost()
    alice = d.token_for("alice")
    jobs = []
    for _ in range(2):
        st, j = run(d, alice, "sleep", "1000", image=image)
        assert st == 201, j
        jobs.append(j["id"])
    pw = wait_for(lambda: next((p for p in _mine()
                                if p.pw_name == PREFIX + "alice"), None),
                  60, what="alice's account")
    want = sorted("gmux-%s-%s" % (home_label(d), j) for j in jobs)
    wait_for(lambda: _names(pw, d, check=False) == want, 120,
             what="two containers")
    # the daemon, j1's keeper and its podman run die: its container, left
    # running under conmon in alice's store, is an orphan
    pid = d.job(jobs[0])["pid"]
    keeper = int(open("/proc/%d/stat" % pid).read().rpartition(")")[2]
                 .split()[1])
    d.kill9()
    os.kill(keeper, signal.SIGKILL)
    os.kill(pid, signal.SIGKILL)
    d.start(addr="127.0.0.1:%d" % d.port)
    assert d.wait_state(jobs[0], "failed", 30)
    assert d.job(jobs[1])["state"] == "running"     # re-adopted
    # the sweep, off the loop, removes the orphan as alice
    wait_for(lambda: _names(pw, d) == want[1:], 120, what="the sweep")
    # her last job's end: its container goes, and then her podman's pause
    # process and whatever else is left of her
    d.gmux("stop", jobs[1], check=0)
    d.wait_state(jobs[1], ("stopped", "exited"), 60)
    idle(pw.pw_uid)
    assert _names(pw, d) == []      # (after: podman would be killed too)
    # and her next container job runs (no stale pause process)
    st, j = run(d, alice, "echo", "again", image=image)
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] == 0, output(d, alice,
                                                            j["id"])
    assert output(d, alice, j["id"]) == "again\n"
    idle(pw.pw_uid)


@needs_root
def test_an_accounts_workspace_is_saved_into_its_store(qhost, image):
    d = qhost()
    alice = d.token_for("alice")
    st, w = run(d, alice, "sleep", "1000", image=image, workspace=True,
                name="dev")
    assert st == 201, w
    pw = wait_for(lambda: next((p for p in _mine()
                                if p.pw_name == PREFIX + "alice"), None),
                  60, what="alice's account")
    ctr = "gmux-%s-%s" % (home_label(d), w["id"])
    wait_for(lambda: _names(pw, d, check=False) == [ctr], 120,
             what="her workspace's container")
    r = podman_as(pw, "exec", ctr, "sh", "-c", "echo kept > /tmp/mark")
    assert r.returncode == 0, r.stderr
    saved = "localhost/gq-saved:" + home_label(d)
    # the host's admin saves it: committed as alice, into her store only
    r = d.gmux("workspace", "save", "dev", saved, check=0, timeout=300)
    assert r.stdout.decode() == saved + "\n", r
    assert podman_as(pw, "image", "exists", saved).returncode == 0
    assert subprocess.run(["podman", "image", "exists", saved],
                          capture_output=True).returncode != 0
    # her next workspace (a job in it here) starts from it
    st, j = run(d, alice, "cat", "/tmp/mark", image=saved)
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] == 0, output(d, alice,
                                                            j["id"])
    assert output(d, alice, j["id"]) == "kept\n"
    https_json(d.port, "POST", "/v1/jobs/%s/stop" % w["id"], token=alice)
    ended(d, alice, w["id"])
