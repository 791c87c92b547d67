"""A small client of the Chrome DevTools Protocol, to drive Debian's
chromium (headless) in the dashboard's tests: a real browser, talked to
through its own --remote-debugging-port, with python3-websocket.  Only
loopback is ever reached: every host name but 127.0.0.1 fails to resolve
inside the browser, and its background services are off."""

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

from conftest import wait_for

try:
    import websocket        # python3-websocket
except ImportError:         # the tests skip, saying why
    websocket = None

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium():
    for n in CHROMIUM_NAMES:
        p = shutil.which(n)
        if p:
            return p
    return None


class BrowserError(Exception):
    pass


class Browser:
    """One headless chromium with its own profile; pages are targets."""

    def __init__(self, artifacts):
        self.artifacts = artifacts
        os.makedirs(artifacts, exist_ok=True)
        exe = find_chromium()
        if exe is None:
            raise BrowserError("no chromium on PATH (tests/setup-deps "
                               "installs Debian's)")
        if websocket is None:
            raise BrowserError("no python3-websocket")
        self.profile = tempfile.mkdtemp(prefix="gmux-chromium-")
        args = [exe, "--headless=new", "--remote-debugging-port=0",
                "--user-data-dir=" + self.profile,
                "--ignore-certificate-errors", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--metrics-recording-only",
                "--disable-features=Translate,MediaRouter,OptimizationHints",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--window-size=1280,1000", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self.log = open(os.path.join(artifacts, "chromium.log"), "wb")
        self.proc = subprocess.Popen(args, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        end = time.monotonic() + 30
        while not os.path.exists(port_file) or \
                len(open(port_file).read().split()) < 2:
            if self.proc.poll() is not None or time.monotonic() > end:
                self.close()
                raise BrowserError("chromium did not start (see %s)" %
                                   self.log.name)
            time.sleep(0.05)
        port, path = open(port_file).read().split()[:2]
        self.ws = websocket.create_connection(
            "ws://127.0.0.1:%s%s" % (port, path), timeout=60,
            suppress_origin=True)
        self.next_id = 0
        self.lock = threading.Lock()
        self.waiting = {}
        self.events = queue.Queue()
        self.listeners = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                msg = json.loads(self.ws.recv())
            except Exception:
                for q in list(self.waiting.values()):
                    q.put({"error": {"message": "connection closed"}})
                return
            if "id" in msg:
                q = self.waiting.pop(msg["id"], None)
                if q is not None:
                    q.put(msg)
            else:
                for fn in list(self.listeners):
                    fn(msg)

    def send(self, method, params=None, session=None, timeout=30):
        with self.lock:
            self.next_id += 1
            mid = self.next_id
            q = self.waiting[mid] = queue.Queue()
            msg = {"id": mid, "method": method, "params": params or {}}
            if session is not None:
                msg["sessionId"] = session
            self.ws.send(json.dumps(msg))
        try:
            r = q.get(timeout=timeout)
        except queue.Empty:
            raise BrowserError("%s: no answer in %ss" % (method, timeout))
        if "error" in r:
            raise BrowserError("%s: %s" % (method, r["error"]["message"]))
        return r["result"]

    def page(self, context=None):
        """A new tab (in its own browser context, if one is given)."""
        params = {"url": "about:blank"}
        if context is not None:
            params["browserContextId"] = context
        tid = self.send("Target.createTarget", params)["targetId"]
        sid = self.send("Target.attachToTarget",
                        {"targetId": tid, "flatten": True})["sessionId"]
        return Page(self, tid, sid, context)

    def context(self):
        """A fresh browser context: its own cookies, like another user."""
        return self.send("Target.createBrowserContext")["browserContextId"]

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """One tab: navigation, script, console errors, requests, screenshots."""

    def __init__(self, browser, tid, sid, context):
        self.b = browser
        self.tid = tid
        self.sid = sid
        self.context = context
        self.errors = []        # console errors and uncaught exceptions
        self.urls = []          # every URL the page asked for
        self.loads = 0
        browser.listeners.append(self._event)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(domain + ".enable")

    def _event(self, msg):
        if msg.get("sessionId") != self.sid:
            return
        m, p = msg["method"], msg.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") == "error":
            self.errors.append(" ".join(str(a.get("value", a.get(
                "description", ""))) for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append(d.get("exception", {}).get(
                "description", d.get("text", "exception")))
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.errors.append(p["entry"]["text"] + " " +
                               p["entry"].get("url", ""))
        elif m == "Network.requestWillBeSent":
            self.urls.append(p["request"]["url"])
        elif m == "Page.loadEventFired":
            self.loads += 1

    def send(self, method, params=None, timeout=30):
        return self.b.send(method, params, self.sid, timeout)

    def goto(self, url, timeout=20):
        n = self.loads
        self.send("Page.navigate", {"url": url})
        self.wait(lambda: self.loads > n, timeout, "load of " + url)

    def js(self, expr, timeout=30):
        """Evaluates expr in the page (awaiting a promise); a page that is
        between two documents is asked again."""
        for attempt in range(50):
            try:
                r = self.send("Runtime.evaluate", {
                    "expression": expr, "returnByValue": True,
                    "awaitPromise": True, "userGesture": True}, timeout)
                break
            except BrowserError as e:
                if attempt == 49 or ("navigated" not in str(e) and
                                     "context" not in str(e)):
                    raise
                time.sleep(0.1)
        if "exceptionDetails" in r:
            raise BrowserError("%s: %s" % (expr, r["exceptionDetails"].get(
                "exception", {}).get("description", r["exceptionDetails"])))
        return r["result"].get("value")

    @staticmethod
    def wait(pred, timeout=15, what="condition"):
        return wait_for(pred, timeout, 0.05, what)

    def wait_js(self, expr, timeout=15):
        return self.wait(lambda: self.js(expr), timeout, expr)

    def path(self):
        return self.js("location.pathname")

    def cookies(self):
        return self.b.send("Storage.getCookies",
                           {"browserContextId": self.context}
                           if self.context else {})["cookies"]

    def screenshot(self, name):
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path = os.path.join(self.b.artifacts, name + ".png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        self.b.listeners.remove(self._event)
        try:
            self.b.send("Target.closeTarget", {"targetId": self.tid})
        except BrowserError:
            pass
