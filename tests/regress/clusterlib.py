"""A real etcd for the cluster tests (Debian's etcd-server): N voting
members on free loopback ports, data in a temporary directory, started
and stopped by the test; and gmux members that join it."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import time
import urllib.request

import pytest

from conftest import GMUX, Daemon, _kill_keepers, free_port, wait_for
from conftest import etcd  # noqa: F401 (a fixture)

VERBOSE = ("-v",) if os.environ.get("GMUX_KEEP") else ()

# In a caller's script (its %(warm)s): the n workers of f's pool started,
# and connected, so the first leases go to every idle one, on both
# members; returns f's session.  here: counts those at the entry's broker
# alone.
WARM = textwrap.dedent("""\
    def warm(f, target, n=4, here=False):
        s = M.session(target)
        key = s.pool(f._opts, n)
        end = time.time() + 120
        while time.time() < end and len([w for w in s.api.workers(here)
                                         if w.pool == key]) < n:
            time.sleep(0.05)
        return s
""")


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


def joined(d, n):
    """Waits until d's cluster has n members."""
    wait_for(lambda: len(cluster_state(d)) == n, 30, 0.1,
             what="%d members" % n)


def https_json(d, method, path, token, body=None):
    """A request over d's TLS with a token: (status, JSON or the bytes)."""
    from remotelib import https
    st, _, data = https(d.port, method, path, json.dumps(body).encode()
                        if body is not None else b"", token=token)
    try:
        return st, json.loads(data)
    except ValueError:
        return st, data


def client_of(d, make_client, owner="alice"):
    """A machine without a daemon whose remote lab is member d, with a
    token of owner's (as gmux remote add gets one): (client, token)."""
    token = d.token_for(owner)
    c = make_client()
    r = c.add("lab", token + "@" + d.target.split("@", 1)[1])
    assert r.returncode == 0, r.stderr
    return c, token


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

# etcd, the one the members join, is conftest.py's (one for the tests in
# a row that use it), here too for the files that import it with these.

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


class Netns:
    """Two network namespaces of the test's own joined by a veth pair, the
    only addresses on it link-local ones inside them (169.254.77.1 and .2,
    a /30 routed nowhere else): etcd and one member in the first, another
    member in the second, cut off by bringing its end of the link down.
    Nothing is added to the host's own namespace."""

    NET = "169.254.77."

    def __init__(self):
        tag = "%d" % os.getpid()
        self.e, self.b = "gce" + tag, "gcb" + tag
        self.ve, self.vb = "gve" + tag, "gvb" + tag
        self.made = []

    @staticmethod
    def usable():
        """None if namespaces can be made here, else why not."""
        if os.geteuid() != 0:
            return "not root: ip netns needs CAP_SYS_ADMIN"
        if shutil.which("ip") is None:
            return "ip (iproute2) is not installed"
        name = "gcprobe%d" % os.getpid()
        r = subprocess.run(["ip", "netns", "add", name], capture_output=True)
        if r.returncode != 0:
            return "ip netns add failed: %s" % r.stderr.decode().strip()
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        return None

    def ip(self, ns, *args):
        cmd = ["ip"] + (["netns", "exec", ns, "ip"] if ns else []) + \
            list(args)
        subprocess.run(cmd, check=True, capture_output=True, timeout=30)

    def start(self):
        for ns in (self.e, self.b):
            self.ip(None, "netns", "add", ns)
            self.made.append(ns)
            self.ip(ns, "link", "set", "lo", "up")
        # made inside e, one end moved to b at once: never in the host's
        self.ip(self.e, "link", "add", self.ve, "type", "veth", "peer",
                "name", self.vb)
        self.ip(self.e, "link", "set", self.vb, "netns", self.b)
        self.ip(self.e, "addr", "add", self.NET + "1/30", "dev", self.ve)
        self.ip(self.b, "addr", "add", self.NET + "2/30", "dev", self.vb)
        self.ip(self.e, "link", "set", self.ve, "up")
        self.ip(self.b, "link", "set", self.vb, "up")
        return self

    def set_cut(self, cut):
        self.ip(self.b, "link", "set", self.vb, "down" if cut else "up")

    def stop(self):
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.made = []


def etcd_in(ns, tmp, port=2379):
    """A one-member etcd inside namespace ns.e, on its loopback and on its
    link-local end of the veth (its data under tmp)."""
    urls = "http://127.0.0.1:%d,http://%s1:%d" % (port, Netns.NET, port)
    p = "http://127.0.0.1:%d" % (port + 1)
    log = open(os.path.join(tmp, "etcd.log"), "wb")
    return subprocess.Popen(
        ["ip", "netns", "exec", ns.e, "etcd", "--name", "n0", "--data-dir",
         os.path.join(tmp, "etcd"), "--listen-client-urls", urls,
         "--advertise-client-urls", urls, "--listen-peer-urls", p,
         "--initial-advertise-peer-urls", p, "--initial-cluster",
         "n0=" + p, "--heartbeat-interval", "50", "--election-timeout",
         "500"], stdout=log, stderr=log)


def start_in(d, ns, fake):
    """d.start(), the daemon inside network namespace ns (its CLI reaches
    it through the Unix socket, which namespaces do not divide)."""
    cmd = ["ip", "netns", "exec", ns, GMUX, "serve", "-d", "--fake", fake]
    cmd += list(VERBOSE)
    r = subprocess.run(cmd, env=d.env, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    d.running = d.pid()
    return d
