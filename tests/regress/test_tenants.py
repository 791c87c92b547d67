"""Tenants (docs/tenants.md, issue 14): an OS account per owner on its first
job when the daemon is root and TENANT_ACCOUNTS=1, the same UID on every
member, quotas that wait or refuse with the reason, retention, what every
job may read, and the owners kept apart.  The accounts made here carry a
prefix unique to the run and are removed (userdel -r) in teardown; the
owner-separation half also runs with the daemon as an unprivileged user."""

import json
import os
import pathlib
import pwd
import random
import shutil
import signal
import stat
import subprocess
import tempfile

import pytest

from conftest import Daemon, GMUX, T0, free_port, wait_for, _kill_keepers
from remotelib import https, https_json
from test_shell import terms  # noqa: F401 (a fixture)

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="accounts need root")
PREFIX = "gt%04x-" % random.randrange(0x10000)


def _accounts():
    return [p.pw_name for p in pwd.getpwall()
            if p.pw_name.startswith(PREFIX)]


@pytest.fixture(autouse=True)
def no_accounts_left():
    yield
    for name in _accounts():
        subprocess.run(["userdel", "-r", "-f", name], capture_output=True)
        subprocess.run(["groupdel", name], capture_output=True)
    assert _accounts() == []


@pytest.fixture
def host():
    """make(extra config) -> a started daemon serving TLS with accounts."""
    made = []

    def make(extra="", accounts=True, clock=False, start=True):
        h = tempfile.mkdtemp(prefix="gm", dir="/tmp")
        d = Daemon(h)
        d.homes = os.path.join(h, "homes")
        conf = "TENANT_HOME_ROOT=%s\nTENANT_ACCOUNT_PREFIX=%s\n" % (
            d.homes, PREFIX)
        if accounts:
            conf += "TENANT_ACCOUNTS=1\n"
        with open(os.path.join(h, "config"), "w") as f:
            f.write(conf + extra)
        if clock:
            d.clock = os.path.join(h, "clock")
            set_clock(d, T0)
            d.env["GMUX_TEST_CLOCK"] = d.clock
            d.env["GMUX_TEST_CLOCK_OK"] = "1"
        made.append(d)
        if start:
            d.serve_tls()
        return d
    yield make
    for d in made:
        d.stop()
        _kill_keepers(d.home)
        shutil.rmtree(d.home, ignore_errors=True)


@pytest.fixture
def shared_dir():
    """A directory every account may cross (pytest's tmp_path is 0700)."""
    p = tempfile.mkdtemp(prefix="gts", dir="/tmp")
    os.chmod(p, 0o755)
    yield pathlib.Path(p)
    shutil.rmtree(p, ignore_errors=True)


def set_clock(d, ms):
    with open(d.clock + ".tmp", "w") as f:
        f.write(str(ms))
    os.rename(d.clock + ".tmp", d.clock)


def run(d, token, *argv, **kw):
    """POST /v1/jobs as token's owner; returns (status, job or error)."""
    body = dict(dict(argv=list(argv), share="0.25"), **kw)
    return https_json(d.port, "POST", "/v1/jobs", json.dumps(body).encode(),
                      token=token)


def ended(d, token, jid):
    wait_for(lambda: https_json(d.port, "GET", "/v1/jobs/" + jid,
                                token=token)[1]["state"]
             not in ("queued", "running"), 20, what=jid + " to end")
    return https_json(d.port, "GET", "/v1/jobs/" + jid, token=token)[1]


def output(d, token, jid):
    """The job's stdout and stderr, as its owner reads them."""
    st, _, body = https(d.port, "GET", "/v1/jobs/%s/log?raw=1" % jid,
                        token=token)
    assert st == 200, (st, body)
    return body.decode(errors="replace")


def tenants(d):
    return d.json("tenant", "ls", "--json")


def tenant(d, name):
    return next((t for t in tenants(d)["tenants"] if t["name"] == name), None)


# -- accounts (root) ----------------------------------------------------------


@needs_root
def test_first_job_makes_a_private_account(host):
    d = host()
    alice = d.token_for("alice")
    st, j = run(d, alice, "sh", "-c", 'id -u; id -G; echo "$HOME"; '
                'grep NoNewPrivs /proc/self/status')
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] == 0
    t = tenant(d, "alice")
    assert t["state"] == "active" and t["account"] == PREFIX + "alice"
    assert 200000 <= t["uid"] <= 299999 and t["gid"] == t["uid"]
    pw = pwd.getpwnam(PREFIX + "alice")
    assert pw.pw_uid == t["uid"] and pw.pw_shell == "/usr/sbin/nologin"
    assert pw.pw_dir == t["home"] == os.path.join(d.homes, PREFIX + "alice")
    st_home = os.stat(t["home"])
    assert stat.S_IMODE(st_home.st_mode) == 0o700
    assert st_home.st_uid == t["uid"]
    out = output(d, alice, j["id"]).split("\n")
    # its uid, no group but its own, its home, no new privileges
    assert out[0] == str(t["uid"]) and out[1] == str(t["gid"])
    assert out[2] == t["home"] and out[3].split() == ["NoNewPrivs:", "1"]
    # kept: a restarted daemon has the same record
    d.stop()
    d.start(addr="127.0.0.1:%d" % d.port)
    assert tenant(d, "alice")["uid"] == t["uid"]
    assert tenants(d)["accounts"] is True


def _tool(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


@needs_root
def test_the_account_is_made_off_the_loop(host, tmp_path):
    # useradd, wrapped (a directory first in the daemon's PATH), waits
    # for the test's word: the daemon must answer meanwhile
    tools, began, go = tmp_path / "tools", tmp_path / "began", tmp_path / "go"
    tools.mkdir()
    os.chmod(tmp_path, 0o755)
    _tool(tools / "useradd", ': > %s\nwhile [ ! -e %s ]; do sleep 0.02; '
          'done\nexec /usr/sbin/useradd "$@"\n' % (began, go))
    d = host(start=False)
    d.env["PATH"] = "%s:%s" % (tools, d.env["PATH"])
    d.serve_tls()
    alice = d.token_for("alice")
    st, j = run(d, alice, "id", "-u")
    assert st == 201 and j["state"] == "queued", j
    wait_for(began.exists, 30, what="useradd to begin")
    # the loop answers while the account is made: the job is held, saying
    # why, and one with --nowait waits too (it is not a question of fit)
    st, e = https_json(d.port, "GET", "/v1/jobs/%s/explain" % j["id"],
                       token=alice)
    assert st == 200 and e["explain"] == (
        "%s queued: tenant: making alice's account" % j["id"])
    r = d.gmux("explain", j["id"], check=0)
    assert b"making alice's account" in r.stdout
    st, j2 = run(d, alice, "id", "-un", no_wait=True)
    assert st == 201 and j2["state"] == "queued", j2
    assert [x["id"] for x in d.json("ps", "--json")
            if x["owner"] == "alice"] == [j["id"], j2["id"]]
    bob = d.token_for("bob")
    assert _accounts() == []
    go.touch()
    # made: both start, as her account
    assert ended(d, alice, j["id"])["exit_code"] == 0
    assert ended(d, alice, j2["id"])["exit_code"] == 0
    uid = pwd.getpwnam(PREFIX + "alice").pw_uid
    assert output(d, alice, j["id"]).strip() == str(uid)
    assert output(d, alice, j2["id"]).strip() == PREFIX + "alice"
    # a useradd that fails fails the job with its reason, told once: the
    # next job tries again
    _tool(tools / "useradd", 'echo "useradd: the test says no" >&2\n'
          'exit 1\n')
    st, jb = run(d, bob, "true")
    assert st == 201, jb
    e = ended(d, bob, jb["id"])
    assert e["state"] == "failed" and e["reason"] == (
        "tenant: useradd %sbob failed: useradd: the test says no" % PREFIX)
    assert PREFIX + "bob" not in _accounts()
    _tool(tools / "useradd", 'exec /usr/sbin/useradd "$@"\n')
    st, jb = run(d, bob, "id", "-un")
    assert st == 201, jb
    assert ended(d, bob, jb["id"])["exit_code"] == 0
    assert output(d, bob, jb["id"]).strip() == PREFIX + "bob"


@needs_root
def test_alice_cannot_reach_what_is_bobs(host):
    d = host()
    alice, bob = d.token_for("alice"), d.token_for("bob")
    st, jb = run(d, bob, "sh", "-c", 'echo bobs-secret > "$HOME/secret"; '
                 'echo bobs-output; exec sleep 60')
    assert st == 201, jb
    home = os.path.join(d.homes, PREFIX + "bob")
    wait_for(lambda: os.path.exists(os.path.join(home, "secret")), 15,
             what="bob's secret")
    # her job, as her account, cannot read his home (uid and jail both)
    st, ja = run(d, alice, "sh", "-c", "id -un; cat %s/secret || exit 3" %
                 home)
    assert st == 201, ja
    assert ended(d, alice, ja["id"])["exit_code"] == 3
    out = output(d, alice, ja["id"])
    assert "bobs-secret" not in out and "Permission denied" in out
    assert PREFIX + "alice" in out
    # nor, through the API, his job, log, output, pulls, stop or resize:
    # to her it is not there
    jid = jb["id"]
    _not_there(d, alice, jid)
    st, ps = https_json(d.port, "GET", "/v1/jobs?all=1", token=alice)
    assert st == 200 and [j["owner"] for j in ps] == ["alice"]
    # her usage is hers alone, and she may not ask for his
    st, u = https_json(d.port, "GET", "/v1/usage?by=owner", token=alice)
    assert st == 200 and "bob" not in json.dumps(u)
    # nor the tenants' routes (the host's socket only)
    st, j = https_json(d.port, "GET", "/v1/tenants", token=alice)
    assert st == 403
    st, j = https_json(d.port, "PATCH", "/v1/tenants/alice",
                       b'{"jobs": 100}', token=alice)
    assert st == 403
    assert https_json(d.port, "GET", "/v1/jobs/" + jid,
                      token=bob)[1]["state"] == "running"
    d.gmux("stop", jid, check=0)


def _uid_of(pid):
    try:
        return os.stat("/proc/" + pid).st_uid
    except OSError:
        return None


def kill_all_of(uids):
    """Ends, by pid, every process whose uid is in uids (a test's accounts'
    leftovers: Podman's pause process keeps its user namespace)."""
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        if _uid_of(pid) in uids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def idle(uid):
    """Waits for the daemon to end what is left of the account uid after its
    last job (Podman's pause process; a test's own process as it too)."""
    wait_for(lambda: not [p for p in os.listdir("/proc") if p.isdigit()
                          and _uid_of(p) == uid], 60,
             what="no process of uid %d" % uid)


def _as(uid, *argv):
    """argv run as uid (its own group, no other)."""
    return subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
                           "--clear-groups"] + list(argv),
                          capture_output=True, timeout=30)


@needs_root
@pytest.mark.skipif(shutil.which("tmux") is None or
                    shutil.which("setpriv") is None,
                    reason="needs tmux and setpriv")
def test_a_tenants_shell_runs_as_its_account(host, make_client, terms):
    from test_shell import SHELL, remote_client, started
    d = host()
    alice = remote_client(d, make_client, "alice")
    t = terms(alice.env, "shell", "--share", "0.25", "--", *SHELL)
    jid = started(d, t)
    t.keys("echo as-$(id -un)-$(id -G)", "Enter")
    pw = pwd.getpwnam(PREFIX + "alice")
    t.wait(r"(?m)^as-%s-%d$" % (pw.pw_name, pw.pw_gid))
    # the session's files are her account's, its directory hers alone
    tdir = os.path.join(d.home, "jobs", jid, "term")
    names = [tdir] + [os.path.join(tdir, n) for n in os.listdir(tdir)]
    assert {"cmd.sh", "tmux.conf", "tmux.sock", "ready"} <= set(
        os.listdir(tdir))
    assert {os.lstat(n).st_uid for n in names} == {pw.pw_uid}
    assert stat.S_IMODE(os.stat(tdir).st_mode) == 0o700
    # the tmux client the daemon runs for her is hers too, not root's
    clients = [p for p in os.listdir("/proc") if p.isdigit() and
               _cwd(p) == tdir and b"attach-session" in _cmdline(p)]
    assert clients and {os.stat("/proc/" + p).st_uid
                        for p in clients} == {pw.pw_uid}
    # bob's account reaches neither her files nor her session
    bobs = d.token_for("bob")
    st, jb = run(d, bobs, "true")
    assert st == 201, jb
    wait_for(lambda: PREFIX + "bob" in _accounts(), 30, what="bob's account")
    bob = pwd.getpwnam(PREFIX + "bob").pw_uid
    ended(d, bobs, jb["id"])
    idle(bob)   # what the daemon kills after his last job: not the probes
    r = _as(bob, "cat", os.path.join(tdir, "cmd.sh"))
    assert r.returncode != 0 and b"Permission denied" in r.stderr
    r = _as(bob, "tmux", "-S", os.path.join(tdir, "tmux.sock"), "ls")
    assert r.returncode != 0 and b"as-" not in r.stdout
    # nor through the API: her session is not his to attach
    r = remote_client(d, make_client, "bob").gmux("shell", jid)
    assert (r.returncode, r.stderr) == (1, b"gmux shell: no job %s\n" %
                                        jid.encode())
    t.keys("exit 4", "Enter")
    t.wait(r"CLIENT-EXIT=4")
    assert d.wait_state(jid, "exited")["exit_code"] == 4


def _cwd(pid):
    try:
        return os.readlink("/proc/%s/cwd" % pid)
    except OSError:
        return None


def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


@needs_root
def test_a_bad_account_name_is_refused_with_the_reason(host):
    d = host()
    r = d.gmux("token", "add", "Bad.Name")
    assert r.returncode != 0
    assert b"'Bad.Name' cannot be an account name" in r.stderr
    assert b"lower-case" in r.stderr
    r = d.gmux("token", "add", "a" * 40)
    assert b"32 characters at most" in r.stderr
    r = d.gmux("tenant", "quota", "Bad.Name", "--jobs", "1")
    assert r.returncode != 0 and b"cannot be an account name" in r.stderr
    # an invite made before accounts were on: its job is refused at once
    assert _accounts() == []


@needs_root
def test_a_removed_tenant_is_gone(host):
    d = host()
    alice = d.token_for("alice")
    st, j = run(d, alice, "sh", "-c", 'echo kept > "$HOME/notes"')
    assert st == 201
    ended(d, alice, j["id"])
    assert PREFIX + "alice" in _accounts()
    # a running job is stopped with its grace (its TERM trap runs and
    # writes in her home before it is archived); a process that left its
    # job's group is killed, so that userdel needs no -f
    st, j = run(d, alice, "sh", "-c", 'trap \'echo bye > "$HOME/bye"; '
                'exit 0\' TERM; setsid sleep 300 & echo up > "$HOME/up"; '
                'while :; do sleep 0.05; done')
    assert st == 201, j
    home = os.path.join(d.homes, PREFIX + "alice")
    wait_for(lambda: os.path.exists(os.path.join(home, "up")), 20,
             what="her job to run")
    uid = pwd.getpwnam(PREFIX + "alice").pw_uid
    r = d.gmux("tenant", "rm", "alice", check=0)
    assert r.stdout == b"removed alice\n", r
    assert _uid_procs(uid) == []
    assert d.job(j["id"])["state"] == "stopped"
    # her token no longer works, her account and home are gone, archived
    st, _ = https_json(d.port, "GET", "/v1/jobs", token=alice)
    assert st == 401
    assert _accounts() == [] and tenant(d, "alice") is None
    assert not os.path.exists(os.path.join(d.homes, PREFIX + "alice"))
    arch = os.path.join(d.home, "tenants", "archive")
    tars = os.listdir(arch)
    assert len(tars) == 1 and tars[0].startswith(PREFIX + "alice-")
    assert stat.S_IMODE(os.stat(os.path.join(arch, tars[0])).st_mode) == 0o600
    listing = subprocess.run(["tar", "-tzf", os.path.join(arch, tars[0])],
                             capture_output=True, check=True).stdout.decode()
    assert PREFIX + "alice/notes" in listing
    assert PREFIX + "alice/bye" in listing
    # the books keep her
    u = d.json("usage", "--by", "owner", "--json")
    assert "alice" in json.dumps(u)


def _uid_procs(uid):
    """The processes that run as uid."""
    found = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.stat("/proc/" + p).st_uid == uid:
                found.append(p)
        except OSError:
            pass
    return found


@needs_root
def test_mapped_to_an_existing_account(host):
    d = host()
    name = PREFIX + "x"
    subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name],
                   check=True)
    r = d.gmux("tenant", "map", "carol", "root")
    assert r.returncode != 0 and b"root's" in r.stderr
    r = d.gmux("tenant", "map", "carol", "nosuchuser" + PREFIX)
    assert r.returncode != 0 and b"no account" in r.stderr
    d.gmux("tenant", "map", "carol", name, check=0)
    carol = d.token_for("carol")
    st, j = run(d, carol, "id", "-un")
    assert st == 201
    ended(d, carol, j["id"])
    assert output(d, carol, j["id"]).strip() == name
    assert tenant(d, "carol")["state"] == "mapped"


@needs_root
def test_over_its_disk_limit_new_jobs_are_refused(host):
    d = host("TENANT_DISK_EVERY=1\n")
    alice = d.token_for("alice")
    d.gmux("tenant", "quota", "alice", "--disk", "1M", check=0)
    st, j = run(d, alice, "sh", "-c", 'head -c 3000000 /dev/zero > '
                '"$HOME/big"')
    assert st == 201
    ended(d, alice, j["id"])
    wait_for(lambda: tenant(d, "alice")["disk"]["used"] > 2900000, 15,
             what="alice's home measured")
    st, e = run(d, alice, "true")
    assert st == 409, e
    assert e["error"].startswith("quota: alice's home holds 2.9M") and \
        "its limit is 1M (--disk)" in e["error"]
    out = d.gmux("tenant", "ls", check=0).stdout.decode()
    assert "2.9M / 1M" in out


@needs_root
def test_an_inactive_tenant_is_archived(host):
    d = host("TENANT_RETENTION_DAYS=2\n", clock=True)
    alice = d.token_for("alice")
    st, j = run(d, alice, "sh", "-c", 'echo x > "$HOME/f"')
    ended(d, alice, j["id"])
    uid = tenant(d, "alice")["uid"]
    set_clock(d, T0 + 86400 * 1000)         # one day: kept
    set_clock(d, T0 + 3 * 86400 * 1000)     # three: archived
    wait_for(lambda: tenant(d, "alice")["state"] == "archived", 15,
             what="alice archived")
    assert _accounts() == []
    assert len(os.listdir(os.path.join(d.home, "tenants", "archive"))) == 1
    # back: the same UID, a fresh account
    st, j = run(d, alice, "id", "-u")
    assert st == 201, j
    ended(d, alice, j["id"])
    assert output(d, alice, j["id"]).strip() == str(uid)
    assert tenant(d, "alice")["state"] == "active"


# -- published read-only (any user) ------------------------------------------


def test_datasets_are_read_only_and_interpreters_named(host, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "set.txt").write_text("imagenet-ish\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(data, 0o777)        # the jail alone keeps writes out
    d = host("DATASETS_DIRECTORIES=%s:/nonexistent\nPYTHON_INTERPRETERS="
             "py3=/usr/bin/python3, other=/opt/none/bin/python3\n" % data,
             accounts=False)
    alice = d.token_for("alice")
    st, j = run(d, alice, "sh", "-c", "cat %s/set.txt; echo x > %s/new "
                "|| exit 3" % (data, data))
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] == 3
    assert output(d, alice, j["id"]).startswith("imagenet-ish\n")
    assert not (data / "new").exists()
    # a named interpreter: python is it, first in PATH, in GMUX_PYTHON
    st, j = run(d, alice, "python", "-c", "import os, sys; print("
                "sys.executable, os.environ['GMUX_PYTHON'])", python="py3")
    assert st == 201, j
    assert ended(d, alice, j["id"])["exit_code"] == 0
    assert output(d, alice, j["id"]).split() == ["/usr/bin/python3"] * 2
    st, e = run(d, alice, "python", python="py9")
    assert st == 422 and e["error"] == ("python: no interpreter 'py9' here "
                                        "(py3, other)")
    # the CLI's --python, on this host
    r = d.gmux("run", "--python", "py3", "--", "python3", "-c",
               "import sys; print(sys.executable)")
    assert r.returncode == 0 and r.stdout == b"/usr/bin/python3\n", r


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_datasets_are_read_only_for_local_jobs(host, shared_dir):
    data = shared_dir / "data"
    data.mkdir()
    (data / "set.txt").write_text("coco-ish\n")
    os.chmod(data, 0o777)        # the mount alone keeps writes out
    os.chmod(data / "set.txt", 0o666)
    d = host("DATASETS_DIRECTORIES=/nonexistent:%s\n" % data)
    script = ("id -un; cat {0}/set.txt; echo x > {0}/new || exit 3"
              .format(data))
    # a job from the socket, as the daemon's user (root): not confined
    r = d.gmux("run", "--", "sh", "-c", script)
    assert r.returncode == 3, r
    assert r.stdout == b"root\ncoco-ish\n"
    assert b"Read-only file system" in r.stderr
    # one as a tenant's account: a local user that is not the daemon's
    # (nobody, let through the socket's 0600 by DAC_OVERRIDE alone)
    body = json.dumps({"argv": ["sh", "-c", script.replace(
        "exit 3", "echo y >> %s/set.txt || exit 4" % data)],
        "share": "0.25", "cwd": "/"})
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup",
                        "--clear-groups", "--inh-caps=+dac_override",
                        "--ambient-caps=+dac_override", "curl", "-s",
                        "--unix-socket", d.socket, "-X", "POST",
                        "--data-binary", body, "http://gmux/v1/jobs"],
                       capture_output=True, timeout=30)
    j = json.loads(r.stdout)
    assert j["owner"] == "nobody", j
    wait_for(lambda: d.job(j["id"])["state"] not in ("queued", "running"),
             30, what=j["id"] + " to end")
    code, log = d.curl("GET", "/v1/jobs/%s/log?raw=1" % j["id"])
    assert d.job(j["id"])["exit_code"] == 4, log
    assert log.startswith(PREFIX + "nobody\ncoco-ish\n"), log
    assert log.count("Read-only file system") == 2
    assert sorted(os.listdir(data)) == ["set.txt"]
    assert (data / "set.txt").read_text() == "coco-ish\n"


# -- quotas (any user) --------------------------------------------------------


def test_a_job_over_its_jobs_quota_waits_with_the_reason(host):
    d = host(accounts=False)
    assert tenants(d)["accounts"] is False
    alice = d.token_for("alice")
    d.gmux("tenant", "quota", "alice", "--jobs", "1", check=0)
    st, j1 = run(d, alice, "sleep", "60")
    assert st == 201
    st, j2 = run(d, alice, "true")
    assert st == 201 and j2["state"] == "queued"
    st, e = https_json(d.port, "GET", "/v1/jobs/%s/explain" % j2["id"],
                       token=alice)
    assert e["explain"] == ("%s queued: quota: alice runs 1 jobs, its "
                            "limit (--jobs 1)" % j2["id"])
    # bob is not held by her quota
    bob = d.token_for("bob")
    st, jb = run(d, bob, "true")
    assert st == 201 and ended(d, bob, jb["id"])["exit_code"] == 0
    # --nowait is refused instead
    st, e = run(d, alice, "true", no_wait=True)
    assert st == 409 and e["error"].startswith("quota: alice runs 1 jobs")
    # a restarted daemon holds it still
    d.stop()
    d.start(addr="127.0.0.1:%d" % d.port)
    assert d.job(j2["id"])["state"] == "queued"
    st, e = https_json(d.port, "GET", "/v1/jobs/%s/explain" % j2["id"],
                       token=alice)
    assert "quota: alice runs 1 jobs" in e["explain"]
    https_json(d.port, "POST", "/v1/jobs/%s/stop" % j1["id"], token=alice)
    assert ended(d, alice, j2["id"])["exit_code"] == 0


def test_a_job_that_could_never_fit_its_quota_is_refused(host):
    d = host(accounts=False)
    alice = d.token_for("alice")
    r = d.gmux("tenant", "quota", "alice", "--share", "0.5", "--mem", "50G")
    assert r.returncode == 0, r.stderr
    st, e = run(d, alice, "true", share="0.75")
    assert st == 422 and e["error"] == ("quota: alice's share is 0.5 cards; "
                                        "the job asks 0.75")
    st, e = run(d, alice, "true", mem="60G")
    assert st == 422 and e["error"] == ("quota: alice's memory is 50G; the "
                                        "job asks 60G")
    st, j1 = run(d, alice, "sleep", "60", share="0.5")
    assert st == 201
    st, j2 = run(d, alice, "true")
    st, e = https_json(d.port, "GET", "/v1/jobs/%s/explain" % j2["id"],
                       token=alice)
    assert "quota: alice's jobs hold its share (--share 0.5)" in e["explain"]
    https_json(d.port, "POST", "/v1/jobs/%s/stop" % j1["id"], token=alice)
    assert ended(d, alice, j2["id"])["exit_code"] == 0


def test_a_job_without_mem_counts_its_default_cap(host):
    # no --mem: the job's cap is its share of the card's memory (80G
    # here), and that is what counts toward --mem, queued or running
    d = host(accounts=False)
    alice = d.token_for("alice")
    d.gmux("tenant", "quota", "alice", "--mem", "30G", check=0)
    st, e = run(d, alice, "true", share="0.5")
    assert st == 422 and e["error"] == ("quota: alice's memory is 30G; the "
                                        "job asks 40G")
    st, j1 = run(d, alice, "sleep", "60")          # 0.25: 20G
    assert st == 201 and j1["state"] == "running", j1
    st, j2 = run(d, alice, "true")
    assert st == 201 and j2["state"] == "queued", j2
    st, e = https_json(d.port, "GET", "/v1/jobs/%s/explain" % j2["id"],
                       token=alice)
    assert e["explain"] == ("%s queued: quota: alice's jobs hold its memory "
                            "(--mem 30G)" % j2["id"])
    st, j3 = run(d, alice, "true", mem="10G")      # 20G + 10G fits
    assert st == 201 and ended(d, alice, j3["id"])["exit_code"] == 0
    https_json(d.port, "POST", "/v1/jobs/%s/stop" % j1["id"], token=alice)
    assert ended(d, alice, j2["id"])["exit_code"] == 0


def test_tenant_commands_check_their_input(host):
    d = host(accounts=False)
    for args, what in ((("quota", "alice", "--share", "x"), b"share"),
                       (("quota", "alice", "--mem", "lots"), b"mem"),
                       (("quota", "alice", "--jobs", "-1"), b"--jobs"),
                       (("quota", "alice"), b"--share, --mem"),
                       (("quota", "a/b", "--jobs", "1"), b"NAME"),
                       (("frob",), b"ls, quota")):
        r = d.gmux("tenant", *args)
        assert r.returncode == 2 and what in r.stderr, (args, r.stderr)
        assert len(r.stderr.splitlines()) == 1
    assert d.gmux("tenant", "--help", check=0).stdout.startswith(b"usage:")
    code, body = d.curl("PATCH", "/v1/tenants/alice", '{"frob": 1}')
    assert code == 400 and "frob: no such field" in body
    code, body = d.curl("PATCH", "/v1/tenants/alice", '{"mem": "lots"}')
    assert code == 400 and json.loads(body)["error"].startswith("mem: ")
    code, body = d.curl("PATCH", "/v1/tenants/alice", '{"share": "99"}')
    assert code == 400 and json.loads(body)["error"].startswith("share: ")
    code, body = d.curl("PUT", "/v1/tenants/alice/user", '{}')
    assert code == 400 and "user" in body
    out = d.gmux("tenant", "ls", check=0).stdout.decode()
    assert out.startswith("accounts: off (TENANT_ACCOUNTS=0)")


def _not_there(d, token, jid):
    """Every route of job jid answers token 404 "no job jid"."""
    for method, path, body in (
            ("GET", "", b""), ("GET", "/status", b""), ("GET", "/log", b""),
            ("GET", "/explain", b""), ("GET", "/terminal", b""),
            ("POST", "/pull", b'{"globs":["*"]}'),
            ("PATCH", "", b'{"share":"0.5"}'), ("POST", "/stop", b"")):
        st, _, reply = https(d.port, method, "/v1/jobs/%s%s" % (jid, path),
                             body, token=token,
                             headers={"Upgrade": "gmux-term/1"})
        assert (st, json.loads(reply)) == (404, {"error": "no job " +
                                                 jid}), (method, path)


def test_another_owners_jobs_are_not_there(host):
    # not 403 "j1 is root's": another owner's job, array or element is no
    # job to a token (404 as for none), on every route; the host sees all
    d = host(accounts=False)
    arr = d.gmux("run", "-d", "--array", "0-9", "--share", "1", "--",
                 "sleep", "60", check=0).stdout.decode().strip()
    wait_for(lambda: d.job(arr + "_0").get("state") == "running", 20,
             what="the array's first element")
    alice = d.token_for("alice")
    for name in (arr, arr + "_0", arr + "_5"):
        _not_there(d, alice, name)
    # her stop of an element not made yet did not stop it
    st = d.json("status", "--json", arr)
    states = {e["index"]: e["state"] for e in st["elements"]}
    assert states[0] == "running" and states[5] == "pending", states
    assert d.job(arr + "_0")["state"] == "running"
    d.gmux("stop", arr, check=0)


# -- the owners kept apart, the daemon unprivileged ---------------------------


@pytest.mark.skipif(not ROOT or shutil.which("setpriv") is None,
                    reason="needs root to start a daemon as another user")
def test_owners_apart_with_an_unprivileged_daemon(host, shared_dir):
    data = shared_dir / "data"
    data.mkdir()
    (data / "set.txt").write_text("coco-ish\n")
    os.chmod(data, 0o777)
    d = host("DATASETS_DIRECTORIES=%s\n" % data, accounts=True, start=False)
    nobody = pwd.getpwnam("nobody")
    for dirpath, dirs, files in os.walk(d.home):
        for n in [dirpath] + [os.path.join(dirpath, f) for f in files]:
            os.chown(n, nobody.pw_uid, nobody.pw_gid)
    os.chown(d.home, nobody.pw_uid, nobody.pw_gid)
    d.port = free_port()
    cmd = ["setpriv", "--reuid=%d" % nobody.pw_uid,
           "--regid=%d" % nobody.pw_gid, "--clear-groups", GMUX, "serve",
           "-d", "--fake", "1xH100:80G", "--addr", "127.0.0.1:%d" % d.port]
    r = subprocess.run(cmd, env=d.env, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    d.running = d.pid()
    assert os.stat("/proc/%d" % d.running).st_uid == nobody.pw_uid
    alice, bob = d.token_for("alice"), d.token_for("bob")
    st, jb = run(d, bob, "sh", "-c", "echo bobs-output; exec sleep 60")
    assert st == 201, jb
    st, ja = run(d, alice, "id", "-u")
    assert ended(d, alice, ja["id"])["exit_code"] == 0
    # nothing attempted: her job ran as the daemon's user
    assert output(d, alice, ja["id"]).strip() == str(nobody.pw_uid)
    assert _accounts() == []
    assert tenants(d)["why"] == "the daemon is not root"
    out = d.gmux("tenant", "ls", check=0).stdout.decode()
    assert out.startswith("accounts: off (the daemon is not root)")
    for method, path in (("GET", "/v1/jobs/" + jb["id"]),
                         ("GET", "/v1/jobs/%s/log" % jb["id"]),
                         ("POST", "/v1/jobs/%s/stop" % jb["id"])):
        st, _, body = https(d.port, method, path, token=alice)
        assert st == 404 and b"bobs-output" not in body
    st, u = https_json(d.port, "GET", "/v1/usage?by=owner", token=alice)
    assert "bob" not in json.dumps(u)
    https(d.port, "POST", "/v1/jobs/%s/stop" % jb["id"], token=bob)
    # a job from the socket, not confined, as the unprivileged daemon's
    # user: the datasets are read-only in its user and mount namespace
    r = subprocess.run([GMUX, "run", "--", "sh", "-c", "id -u; cat "
                        "%s/set.txt; echo x > %s/new || exit 3" % (data, data)],
                       env=d.env, cwd="/", capture_output=True, timeout=60)
    assert r.returncode == 3, r
    assert r.stdout == b"%d\ncoco-ish\n" % nobody.pw_uid
    assert b"Read-only file system" in r.stderr
    assert os.listdir(data) == ["set.txt"]


# -- the same UID on every member (a real etcd) -------------------------------


@needs_root
@pytest.mark.skipif(shutil.which("etcd") is None,
                    reason="etcd-server is not installed")
def test_bobs_uid_is_the_same_on_two_members(host):
    from clusterlib import Etcd
    e = Etcd(1).start()
    try:
        # a UID derived for bob is taken on this cluster by someone else:
        # the allocation must move on, and both members must agree
        lo = 200000
        ds = []
        for name in ("m1", "m2"):
            d = host("CLUSTER_MODE=member\nCLUSTER_ID=tn\nETCD=%s\nNAME=%s\n"
                     "TENANT_UID_RANGE=%d-%d\n" % (e.urls, name, lo, lo + 9),
                     start=False)
            d.serve_tls()
            ds.append(d)
        taken = _derived(ds[0], "bob")
        e.put("/gmux/tn/t/byuid/%d" % taken, "someone")
        uids = []
        for d in ds:
            bob = d.token_for("bob")
            st, j = run(d, bob, "id", "-u")
            assert st == 201, j
            assert ended(d, bob, j["id"])["exit_code"] == 0
            uids.append(int(output(d, bob, j["id"])))
            assert tenant(d, "bob")["uid"] == uids[-1]
            # both members are on this one machine, bob's UID the same on
            # each: m1 ends what is left of bob after his last job, and
            # would kill m2's job with it (members are machines apart)
            idle(uids[-1])
        assert uids[0] == uids[1] != taken and lo <= uids[0] <= lo + 9
        keys = e.get_prefix("/gmux/tn/t/")
        assert json.loads(keys["/gmux/tn/t/uid/bob"]) == {"uid": uids[0]}
        assert keys["/gmux/tn/t/byuid/%d" % uids[0]] == "bob"
    finally:
        e.stop()


@needs_root
@pytest.mark.skipif(shutil.which("etcd") is None,
                    reason="etcd-server is not installed")
def test_a_uid_the_cluster_cannot_give_fails_its_jobs(host):
    from clusterlib import Etcd
    e = Etcd(1).start()
    try:
        lo = 200000
        d = host("CLUSTER_MODE=member\nCLUSTER_ID=tf\nETCD=%s\nNAME=m1\n"
                 "TENANT_UID_RANGE=%d-%d\n" % (e.urls, lo, lo), start=False)
        d.serve_tls()
        e.put("/gmux/tf/t/byuid/%d" % lo, "someone")
        carol = d.token_for("carol")
        st, j = run(d, carol, "true", no_wait=True)
        assert st == 201, j      # held while asked, --nowait or not
        j = ended(d, carol, j["id"])
        assert (j["state"], j["reason"]) == (
            "failed", "tenant: TENANT_UID_RANGE is full in the cluster")
        assert _accounts() == []
    finally:
        e.stop()


def _derived(d, name):
    """The UID a standalone host derives for name (docs/tenants.md)."""
    h = 2166136261
    for c in name.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return 200000 + h % 10
