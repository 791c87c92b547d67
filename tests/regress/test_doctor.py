"""gmux doctor: each check forced to fail for real (a tool missing from
PATH, a closed loopback port for etcd, a wrong pin against a real loopback
TLS host, a state file others may read) says so on one line with its fix,
and the exit code says whether what the config asks for can work."""

import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import free_port, wait_for


def doctor(c, *args, env=None):
    r = subprocess.run([c.gmux.__globals__["GMUX"], "doctor"] + list(args),
                       env=env or c.env, capture_output=True, text=True,
                       timeout=60)
    return r


def findings(c, env=None):
    r = doctor(c, "--json", env=env)
    return r.returncode, json.loads(r.stdout)


def one(checks, name):
    got = [f for f in checks if f["check"] == name]
    assert got, (name, checks)
    return got


def test_every_line_has_a_status_and_a_fix_when_not_ok(make_client):
    c = make_client()
    r = doctor(c)
    assert r.returncode == 0, r.stdout + r.stderr
    for line in r.stdout.splitlines():
        status = line.split()[0]
        assert status in ("ok", "warn", "fail"), line
        assert ("; fix: " in line) == (status != "ok"), line
    rc, checks = findings(c)
    names = {f["check"] for f in checks}
    for n in ("nvidia-smi", "mps", "rocm-smi", "xpu-smi", "landlock",
              "user namespaces", "seccomp notify", "podman", "disk",
              "state modes"):
        assert n in names, n
    for f in checks:
        assert ("fix" in f) == (f["status"] != "ok"), f
    r = doctor(c, "--jsn")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_a_missing_tool_is_named_with_its_fix(make_client, tmp_path):
    c = make_client()
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    env = dict(c.env, PATH=str(bin_))
    rc, checks = findings(c, env=env)
    smi = one(checks, "nvidia-smi")[0]
    assert smi["status"] == "warn" and "not found in PATH" in smi["detail"]
    assert "nvidia-smi" in smi["fix"]
    assert one(checks, "podman")[0]["status"] == "warn"
    assert rc == 0                      # nothing the config asks for
    tool = bin_ / "nvidia-smi"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    rc, checks = findings(c, env=env)
    smi = one(checks, "nvidia-smi")[0]
    assert smi == {"check": "nvidia-smi", "status": "ok",
                   "detail": str(tool)}


def test_an_unreachable_etcd_fails(make_client):
    c = make_client()
    port = free_port()                  # closed: nobody listens
    with open(os.path.join(c.home, "config"), "w") as f:
        f.write("ETCD=http://127.0.0.1:%d\n" % port)
    os.chmod(os.path.join(c.home, "config"), 0o600)
    r = doctor(c)
    assert r.returncode == 1
    line = [x for x in r.stdout.splitlines() if " etcd " in x][0]
    assert line.startswith("fail") and "127.0.0.1:%d" % port in line
    assert "fix: start etcd there" in line


@pytest.mark.skipif(shutil.which("etcd") is None, reason="no etcd")
def test_a_real_etcd_is_reachable(make_client, tmp_path):
    c = make_client()
    port, peer = free_port(), free_port()
    url = "http://127.0.0.1:%d" % port
    p = subprocess.Popen(
        ["etcd", "--data-dir", str(tmp_path / "etcd"),
         "--listen-client-urls", url, "--advertise-client-urls", url,
         "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
         "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
         "--initial-cluster", "default=http://127.0.0.1:%d" % peer],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(os.path.join(c.home, "config"), "w") as f:
            f.write("ETCD=%s\n" % url)
        os.chmod(os.path.join(c.home, "config"), 0o600)

        def up():
            return one(findings(c)[1], "etcd")[0]["status"] == "ok"
        wait_for(up, timeout=20, step=0.2, what="etcd")
        rc, checks = findings(c)
        assert rc == 0
        assert one(checks, "etcd")[0]["detail"].startswith(url + ": etcd 3")
    finally:
        p.terminate()
        p.wait()


def test_a_wrong_pin_and_a_wrong_token_fail(make_daemon, make_client):
    d = make_daemon()
    target = d.serve_tls()
    c = make_client()
    assert c.add("good", target).returncode == 0
    token, rest = target.split("@")
    pin = rest.split("#")[1]
    bad_pin = target[:-len(pin)] + ("0" if pin[0] != "0" else "1") + pin[1:]
    bad_token = ("A" if token[0] != "A" else "B") + target[1:]
    assert c.add("badpin", bad_pin, "--no-check").returncode == 0
    assert c.add("badtoken", bad_token, "--no-check").returncode == 0
    r = doctor(c)
    assert r.returncode == 1, r.stdout
    lines = {x.split()[1]: x for x in r.stdout.splitlines()}
    assert lines["good"].startswith("ok") and "gmux " in lines["good"]
    assert lines["badpin"].startswith("fail") and "pin" in lines["badpin"]
    assert "fix: " in lines["badpin"]
    assert lines["badtoken"].startswith("fail")
    assert "token refused" in lines["badtoken"]
    assert token not in r.stdout and token not in r.stderr
    d.stop()
    rc, checks = findings(c)
    good = one(checks, "good")[0]
    assert good["status"] == "fail" and "unreachable" in good["detail"]


def test_a_state_file_others_may_read_fails(make_client):
    c = make_client()
    path = os.path.join(c.home, "config")
    with open(path, "w") as f:
        f.write("JOB_RETENTION_DAYS=3\n")
    os.chmod(path, 0o644)
    os.chmod(c.home, 0o700)
    r = doctor(c)
    assert r.returncode == 1
    assert ("fail  state modes        %s is mode 0644: others may read it; "
            "fix: chmod 600 %s" % (path, path)) in r.stdout
    os.chmod(path, 0o600)
    assert doctor(c).returncode == 0
