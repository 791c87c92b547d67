"""bench/tenants-first.py N: N new tenants, each running two jobs in turn
over loopback TLS on a daemon with TENANT_ACCOUNTS=1 (root): the first
makes the tenant's account (groupadd, useradd, its home), the second
finds it.  The baseline is the same pair on a daemon with accounts off, in
the same run.  Each figure is POST /v1/jobs to the job's end, median.
Meanwhile a probe asks each daemon GET /v1/jobs on its Unix socket, one
request after the other (1 ms apart): the longest answer while a job runs is the
loop's longest pause then (the account is made off the loop: it should
be no longer for a first job than for a second)."""

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "regress"))
from conftest import Daemon, _kill_keepers  # noqa: E402
from remotelib import https_json  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from tenants_probe import Probe  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10
PREFIX = "gb%04x-" % random.randrange(0x10000)


def job(d, token, spans=None):
    t = time.monotonic()
    st, j = https_json(d.port, "POST", "/v1/jobs",
                       json.dumps({"argv": ["true"], "share": "0.25"})
                       .encode(), token=token)
    assert st == 201, j
    while https_json(d.port, "GET", "/v1/jobs/" + j["id"],
                     token=token)[1]["state"] in ("queued", "running"):
        time.sleep(0.001)
    if spans is not None:
        spans.append((t, time.monotonic()))
    return (time.monotonic() - t) * 1000


def daemon(accounts):
    h = tempfile.mkdtemp(prefix="gmb", dir="/tmp")
    with open(os.path.join(h, "config"), "w") as f:
        f.write("TENANT_ACCOUNTS=%d\nTENANT_HOME_ROOT=%s/homes\n"
                "TENANT_ACCOUNT_PREFIX=%s\n" % (accounts, h, PREFIX))
    d = Daemon(h)
    d.serve_tls()
    return d


def main():
    on, off = daemon(1), daemon(0)
    first, second, base1, base2 = [], [], [], []
    spans = {"first": [], "second": [], "base": []}
    probes = [Probe(on), Probe(off)]
    try:
        for p in probes:
            p.start()
        for i in range(N):
            name = "t%d" % i
            a, b = on.token_for(name), off.token_for(name)
            first.append(job(on, a, spans["first"]))
            base1.append(job(off, b, spans["base"]))
            second.append(job(on, a, spans["second"]))
            base2.append(job(off, b, spans["base"]))
    finally:
        for p in probes:
            p.done = True
            p.join()
        for d in (on, off):
            d.stop()
            _kill_keepers(d.home)
            shutil.rmtree(d.home, ignore_errors=True)
        for line in open("/etc/passwd"):
            name = line.split(":")[0]
            if name.startswith(PREFIX):
                subprocess.run(["userdel", "-r", "-f", name],
                               capture_output=True)
    med = statistics.median
    print("%d tenants, a job each twice (POST to its end), median ms:" % N)
    print("  accounts on:  first job %.1f (its account made), second %.1f"
          % (med(first), med(second)))
    print("  accounts off: first job %.1f, second %.1f (baseline)"
          % (med(base1), med(base2)))
    print("  the account's cost: %.1f ms (first - second); first/second "
          "%.2f; second on/off %.2f" % (med(first) - med(second),
                                        med(first) / med(second),
                                        med(second) / med(base2)))
    print("the loop's longest pause (a probe's longest answer), ms:")
    print("  accounts on:  during first jobs %.1f, during second %.1f; "
          "accounts off: %.1f (baseline); %d probes" % (
              probes[0].longest(spans["first"]),
              probes[0].longest(spans["second"]),
              probes[1].longest(spans["base"]),
              len(probes[0].seen) + len(probes[1].seen)))


main()
