"""bench/tenants-rm.py FILES [BASE]: the daemon's loop during gmux tenant
rm of a tenant whose home holds FILES files (its archive with tar,
userdel, the home's removal), on this build's daemon and, as the
baseline in the same run, on BASE's (another build of gmux, main's for
one).  A probe asks the daemon GET /v1/jobs on its Unix socket one request
after the other (1 ms apart): the longest answer begun during the rm is
the loop's longest pause then; the idle figure is the same probe before
it.  Root (accounts)."""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "regress"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import conftest  # noqa: E402
from conftest import Daemon, _kill_keepers  # noqa: E402
from remotelib import https_json  # noqa: E402
from tenants_probe import Probe  # noqa: E402

FILES = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
BASE = sys.argv[2] if len(sys.argv) > 2 else None
PREFIX = "gb%04x-" % random.randrange(0x10000)


def fill(home, n, uid):
    """n files of 1 KiB under home, 1,000 to a directory, the account's."""
    for i in range(n):
        d = os.path.join(home, "d%03d" % (i // 1000))
        if i % 1000 == 0:
            os.mkdir(d)
            os.chown(d, uid, uid)
        p = os.path.join(d, "f%d" % i)
        with open(p, "wb") as f:
            f.write(b"x" * 1024)
        os.chown(p, uid, uid)


def one(gmux):
    conftest.GMUX = gmux
    h = tempfile.mkdtemp(prefix="gmb", dir="/tmp")
    with open(os.path.join(h, "config"), "w") as f:
        f.write("TENANT_ACCOUNTS=1\nTENANT_HOME_ROOT=%s/homes\n"
                "TENANT_ACCOUNT_PREFIX=%s\n" % (h, PREFIX))
    d = Daemon(h)
    d.serve_tls()
    try:
        tok = d.token_for("alice")
        st, j = https_json(d.port, "POST", "/v1/jobs", json.dumps(
            {"argv": ["true"], "share": "0.25"}).encode(), token=tok)
        assert st == 201, j
        d.wait_state(j["id"], ("exited",), timeout=120)
        t = [x for x in d.json("tenant", "ls", "--json")["tenants"]
             if x["name"] == "alice"][0]
        fill(t["home"], FILES, t["uid"])
        p = Probe(d)
        p.start()
        a = time.monotonic()
        time.sleep(1)
        b = time.monotonic()
        r = subprocess.run([gmux, "tenant", "rm", "alice"], env=d.env,
                           capture_output=True, timeout=1200)
        c = time.monotonic()
        p.done = True
        p.join()
        assert r.returncode == 0, r.stderr
        return p.longest([(a, b)]), p.longest([(b, c)]), (c - b) * 1000
    finally:
        d.stop()
        _kill_keepers(d.home)
        shutil.rmtree(d.home, ignore_errors=True)
        for name in [x.split(":")[0] for x in open("/etc/passwd")
                     if x.startswith(PREFIX)]:
            subprocess.run(["userdel", "-r", "-f", name],
                           capture_output=True)


def main():
    here = os.path.join(ROOT, "build", "gmux")
    runs = [("this", here)] + ([("base", BASE)] if BASE else [])
    got = {}
    for name, gmux in runs:
        idle, during, wall = one(gmux)
        got[name] = during
        print("%-5s tenant rm of %d files: %.0f ms; the loop's longest "
              "pause %.1f ms (idle %.1f ms)" % (name, FILES, wall, during,
                                                 idle))
    if BASE:
        print("longest pause, this / base: %.2g" % (got["this"] /
                                                   got["base"]))


if __name__ == "__main__":
    main()
