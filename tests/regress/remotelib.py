"""Helpers for the remote tests: raw HTTPS requests to a gmux host (to send
what the CLI never would), and a fake host (a TLS server with its own key)
that answers what a test wants, hostile answers included."""

import hashlib
import http.server
import json
import os
import socket
import ssl
import subprocess
import threading
import time


def client_context(cert=None):
    """A TLS client context that checks no certificate (the tests know whom
    they talk to), showing cert (CERTFILE, KEYFILE) if given.  Not
    ssl.create_default_context(): it reads the system's CA store, which
    nothing here uses, in 0.2 s of CPU per request."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(*cert)
    return ctx


def https(port, method, path, body=b"", token=None, ctype=None,
          timeout=10, headers=None, stream_for=None, cert=None):
    """One request over TLS to 127.0.0.1:port (the pin is not checked: the
    tests know whom they talk to), with any other headers, showing the
    client certificate cert (CERTFILE, KEYFILE) if given; a reply that
    streams is read for stream_for seconds.  Returns (status, headers,
    body)."""
    ctx = client_context(cert)
    end = time.monotonic() + (stream_for or 1e9)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        with ctx.wrap_socket(s) as t:
            extra = dict(headers or {})
            head = "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n" % (
                method, path, extra.pop("Host", "x"))
            if token is not None:
                head += "Authorization: Bearer %s\r\n" % token
            if ctype is not None:
                head += "Content-Type: %s\r\n" % ctype
            head += "".join("%s: %s\r\n" % kv for kv in extra.items())
            head += "Content-Length: %d\r\n\r\n" % len(body)
            t.sendall(head.encode() + body)
            data = b""
            while time.monotonic() < end:
                if stream_for is not None:
                    t.settimeout(max(0.05, end - time.monotonic()))
                try:
                    chunk = t.recv(65536)
                except (ssl.SSLError, ConnectionResetError):
                    break
                except socket.timeout:
                    if stream_for is None:
                        raise
                    break
                if not chunk:
                    break
                data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        out = b""
        while rest:
            n, _, rest = rest.partition(b"\r\n")
            n = int(n, 16)
            if n == 0:
                break
            out += rest[:n]
            rest = rest[n + 2:]
        rest = out
    return status, headers, rest


def https_json(port, method, path, body=b"", token=None, ctype=None):
    status, _, data = https(port, method, path, body, token, ctype)
    try:
        return status, json.loads(data)
    except ValueError:
        return status, None


def sha(data):
    return hashlib.sha256(data).hexdigest()


def manifest(entries):
    """A manifest from (type, mode, size, digest, path[, target]) tuples,
    in the given order (a test may want them unsorted)."""
    lines = ["gmux-manifest 1"]
    for e in entries:
        lines.append(" ".join(str(x) for x in e))
    return ("\n".join(lines) + "\n").encode()


def frame(kind, payload):
    return bytes([kind]) + len(payload).to_bytes(4, "big") + payload


class FakeHost:
    """A TLS server on 127.0.0.1 with a fresh P-256 key: routes maps
    (method, path) to (status, body bytes, content type); anything else
    is 404.  self.target is TOKEN@127.0.0.1:PORT#PIN for its key."""

    def __init__(self, tmp, routes):
        self.routes = routes
        self.requests = []
        key = os.path.join(tmp, "fake-key.pem")
        cert = os.path.join(tmp, "fake-cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                        "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "1",
                        "-subj", "/CN=fake"], check=True,
                       capture_output=True)
        der = subprocess.run(["openssl", "pkey", "-in", key, "-pubout",
                              "-outform", "DER"], check=True,
                             capture_output=True).stdout
        self.pin = sha(der)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        host = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                path = self.path.split("?")[0]
                host.requests.append((self.command, self.path, body))
                status, data, ctype = host.route(self.command, path)
                if callable(data):
                    data = data(self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.server.socket = ctx.wrap_socket(self.server.socket,
                                             server_side=True)
        self.port = self.server.server_address[1]
        self.target = "%s@127.0.0.1:%d#%s" % ("T" * 43, self.port, self.pin)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def route(self, method, path):
        """The exact route, or one whose path ends in * and prefixes it."""
        if (method, path) in self.routes:
            return self.routes[(method, path)]
        for (m, p), v in self.routes.items():
            if m == method and p.endswith("*") and path.startswith(p[:-1]):
                return v
        return (404, b'{"error":"no such route"}', "application/json")

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Proxy:
    """A TCP forwarder from a port of its own to 127.0.0.1:dest.  cut()
    closes every connection it carries; freeze() stops carrying bytes on
    them (a peer that vanished without a word); new connections flow."""

    def __init__(self, dest):
        self.dest = dest
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.conns = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                a, _ = self.lsock.accept()
            except OSError:
                return
            b = socket.create_connection(("127.0.0.1", self.dest))
            c = {"socks": (a, b), "frozen": False}
            with self.lock:
                self.conns.append(c)
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self.pump, args=(c, x, y),
                                 daemon=True).start()

    def pump(self, c, src, dst):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            while c["frozen"]:
                time.sleep(0.05)
            try:
                dst.sendall(data)
            except OSError:
                break
        if not c["frozen"]:
            for s in c["socks"]:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            for s in c["socks"]:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def freeze(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            c["frozen"] = True

    def close(self):
        self.lsock.close()
        self.cut()


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def job_tree(home, jid):
    """Where what the host's job jid wrote lies on the host: its overlay's
    upper directory where it ran over a stored tree, else its own copy."""
    upper = os.path.join(home, "jobs", jid, "upper")
    if os.path.isdir(upper):
        return upper
    return os.path.join(home, "jobs", jid, "work")


def stored_tree(home, jid):
    """The stored tree the host's job jid ran over, or None (a copy)."""
    try:
        with open(os.path.join(home, "jobs", jid, "tree")) as f:
            return os.path.join(home, "trees", f.read().strip())
    except FileNotFoundError:
        return None


def job_file(home, jid, rel):
    """The host's file rel of job jid's tree as the job left it: what it
    wrote, else what it ran over."""
    mine = os.path.join(job_tree(home, jid), rel)
    stored = stored_tree(home, jid)
    if os.path.lexists(mine) or stored is None:
        return mine
    return os.path.join(stored, rel)
