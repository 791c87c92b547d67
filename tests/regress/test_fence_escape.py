"""The fence's escape suite: every way out we know of, tried from inside.

Each case asserts that a loopback listener was NOT reached, and where the
attempt can work at all, a control run without the fence shows that it
does reach the listener (so a pass means the fence stopped it, not that
the attempt was broken).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from fencelib import (PY, VIA_GMUX, Listener, UdpListener, UnixDgramRelay,
                      UnixListener, allow, as_job_user, fenced, job_py,
                      make_jobdir, rmtree, tool)
from fencelib import jobdir_fixture  # noqa: F401 (the jobdir fixture)

CONNECT = '''
import errno, json, socket
def attempt(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port))
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
'''


def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return max(libc.syscall(444, None, 0, 1), 0)


@pytest.fixture
def listeners():
    made: list = []

    def make(kind=Listener, *args):
        listener = kind(*args)
        made.append(listener)
        return listener
    yield make
    for listener in made:
        listener.close()


def test_denied_port(jobdir, listeners):
    ok, no = listeners(), listeners()
    code = CONNECT + (f'print(json.dumps([attempt("127.0.0.1", {ok.port}),'
                      f' attempt("127.0.0.1", {no.port})]))')
    res = job_py(allow(f"127.0.0.1:{ok.port}"), code, jobdir)
    assert res == ["ok", "ECONNREFUSED"]
    assert ok.count() == 1 and no.count() == 0
    assert job_py(None, code, jobdir) == ["ok", "ok"]
    assert no.count() == 1


def test_ipv6_and_mapped_forms(jobdir, listeners):
    ok, no, v6 = listeners(), listeners(), listeners(Listener, "::1")
    code = CONNECT + f'''
A6 = socket.AF_INET6
print(json.dumps([
    attempt("::ffff:127.0.0.1", {no.port}, A6),
    attempt("::1", {v6.port}, A6),
    attempt("0.0.0.0", {no.port}),
    attempt("127.1", {no.port}),
    attempt("::ffff:127.0.0.1", {ok.port}, A6),
]))'''
    policy = allow(f"127.0.0.1:{ok.port}", f"[::1]:{ok.port}")
    res = job_py(policy, code, jobdir)
    assert res == ["ECONNREFUSED"] * 4 + ["ok"]
    assert no.count() == 0 and v6.count() == 0 and ok.count() == 1
    assert job_py(None, code, jobdir) == ["ok"] * 5
    assert no.count() == 3 and v6.count() == 1


def test_nonblocking_connect(jobdir, listeners):
    ok, no = listeners(), listeners()
    code = f'''
import errno, fcntl, json, os, select, socket
def nb(port, inheritable=False):
    s = socket.socket()
    s.setblocking(False)
    os.set_inheritable(s.fileno(), inheritable)
    r = s.connect_ex(("127.0.0.1", port))
    first = errno.errorcode.get(r, "0")
    if r == errno.EINPROGRESS:
        select.select([], [s], [], 5)
        r = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    fl = fcntl.fcntl(s.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK != 0
    cx = fcntl.fcntl(s.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC != 0
    return [first, errno.errorcode.get(r, "0"), fl, cx]
print(json.dumps([nb({no.port}), nb({ok.port}), nb({ok.port}, True)]))
'''
    res = job_py(allow(f"127.0.0.1:{ok.port}"), code, jobdir)
    assert res[0][1] == "ECONNREFUSED"
    assert res[1] == ["EINPROGRESS", "0", True, True]
    assert res[2] == ["EINPROGRESS", "0", True, False]
    assert no.count() == 0 and ok.count() == 2
    assert job_py(None, code, jobdir)[0][1] == "0"
    assert no.count() == 1


def test_asyncio(jobdir, listeners):
    no = listeners()
    code = f'''
import asyncio, json
async def go(port):
    try:
        await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
        return "ok"
    except OSError as e:
        return type(e).__name__
print(json.dumps(asyncio.run(go({no.port}))))
'''
    assert job_py(allow("127.0.0.1:1"), code, jobdir) == \
        "ConnectionRefusedError"
    assert no.count() == 0
    assert job_py(None, code, jobdir) == "ok"
    assert no.count() == 1


def test_curl(jobdir, listeners):
    no = listeners()
    argv = ["curl", "-sS", "-m", "5", f"http://127.0.0.1:{no.port}/"]
    r = fenced(allow("127.0.0.1:1"), argv, jobdir)
    assert r.returncode == 7, r.stderr
    assert no.count() == 0


def test_racing_address_rewrite(jobdir, listeners):
    """2,500 connects while a second thread flips the port under them."""
    ok, no = listeners(), listeners()
    argv = [tool("fence-escape"), "race", "127.0.0.1", str(ok.port),
            str(no.port), "2500"]
    r = fenced(allow(f"127.0.0.1:{ok.port}"), argv, jobdir, timeout=120)
    m = re.search(r"attempts=(\d+) connected=(\d+) refused=(\d+)", r.stdout)
    assert m, r.stdout + r.stderr
    attempts, connected, refused = map(int, m.groups())
    assert attempts == 2500 and connected > 0 and refused > 0
    assert no.count() == 0
    assert ok.count() == connected


def test_io_uring(jobdir, listeners):
    no = listeners()
    argv = [tool("fence-escape"), "uring", "127.0.0.1", str(no.port)]
    r = fenced(allow("127.0.0.1:1"), argv, jobdir)
    assert "io_uring_setup=Operation not permitted" in r.stdout
    assert no.count() == 0
    if Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() == "0":
        assert "io_uring connect=ok" in fenced(None, argv, jobdir).stdout
        assert no.count() == 1


def test_raw_packet_netlink_and_other_sockets(jobdir):
    code = '''
import errno, json, socket
def mk(*a):
    try:
        socket.socket(*a).close()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
S = socket
print(json.dumps([
    mk(S.AF_INET, S.SOCK_RAW, S.IPPROTO_TCP),
    mk(S.AF_INET6, S.SOCK_RAW, S.IPPROTO_ICMPV6),
    mk(S.AF_PACKET, S.SOCK_RAW, 0),
    mk(S.AF_NETLINK, S.SOCK_RAW, 0),
    mk(S.AF_INET, S.SOCK_DGRAM, S.IPPROTO_ICMP),
    mk(S.AF_INET, S.SOCK_STREAM, 262),
    mk(S.AF_INET, S.SOCK_SEQPACKET, S.IPPROTO_SCTP),
    mk(S.AF_INET, S.SOCK_STREAM | S.SOCK_NONBLOCK, 0),
    mk(40, S.SOCK_STREAM, 0),
]))'''
    res = job_py(allow("127.0.0.1:1"), code, jobdir)
    assert res == ["EPERM"] * 7 + ["ok", "EAFNOSUPPORT"]
    assert job_py(None, code, jobdir)[3] == "ok"      # netlink, unfenced


def test_udp(jobdir, listeners):
    u = listeners(UdpListener)
    code = f'''
import errno, json, socket
res = []
addr = ("127.0.0.1", {u.port})
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for f in (lambda: s.sendto(b"x", addr),
          lambda: s.sendmsg([b"x"], [], 0, addr),
          lambda: s.connect(addr) or s.send(b"x")):
    try:
        f()
        res.append("sent")
    except OSError as e:
        res.append(errno.errorcode.get(e.errno, str(e)))
print(json.dumps(res))'''
    res = job_py(allow(f"127.0.0.1:{u.port}"), code, jobdir)
    assert res == ["EPERM", "ENOTCONN", "ECONNREFUSED"]
    assert u.count() == 0
    assert job_py(None, code, jobdir) == ["sent"] * 3
    assert u.count() == 3


def test_tcp_fast_open(jobdir, listeners):
    no = listeners()
    code = f'''
import errno, json, socket
res = []
s = socket.socket()
try:
    s.sendto(b"hello", socket.MSG_FASTOPEN, ("127.0.0.1", {no.port}))
    res.append("sent")
except OSError as e:
    res.append(errno.errorcode.get(e.errno, str(e)))
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, 30, 1)        # TCP_FASTOPEN_CONNECT
try:
    s.connect(("127.0.0.1", {no.port}))
    res.append("ok")
except OSError as e:
    res.append(errno.errorcode.get(e.errno, str(e)))
print(json.dumps(res))'''
    res = job_py(allow("127.0.0.1:1"), code, jobdir)
    assert res == ["EPERM", "ECONNREFUSED"]
    assert no.count() == 0
    assert job_py(None, code, jobdir) == ["sent", "ok"]
    assert no.count() == 2


def test_unix_outside_the_directory(jobdir, listeners):
    outside = make_jobdir()
    try:
        out = listeners(UnixListener, str(outside / "svc.sock"))
        ins = listeners(UnixListener, str(jobdir / "ok.sock"))
        abstract = listeners(UnixListener, f"\0gmux-fence-{os.getpid()}")
        os.symlink(out.path, jobdir / "link.sock")
        os.link(out.path, jobdir / "hard.sock")
        code = f'''
import errno, json, socket
def u(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(path)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
print(json.dumps([u({out.path!r}), u({abstract.path!r}), u("link.sock"),
                  u("hard.sock"), u("ok.sock"),
                  u("../{jobdir.name}/ok.sock")]))'''
        # A socket in the job's directory is no more its own than any
        # other: only one it bound, or one an --allow unix:PATH names.
        res = job_py(allow("127.0.0.1:1"), code, jobdir)
        assert res == ["ECONNREFUSED"] * 6
        assert ins.count() == 0
        res = job_py(allow("127.0.0.1:1", f"unix:{ins.path}"), code, jobdir)
        assert res == ["ECONNREFUSED"] * 4 + ["ok", "ok"]
        assert out.count() == 0 and abstract.count() == 0
        assert ins.count() == 2
        assert job_py(None, code, jobdir) == ["ok"] * 6
        assert out.count() == 3 and abstract.count() == 1
    finally:
        rmtree(outside)


def test_unix_socket_moved_in(jobdir, listeners):
    """A job runs as the daemon's user, so it can rename() any socket of
    that user's (a tmux server, an ssh ControlMaster, a relay) into its
    own directory: where a socket is proves nothing, only who bound it."""
    outside = make_jobdir()
    try:
        relay = listeners(UnixListener, str(outside / "relay.sock"))
        code = f'''
import errno, json, os, socket
os.rename({relay.path!r}, "moved.sock")
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect("moved.sock")
    r = "ok"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e))
os.rename("moved.sock", {relay.path!r})
print(json.dumps(r))'''
        for policy in (["--deny-net"], allow("127.0.0.1:1")):
            assert job_py(policy, code, jobdir) == "ECONNREFUSED"
        assert relay.count() == 0
        assert job_py(None, code, jobdir) == "ok"
        assert relay.count() == 1
        named = f'''
import json, socket
socket.socket(socket.AF_UNIX).connect({relay.path!r})
print(json.dumps("ok"))'''
        policy = ["--deny-net", "--allow", f"unix:{relay.path}"]
        assert job_py(policy, named, jobdir) == "ok"
        assert relay.count() == 2
    finally:
        rmtree(outside)


DGRAM_MOVED_IN = '''
import errno, json, os, socket
S = socket
def err(e):
    return errno.errorcode.get(e.errno, str(e))
def send(make):
    try:
        s = make()
    except OSError as e:
        return "socket: " + err(e)
    try:
        s.sendmsg([b"x"], [], 0, "moved.sock")
        return "sent"
    except OSError as e:
        return err(e)
    finally:
        s.close()
def pair(t):
    a, b = S.socketpair(S.AF_UNIX, t)
    b.close()
    return a
os.rename(RELAY, "moved.sock")
try:
    r = [send(lambda: S.socket(S.AF_UNIX, S.SOCK_DGRAM)),
         send(lambda: S.socket(S.AF_UNIX, S.SOCK_DGRAM | S.SOCK_CLOEXEC)),
         send(lambda: S.socket(S.AF_UNIX, S.SOCK_RAW)),
         send(lambda: pair(S.SOCK_DGRAM))]
finally:
    os.rename("moved.sock", RELAY)
# what stays: stream and seqpacket pairs (multiprocessing, asyncio)
for t in (S.SOCK_STREAM, S.SOCK_SEQPACKET):
    a, b = S.socketpair(S.AF_UNIX, t)
    a.send(b"y")
    r.append(b.recv(1).decode())
print(json.dumps(r))'''


def test_unix_datagram_to_a_socket_moved_in(jobdir, listeners):
    """sendmsg() carries its address in a msghdr no filter can read, so a
    fenced job may not make an AF_UNIX datagram socket at all (SOCK_RAW is
    one too) unless --allow unix:dgram says so: otherwise a datagram to a
    relay of the user's, moved into the job's directory, went out."""
    outside = make_jobdir()
    try:
        net = listeners()
        relay = listeners(UnixDgramRelay, str(outside / "relay.sock"),
                          net.port)
        code = f"RELAY = {relay.path!r}" + DGRAM_MOVED_IN
        for policy in (["--deny-net"], allow("127.0.0.1:1"),
                       ["--deny-net", "--allow", f"unix:{relay.path}"]):
            res = job_py(policy, code, jobdir)
            assert res == ["socket: EPERM"] * 4 + ["y", "y"], policy
        assert relay.count() == 0 and net.count() == 0
        assert job_py(None, code, jobdir) == ["sent"] * 4 + ["y", "y"]
        assert relay.count() == 4 and net.count() == 4
        # The way to let a job have them (NCCL passes its handles over
        # them): it may then reach any datagram socket it can name.
        res = job_py(["--deny-net", "--allow", "unix:dgram"], code, jobdir)
        assert res == ["sent"] * 4 + ["y", "y"]
        assert relay.count() == 8
    finally:
        rmtree(outside)


def test_child_and_setsid_grandchild(jobdir, listeners):
    no = listeners()
    code = CONNECT + f'''
import os, time
pid = os.fork()
if pid == 0:
    open("child.txt", "w").write(attempt("127.0.0.1", {no.port}))
    os._exit(0)
os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.3)
        r = attempt("127.0.0.1", {no.port})
        open("grandchild.txt", "w").write(r)
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
# the job waits for its grandchild (gmux ends what a job leaves behind)
t = time.time()
while not os.path.exists("grandchild.txt") and time.time() - t < 10:
    time.sleep(0.02)
print(json.dumps("forked"))'''
    assert job_py(allow("127.0.0.1:1"), code, jobdir) == "forked"
    assert (jobdir / "child.txt").read_text() == "ECONNREFUSED"
    assert (jobdir / "grandchild.txt").read_text() == "ECONNREFUSED"
    assert no.count() == 0
    r = fenced(allow("127.0.0.1:1"),
               ["sh", "-c", f"curl -sS -m 5 http://127.0.0.1:{no.port}/"],
               jobdir)
    assert r.returncode == 7 and no.count() == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="a setuid binary needs root")
def test_setuid_binary(jobdir, listeners):
    no = listeners()
    suid = jobdir / "esc-suid"
    shutil.copy(tool("fence-escape"), suid)
    os.chown(suid, 0, 0)
    os.chmod(suid, 0o4755)
    argv = [str(suid), "connect", "127.0.0.1", str(no.port)]
    r = fenced(allow("127.0.0.1:1"), argv, jobdir)
    assert "euid=65534 connect=Connection refused" in r.stdout, r.stderr
    assert no.count() == 0
    assert "euid=0 connect=ok" in fenced(None, argv, jobdir).stdout
    assert no.count() == 1


@pytest.mark.skipif(VIA_GMUX, reason="gmux gives its jobs /dev/null as stdin")
def test_socket_passed_in(jobdir, listeners):
    """A socket made outside and given as stdin is fenced all the same; a
    descriptor above 2 does not get in, nor does the filter's listener."""
    no = listeners()
    given = socket.socket()
    extra = socket.socket()
    ino = os.fstat(extra.fileno()).st_ino
    code = f'''
import errno, json, os, socket
s = socket.socket(fileno=0)
try:
    s.connect(("127.0.0.1", {no.port}))
    r = "ok"
except OSError as e:
    r = errno.errorcode[e.errno]
fds = []
for f in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink("/proc/self/fd/" + f))
    except OSError:
        pass
print(json.dumps([r, "socket:[{ino}]" in fds,
                  [f for f in fds if "seccomp" in f], len(fds)]))'''
    try:
        res = job_py(allow("127.0.0.1:1"), code, jobdir, stdin=given,
                     pass_fds=(extra.fileno(),))
        # no listener, nothing above 2 but what Python opened itself
        assert res[:3] == ["ECONNREFUSED", False, []] and res[3] <= 5
        assert no.count() == 0
    finally:
        given.close()
        extra.close()


def test_nested_listener(jobdir, listeners):
    no = listeners()
    argv = [tool("fence-escape"), "listener", "127.0.0.1", str(no.port)]
    r = fenced(allow("127.0.0.1:1"), argv, jobdir)
    assert "listener=Operation not permitted" in r.stdout, r.stdout
    assert no.count() == 0


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86-64 only")
@pytest.mark.parametrize("abi", ["x32", "i386"])
def test_foreign_abi_is_killed(jobdir, abi):
    r = fenced(allow("127.0.0.1:1"), [tool("fence-escape"), abi], jobdir)
    assert r.returncode == 128 + signal.SIGSYS


@pytest.mark.skipif(landlock_abi() < 4, reason="Landlock ABI < 4")
def test_landlock_backstop(jobdir, listeners):
    """With the filter's connect rule gone, Landlock still says no."""
    ok = listeners()
    code = CONNECT + f'print(json.dumps(attempt("127.0.0.1", {ok.port})))'
    res = job_py(allow(f"127.0.0.1:{ok.port}"), code, jobdir, extra=["-B"])
    assert res == "EACCES"
    assert ok.count() == 0


def test_supervisor_death_fails_closed(jobdir, listeners):
    ok = listeners()
    code = CONNECT + f'''
import os, time
open("ready", "w").close()
while not os.path.exists("go"):
    time.sleep(0.02)
print(json.dumps(attempt("127.0.0.1", {ok.port})))'''
    cmd = as_job_user() + [tool("fence-run"), "-C", str(jobdir)] + \
        allow(f"127.0.0.1:{ok.port}") + ["--", PY, "-c", code]
    p = subprocess.Popen(cmd, cwd=jobdir, stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    for _ in range(500):
        if (jobdir / "ready").exists():
            break
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    (jobdir / "go").touch()
    out = p.stdout.read()
    assert json.loads(out.strip().splitlines()[-1]) == "ENOSYS"
    assert ok.count() == 0


def test_no_fence_no_job(jobdir):
    """A filter that cannot be installed: the job does not start (126)."""
    inner = [tool("fence-run"), "-a", "127.0.0.1:2", "--",
             PY, "-c", "print('ran')"]
    r = fenced(allow("127.0.0.1:1"), inner, jobdir)
    assert r.returncode == 126
    assert "ran" not in r.stdout
    assert "gmux: fence: seccomp: Operation not permitted" in r.stderr


def test_deny_net(jobdir, listeners):
    no = listeners()
    code = CONNECT + f'''
import os, time
t = time.monotonic()
try:
    socket.getaddrinfo("example.com", 443)
    dns = "resolved"
except socket.gaierror as e:
    dns = e.errno
print(json.dumps([attempt("127.0.0.1", {no.port}),
                  os.readlink("/proc/self/ns/net"), dns,
                  time.monotonic() - t]))'''
    stats = jobdir / "fence.json"
    res = job_py(["--deny-net"], code, jobdir, stats=stats)
    assert res[0] == "ECONNREFUSED" and no.count() == 0
    assert res[2] == socket.EAI_NONAME and res[3] < 2
    st = json.loads(stats.read_text())
    assert st["fence"] == "deny-net" and st["refused"] == 1
    userns = subprocess.run(as_job_user() + ["unshare", "-Urn", "true"],
                            stderr=subprocess.DEVNULL).returncode == 0
    assert st["netns"] == userns
    if userns:
        assert res[1] != os.readlink("/proc/self/ns/net")
