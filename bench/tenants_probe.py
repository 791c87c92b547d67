"""The loop's pauses, seen from outside: a thread that asks a daemon GET
/v1/jobs on its Unix socket, one request after the other (bench/tenants-*.py)."""

import socket
import threading
import time


class Probe(threading.Thread):
    """GET /v1/jobs on d's socket, again and again: (start, seconds)."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.path, self.seen, self.done = d.socket, [], False

    def run(self):
        while not self.done:
            t = time.monotonic()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(self.path)
                s.sendall(b"GET /v1/jobs HTTP/1.0\r\n\r\n")
                while s.recv(65536):
                    pass
            self.seen.append((t, time.monotonic() - t))
            time.sleep(0.001)   # a pause of the loop is longer than this

    def longest(self, spans):
        """The longest answer begun in any of spans, in ms."""
        return max([dt for t, dt in self.seen
                    if any(a <= t <= b for a, b in spans)] or [0]) * 1000
