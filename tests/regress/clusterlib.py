"""A real etcd for the cluster tests (Debian's etcd-server): N voting
members on free loopback ports, data in a temporary directory, started
and stopped by the test; and gmux members that join it."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest

from conftest import GMUX, Daemon, _kill_keepers, free_port, wait_for

VERBOSE = ("-v",) if os.environ.get("GMUX_KEEP") else ()


class Etcd:
    def __init__(self, n=3):
        self.dir = tempfile.mkdtemp(prefix="gmux-etcd.")
        self.n = n
        self.procs = []
        self.clients = [free_port() for _ in range(n)]
        self.peers = [free_port() for _ in range(n)]

    @property
    def urls(self):
        return ",".join("http://127.0.0.1:%d" % p for p in self.clients)

    def start(self):
        cluster = ",".join("e%d=http://127.0.0.1:%d" % (i, p)
                           for i, p in enumerate(self.peers))
        for i in range(self.n):
            c = "http://127.0.0.1:%d" % self.clients[i]
            p = "http://127.0.0.1:%d" % self.peers[i]
            log = open(os.path.join(self.dir, "e%d.log" % i), "wb")
            self.procs.append(subprocess.Popen(
                ["etcd", "--name", "e%d" % i,
                 "--data-dir", os.path.join(self.dir, "e%d" % i),
                 "--listen-client-urls", c, "--advertise-client-urls", c,
                 "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                 "--initial-cluster", cluster,
                 "--initial-cluster-token", os.path.basename(self.dir),
                 "--heartbeat-interval", "50", "--election-timeout", "500"],
                stdout=log, stderr=log))
        wait_for(self.healthy, 30, 0.1, what="etcd to serve")
        return self

    def healthy(self):
        try:
            self.call("/v3/kv/range", {"key": b64("/")})
            return True
        except OSError:
            return False

    def call(self, path, body, port=None):
        url = "http://127.0.0.1:%d%s" % (port or self.clients[0], path)
        req = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    def put(self, key, value):
        self.call("/v3/kv/put", {"key": b64(key), "value": b64(value)})

    def get_prefix(self, prefix):
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        r = self.call("/v3/kv/range", {"key": b64(prefix),
                                        "range_end": b64(end)})
        return {unb64(kv["key"]): unb64(kv.get("value", ""))
                for kv in r.get("kvs", [])}

    def kill_leader(self):
        """kill -9 of etcd's raft leader; returns its index."""
        for i, port in enumerate(self.clients):
            st = self.call("/v3/maintenance/status", {}, port)
            if st.get("leader") == st["header"]["member_id"]:
                self.procs[i].kill()
                self.procs[i].wait()
                return i
        raise AssertionError("etcd has no leader")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def b64(s):
    return base64.b64encode(s.encode()).decode()


def unb64(s):
    return base64.b64decode(s).decode()


def member(tmp, etcd, name, cid="c1", fake="1xH100:80G", extra="",
           dirname=None):
    """A gmux daemon configured as a member of cluster cid (not started)."""
    home = os.path.join(str(tmp), dirname or name)
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config"), "w") as f:
        f.write("CLUSTER_MODE=member\nCLUSTER_ID=%s\nETCD=%s\nNAME=%s\n%s"
                % (cid, etcd.urls if etcd else "http://127.0.0.1:1", name,
                   extra))
    d = Daemon(home)
    d.fake = fake
    return d


def cluster_state(d):
    return json.loads(d.gmux("cluster", "ls", "--json", check=0).stdout)


def leader(d):
    r = d.gmux("cluster", "leader", "--json")
    if r.returncode != 0:
        return None
    return json.loads(r.stdout).get("name")


def jobs(d):
    r = d.gmux("cluster", "ps", "--json")
    if r.returncode != 0:
        return None
    return {j["id"]: j for j in json.loads(r.stdout)}


class Cut:
    """A TCP relay on loopback in front of etcd, to cut a member off: while
    cut, it forwards nothing and answers nothing (as a partition does);
    healed, it drops what it held and forwards again."""

    def __init__(self, port):
        import socket
        import threading
        self.target = port
        self.cut = False
        self.conns = []
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        import threading
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b),
                                 daemon=True).start()

    def _pump(self, a, b):
        while True:
            while self.cut:
                time.sleep(0.02)
            try:
                data = a.recv(65536)
            except OSError:
                data = b""
            if self.cut:        # what came while cut is lost with it
                continue
            if not data:
                break
            try:
                b.sendall(data)
            except OSError:
                break
        for s in (a, b):
            try:
                s.close()
            except OSError:
                pass

    def set_cut(self, cut):
        if not cut:
            with self.lock:
                conns, self.conns = self.conns, []
            for s in conns:
                try:
                    s.shutdown(2)
                except OSError:
                    pass
        self.cut = cut

    def close(self):
        self.ls.close()
        self.set_cut(False)


def mod_revision(etcd, key):
    r = etcd.call("/v3/kv/range", {"key": b64(key)})
    kvs = r.get("kvs", [])
    return int(kvs[0]["mod_revision"]) if kvs else None


# The fixtures the test_cluster*.py files share (imported by name there).

@pytest.fixture(scope="module")
def etcd():
    e = Etcd(3).start()
    yield e
    e.stop()


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="gc", dir="/tmp")
    yield d
    if not os.environ.get("GMUX_KEEP"):    # to read the members' logs
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def members(tmp, etcd):
    made = []

    def make(name, cid, fake="1xH100:80G", start=True, extra="",
             dirname=None, tls=False):
        """tls: it serves TLS on loopback too, as members reach each
        other (docs/cluster.md, "Members calling members")."""
        d = member(tmp, etcd, name, cid, fake, extra, dirname)
        made.append(d)
        if start and tls:
            d.serve_tls(*VERBOSE, fake=fake)
        elif start:
            d.start(*VERBOSE, fake=fake)
        return d
    yield make
    for d in made:
        if d.running is not None and os.path.exists("/proc/%d" % d.running):
            d.stop()
        _kill_keepers(d.home)


def submit(d, cwd, *cmd, flags=("--share", "0.25")):
    r = subprocess.run([GMUX, "cluster", "submit"] + list(flags) + ["--"] +
                       list(cmd), env=d.env, cwd=cwd, capture_output=True,
                       timeout=30)
    return r
