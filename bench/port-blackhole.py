"""bench/port-blackhole.py [N] [BASE]: the daemon's loop while N requests
for a published port that accepts nothing (a listener whose backlog is
full: the kernel drops the SYN) wait for their connect, one after the
other, on this build's daemon and, as the baseline in the same run, on
BASE's (another build of gmux, main's for one).  A probe asks GET /v1/jobs
on the Unix socket one request after the other (bench/tenants_probe.py):
the longest answer begun during the port requests is the loop's longest
pause then; the idle figure is the same probe before them."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "regress"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import conftest  # noqa: E402
from conftest import Daemon, _kill_keepers, free_port  # noqa: E402
from tenants_probe import Probe  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3
BASE = sys.argv[2] if len(sys.argv) > 2 else None


def port_request(d, jid, port):
    """One port request on d's socket; seconds to its answer."""
    t = time.monotonic()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(d.socket)
        s.sendall(b"GET /v1/jobs/%s/port?port=%d HTTP/1.1\r\nHost: gmux\r\n"
                  b"Upgrade: gmux-port/1\r\nConnection: close\r\n\r\n" % (
                      jid.encode(), port))
        while s.recv(65536):
            pass
    return time.monotonic() - t


def one(gmux):
    conftest.GMUX = gmux
    h = tempfile.mkdtemp(prefix="gmb", dir="/tmp")
    d = Daemon(h)
    d.start()
    port = free_port()
    hole = socket.socket()
    hole.bind(("127.0.0.1", port))
    hole.listen(0)
    fill = socket.create_connection(("127.0.0.1", port))
    try:
        r = subprocess.run([gmux, "run", "-d", "--publish", str(port), "--",
                            "sleep", "600"], env=d.env, capture_output=True,
                           timeout=60, check=True)
        jid = r.stdout.decode().strip().split(":")[-1]
        d.wait_state(jid, "running", timeout=60)
        p = Probe(d)
        p.start()
        a = time.monotonic()
        time.sleep(1)
        b = time.monotonic()
        each = [port_request(d, jid, port) for _ in range(N)]
        c = time.monotonic()
        p.done = True
        p.join()
        return p.longest([(a, b)]), p.longest([(b, c)]), max(each) * 1000
    finally:
        fill.close()
        hole.close()
        d.stop()
        _kill_keepers(d.home)
        shutil.rmtree(d.home, ignore_errors=True)


def main():
    here = os.path.join(ROOT, "build", "gmux")
    runs = [("this", here)] + ([("base", BASE)] if BASE else [])
    got = {}
    for name, gmux in runs:
        idle, during, wait = one(gmux)
        got[name] = during
        print("%-5s %d blackholed port requests (each answered in %.0f ms "
              "at most): the loop's longest pause %.1f ms (idle %.1f ms)" %
              (name, N, wait, during, idle))
    if BASE:
        print("longest pause, this / base: %.2g" % (got["this"] /
                                                   got["base"]))


if __name__ == "__main__":
    main()
