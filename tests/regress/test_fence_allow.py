"""What the fence lets through: allowed addresses and names, by every
common client (blocking, non-blocking, asyncio, curl, urllib), names the
stub resolves (--add-host), the job's own AF_UNIX sockets, and a slow
connect that must not hold the supervisor up."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest

from fencelib import (PY, EchoServer, HttpServer, Listener, add_host, allow,
                      fenced, job_py)
from fencelib import jobdir_fixture  # noqa: F401 (the jobdir fixture)

ECHO = '''
import json, socket
def echo(host, port, blocking=True):
    s = socket.create_connection((host, port), timeout=None if blocking
                                 else 5)
    s.sendall(b"ping")
    data = s.recv(16).decode()
    s.close()
    return data
'''


@pytest.fixture
def echo():
    e = EchoServer()
    yield e
    e.close()


def test_blocking_and_nonblocking(jobdir, echo):
    code = ECHO + f'''
import fcntl, os
s = socket.socket()
s.connect(("127.0.0.1", {echo.port}))
nb = fcntl.fcntl(s.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK != 0
s.close()
print(json.dumps([echo("127.0.0.1", {echo.port}),
                  echo("127.0.0.1", {echo.port}, False), nb]))'''
    res = job_py(allow(f"127.0.0.1:{echo.port}"), code, jobdir)
    assert res == ["ping", "ping", False]


def test_cidr_and_ipv6(jobdir):
    v4, v6 = EchoServer("127.0.0.9"), EchoServer("::1")
    try:
        code = ECHO + f'''
print(json.dumps([echo("127.0.0.9", {v4.port}), echo("::1", {v6.port})]))'''
        res = job_py(allow("127.0.0.0/8", f"[::1]:{v6.port}"), code, jobdir)
        assert res == ["ping", "ping"]
    finally:
        v4.close()
        v6.close()


def test_asyncio(jobdir, echo):
    code = f'''
import asyncio, json
async def go():
    r, w = await asyncio.open_connection("127.0.0.1", {echo.port})
    w.write(b"ping")
    await w.drain()
    data = await r.read(16)
    w.close()
    return data.decode()
print(json.dumps(asyncio.run(go())))'''
    assert job_py(allow(f"127.0.0.1:{echo.port}"), code, jobdir) == "ping"


def test_curl(jobdir):
    h = HttpServer()
    try:
        r = fenced(allow(f"127.0.0.1:{h.port}"),
                   ["curl", "-sS", "-m", "5", f"http://127.0.0.1:{h.port}/"],
                   jobdir)
        assert r.returncode == 0 and r.stdout == "hello", r.stderr
    finally:
        h.close()


@pytest.fixture
def named():
    """An HTTP server on 127.0.0.5, reached by the name myapi.test."""
    h = HttpServer("127.0.0.5")
    yield h, allow(f"myapi.test:{h.port}") + add_host("myapi.test=127.0.0.5")
    h.close()


def test_urllib_by_name(jobdir, named):
    h, policy = named
    code = f'''
import json, socket, urllib.request
u = urllib.request.urlopen("http://myapi.test:{h.port}/", timeout=5)
try:
    socket.getaddrinfo("other.test", 80)
    other = "resolved"
except socket.gaierror as e:
    other = e.errno
print(json.dumps([u.status, u.read().decode(), other]))'''
    assert job_py(policy, code, jobdir) == [200, "hello", socket.EAI_NONAME]
    assert h.served == 1


def test_curl_and_asyncio_by_name(jobdir, named):
    h, policy = named
    r = fenced(policy, ["curl", "-sS", "-m", "5",
                        f"http://myapi.test:{h.port}/"], jobdir)
    assert r.returncode == 0 and r.stdout == "hello", r.stderr
    code = f'''
import asyncio, json
async def go():
    r, w = await asyncio.open_connection("myapi.test", {h.port})
    w.write(b"GET / HTTP/1.0\\r\\n\\r\\n")
    data = await r.read()
    w.close()
    return data.decode().split("\\r\\n")[0]
print(json.dumps(asyncio.run(go())))'''
    assert job_py(policy, code, jobdir) == "HTTP/1.0 200 OK"


def test_name_port_is_enforced(jobdir, named):
    """The pinned address is allowed on the name's port only."""
    h, policy = named
    other = Listener("127.0.0.5")
    try:
        code = f'''
import errno, json, socket
s = socket.socket()
try:
    s.connect(("myapi.test", {other.port}))
    r = "ok"
except OSError as e:
    r = errno.errorcode[e.errno]
print(json.dumps(r))'''
        assert job_py(policy, code, jobdir) == "ECONNREFUSED"
        assert other.count() == 0
    finally:
        other.close()


def test_host_resolver_names(jobdir, echo):
    """localhost comes from /etc/hosts through the supervisor's resolver."""
    code = ECHO + f'print(json.dumps(echo("127.0.0.1", {echo.port})))'
    assert job_py(allow(f"localhost:{echo.port}"), code, jobdir) == "ping"


def test_own_unix_sockets(jobdir):
    """Sockets the job binds itself, wherever (multiprocessing's in /tmp)."""
    script = jobdir / "mp.py"
    script.write_text('''
import json, multiprocessing as mp, os, socket, tempfile

def square(x):
    return x * x

if __name__ == "__main__":
    d = tempfile.mkdtemp()
    p = os.path.join(d, "own.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(p)
    srv.listen(1)
    c = socket.socket(socket.AF_UNIX)
    c.connect(p)
    a, _ = srv.accept()
    c.sendall(b"hi")
    got = a.recv(2).decode()
    mode = oct(os.stat(p).st_mode & 0o777)
    rel = socket.socket(socket.AF_UNIX)
    rel.bind("rel.sock")
    rel.listen(1)
    c2 = socket.socket(socket.AF_UNIX)
    c2.connect("./rel.sock")
    names = [rel.getsockname(), srv.getsockname() == p]
    with mp.Manager() as m:
        shared = m.dict()
        shared["a"] = 1
        v = shared["a"]
    with mp.get_context("forkserver").Pool(2) as pool:
        sq = pool.map(square, range(5))
    print(json.dumps([got, mode, v, sq, names]))
''')
    r = fenced(allow("127.0.0.1:1"), [PY, str(script)], jobdir, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res == ["hi", "0o755", 1, [0, 1, 4, 9, 16], ["rel.sock", True]]


def test_stats(jobdir, echo):
    stats = jobdir / "fence.json"
    code = ECHO + f'''
for port in (1, 2, 3):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        pass
print(json.dumps(echo("127.0.0.1", {echo.port})))'''
    r = fenced(allow(f"127.0.0.1:{echo.port}"), [PY, "-c", code], jobdir,
               stats=stats)
    assert r.returncode == 0, r.stderr
    st = json.loads(stats.read_text())
    assert st["fence"] == f"allow 127.0.0.1:{echo.port}"
    assert st["refused"] == 3 and st["allowed"] == 1
    assert st["last_refused"] == "127.0.0.1:3"
    assert oct(os.stat(stats).st_mode & 0o777) == "0o600"


def test_slow_connect_does_not_stall(jobdir, echo):
    """A blocking connect that hangs (SYNs dropped) holds up only itself:
    other threads' connects go through at once, and the hung one gives up
    at its SO_SNDTIMEO with EINPROGRESS, as Linux does."""
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    fillers = []
    for _ in range(4):      # fill the accept queue; later SYNs are dropped
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(full.getsockname())
        fillers.append(f)
    time.sleep(0.2)
    code = ECHO + f'''
import errno, struct, threading, time
out = {{}}
def hang():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 2, 0))
    t = time.monotonic()
    try:
        s.connect(("127.0.0.1", {full.getsockname()[1]}))
        out["hang"] = "ok"
    except OSError as e:
        out["hang"] = errno.errorcode[e.errno]
    out["hang_s"] = time.monotonic() - t
th = threading.Thread(target=hang)
th.start()
time.sleep(0.3)
t = time.monotonic()
out["echo"] = [echo("127.0.0.1", {echo.port}) for _ in range(20)]
out["echo_s"] = time.monotonic() - t
th.join()
print(json.dumps(out))'''
    try:
        res = job_py(allow("127.0.0.1"), code, jobdir)
    finally:
        for f in fillers:
            f.close()
        full.close()
    assert res["echo"] == ["ping"] * 20 and res["echo_s"] < 1.0
    assert res["hang"] == "EINPROGRESS" and 1.5 < res["hang_s"] < 4


def test_policy_as_json(jobdir, echo):
    """The fields a job request carries, as the keeper will get them."""
    code = ECHO + f'print(json.dumps(echo("127.0.0.1", {echo.port})))'
    req = json.dumps({"allow": [f"127.0.0.1:{echo.port}"]})
    assert job_py(["-j", req], code, jobdir) == "ping"
    r = fenced(["-j", '{"allow": ["x:0"]}'], ["true"], jobdir)
    assert r.returncode != 0
    assert "allow[0]: 'x:0': port 0 is not from 1 to 65535" in r.stderr
