"""The dashboard (docs/ui.md) in a real browser: Debian's chromium, headless,
driven through its DevTools protocol (cdplib.py), against a private daemon
with --ui over TLS.  Screenshots go to build/ui-artifacts/.  The tests skip,
saying why, only when chromium cannot start."""

import json
import os
import re
import socket
import subprocess
import time

import pytest

from conftest import wait_for
from remotelib import https
import cdplib

ARTIFACTS = os.path.join(os.path.dirname(__file__), "..", "..", "build",
                         "ui-artifacts")


@pytest.fixture(scope="module")
def browser():
    try:
        b = cdplib.Browser(os.path.abspath(ARTIFACTS))
    except cdplib.BrowserError as e:
        pytest.skip("no browser for the dashboard's tests: %s" % e)
    yield b
    b.close()


def token_of(target):
    return target.split("@", 1)[0]


@pytest.fixture
def host(daemon):
    return _host(daemon)


def _host(daemon):
    """A daemon with the dashboard on TLS; .token is the host's own."""
    daemon.serve_tls("--ui")
    daemon.token = token_of(daemon.target)
    daemon.base = "https://127.0.0.1:%d" % daemon.port
    assert ("gmux: dashboard at %s/ui/" % daemon.base).encode() in \
        daemon.serve_stderr
    return daemon


@pytest.fixture
def page(browser):
    ctx = browser.context()
    p = browser.page(ctx)
    yield p
    p.close()
    browser.send("Target.disposeBrowserContext", {"browserContextId": ctx})


def login(page, base, token):
    page.goto(base + "/ui/")
    page.wait(lambda: page.path() == "/ui/login", what="the login page")
    page.wait_js("document.readyState === 'complete'")
    page.js("document.getElementById('token').value = %s;"
            "document.getElementById('login').requestSubmit()" %
            json.dumps(token))


def logged_in(page, base, token):
    login(page, base, token)
    page.wait(lambda: page.path() == "/ui/", what="the dashboard")
    page.wait_js("window.gmux && window.gmux.state !== null")
    page.errors.clear()     # the 401 that sent it to the login page
    page.goto(base + "/ui/")
    page.wait_js("window.gmux && window.gmux.state !== null")


def bar(page, metric, card=0):
    return page.js("Number(document.querySelector('.card[data-index=\"%d\"] "
                   ".metric[data-metric=\"%s\"] .fill').dataset.value)" %
                   (card, metric))


def fetch_status(page, method, path, headers="{}", body=None):
    """The status of a fetch() the page makes itself."""
    extra = ", body: %s" % json.dumps(json.dumps(body)) if body else ""
    return page.js("fetch(%s, {method: %s, headers: %s%s})"
                   ".then(r => r.status)" % (json.dumps(path),
                                             json.dumps(method), headers,
                                             extra))


def running_ids(page):
    return page.js("[...document.querySelectorAll('#jobs tbody tr')]"
                   ".map(r => r.dataset.id)")


def test_login_wrong_token_then_cookie_flags(host, page):
    login(page, host.base, "x" * 43)
    page.wait_js("!document.getElementById('login-error').hidden")
    msg = page.js("document.getElementById('login-error').textContent")
    assert "wrong or revoked" in msg
    assert page.path() == "/ui/login"
    page.screenshot("login-wrong-token")
    page.js("document.getElementById('token').value = %s;"
            "document.getElementById('login').requestSubmit()" %
            json.dumps(host.token))
    page.wait(lambda: page.path() == "/ui/", what="the dashboard")
    cookies = [c for c in page.cookies() if c["name"] == "gmux_token"]
    assert len(cookies) == 1
    c = cookies[0]
    assert c["httpOnly"] and c["secure"] and c["sameSite"] == "Strict"
    assert c["value"] == host.token
    assert page.js("document.cookie") == ""     # the page cannot read it
    assert not any(host.token in u for u in page.urls)


def test_dashboard_is_live(host, page):
    logged_in(page, host.base, host.token)
    page.wait_js("document.querySelector('.card[data-index=\"0\"]') !== null")
    assert page.errors == []
    assert bar(page, "guaranteed") == 0
    page.screenshot("dashboard-idle")
    jid = host.gmux("run", "-d", "--share", "0.5", "--", "sleep", "60",
                    check=0).stdout.decode().strip()
    page.wait(lambda: bar(page, "guaranteed") == 0.5, what="the bar to move")
    page.wait(lambda: jid in running_ids(page), what="the job listed")
    assert page.js("document.querySelector('#jobs tr[data-id=\"%s\"] "
                   "td.share').textContent" % jid) == "0.50"
    page.screenshot("dashboard-one-job")
    # stop from the page: the button, with its CSRF header
    time.sleep(2)
    page.js("document.querySelector('#jobs tr[data-id=\"%s\"] "
            "button.stop').click()" % jid)
    page.wait(lambda: jid not in running_ids(page), what="the job to go")
    assert host.job(jid)["state"] == "stopped"
    assert bar(page, "guaranteed") == 0
    assert page.errors == []


def test_usage_plot_has_the_points(host, page):
    logged_in(page, host.base, host.token)
    jid = host.gmux("run", "-d", "--share", "0.5", "--", "sleep", "3",
                    check=0).stdout.decode().strip()
    host.wait_state(jid, "exited", 20)
    j = host.job(jid)
    ran = (j["ended"] - j["started"]) / 1000.0
    page.js("document.getElementById('window').value = '10m';"
            "document.getElementById('window').dispatchEvent("
            "new Event('change'))")
    page.wait_js("(() => { const s = window.gmux.series.owner;"
                 " return s && s.step_ms === 10000 &&"
                 " s.share_seconds.root &&"
                 " s.share_seconds.root.reduce((a, b) => a + b, 0) > 0 })()")
    s = page.js("window.gmux.series.owner")
    assert len(s["times"]) == 60
    total = sum(s["share_seconds"]["root"])
    assert abs(total - 0.5 * ran) < 0.05, (total, ran)
    pts = page.js("document.querySelector('#plot-owner polyline.series"
                  "[data-key=\"root\"]').getAttribute('points')").split()
    assert len(pts) == 60
    # the points are the series: y falls as share-seconds rise
    ys = [float(p.split(",")[1]) for p in pts]
    vals = s["share_seconds"]["root"]
    for a in range(60):
        for b in range(60):
            if vals[a] > vals[b] + 1e-9:
                assert ys[a] < ys[b]
    # the CSV button downloads what the plot shows
    downloads = os.path.join(os.path.abspath(ARTIFACTS), "downloads")
    os.makedirs(downloads, exist_ok=True)
    name = os.path.join(downloads, "gmux-usage-by-owner-10m.csv")
    if os.path.exists(name):
        os.unlink(name)
    page.b.send("Browser.setDownloadBehavior", {
        "behavior": "allow", "downloadPath": downloads,
        "browserContextId": page.context})
    page.js("document.querySelector('button.csv[data-by=\"owner\"]')"
            ".click()")
    wait_for(lambda: os.path.exists(name), 10, what="the CSV download")
    csv = open(name).read().splitlines()
    assert csv[0] == "time,owner,share_seconds"
    assert len(csv) == 61
    assert abs(sum(float(r.split(",")[2]) for r in csv[1:]) - total) < 1e-6
    # the card plot: the host's own token sees it
    page.wait_js("window.gmux.series.card && window.gmux.series.card"
                 ".share_seconds['0']")
    page.screenshot("dashboard-usage")


def top_numbers(text):
    """gmux top --once's card 0 figures and job shares."""
    m = re.search(r"guaranteed \[[#.]+\] (\d+)%\s+burst\s+\[[#.]+\] (\d+)%",
                  text)
    m2 = re.search(r"memory\s+\[[#.]+\] (\S+)\s+util\s+\[[#.]+\] (\S+)",
                   text)
    jobs = dict(re.findall(r"^(j\d+)\s+\S+\s+\S+\s+(\d\.\d\d)", text, re.M))
    return {"guaranteed": m.group(1) + "%", "burst": m.group(2) + "%",
            "memory": m2.group(1), "util": m2.group(2)}, jobs


def test_top_and_dashboard_agree(host, page):
    logged_in(page, host.base, host.token)
    host.gmux("run", "-d", "--share", "0.3", "--mem", "10G", "--", "sleep",
              "60", check=0)
    host.gmux("run", "-d", "--share", "0.25", "--burst", "--", "sleep",
              "60", check=0)
    page.wait(lambda: len(running_ids(page)) == 2, what="two jobs shown")
    before = page.js("JSON.stringify([window.gmux.state.cards,"
                     " window.gmux.state.jobs])")
    top = host.gmux("top", "--once", check=0).stdout.decode()
    after = page.js("JSON.stringify([window.gmux.state.cards,"
                    " window.gmux.state.jobs])")
    assert before == after          # one moment: nothing changed meanwhile
    card, jobs = top_numbers(top)
    shown = page.js("Object.fromEntries([...document.querySelectorAll("
                    "'.card[data-index=\"0\"] .metric')].map(m =>"
                    " [m.dataset.metric, m.querySelector('.value')"
                    ".textContent]))")
    assert shown == card, (shown, top)
    rows = page.js("Object.fromEntries([...document.querySelectorAll("
                   "'#jobs tbody tr')].map(r => [r.dataset.id,"
                   " r.querySelector('td.share').textContent]))")
    assert rows == jobs, (rows, top)
    page.screenshot("dashboard-top")


def test_tenant_sees_only_its_own(host, page):
    bob = host.token_for("bob")
    root_job = host.gmux("run", "-d", "--share", "0.2", "--", "sleep", "60",
                         check=0).stdout.decode().strip()
    logged_in(page, host.base, bob)
    assert page.js("window.gmux.session.owner") == "bob"
    assert page.js("window.gmux.session.admin") is False
    assert page.js("window.gmux.state.jobs.length") == 0
    assert running_ids(page) == []
    # the cards' totals are the host's: they count root's share
    assert bar(page, "guaranteed") == 0.2
    # its own use, by card too (bob has none: root's job is not in it)
    assert page.js("document.getElementById('plot-card').hidden") is False
    assert page.errors == []
    # the cookie stands for the token on every route, with its rules
    assert page.js("fetch('/v1/jobs').then(r => r.json())") == []
    assert fetch_status(page, "GET", "/v1/jobs/%s" % root_job) == 404
    series = page.js("fetch('/v1/usage/series').then(r => r.json())")
    assert list(series["share_seconds"]) in ([], ["bob"])
    series = page.js("fetch('/v1/usage/series?by=card')"
                     ".then(r => r.json())")
    assert series["by"] == "card"
    assert all(v == 0 for a in series["share_seconds"].values() for v in a)
    wait_for(lambda: any(v > 0 for a in json.loads(https(
        host.port, "GET", "/v1/usage/series?by=card", token=host.token)[2])
        ["share_seconds"].values() for v in a), what="root's use by card")
    assert fetch_status(page, "POST", "/v1/jobs/%s/stop" % root_job,
                        "{'X-Gmux-Csrf': window.gmux.session.csrf}") == 404
    assert host.job(root_job)["state"] == "running"


def test_changes_need_the_csrf_value(host, page):
    logged_in(page, host.base, host.token)
    jid = host.gmux("run", "-d", "--share", "0.2", "--", "sleep", "60",
                    check=0).stdout.decode().strip()
    assert fetch_status(page, "POST", "/v1/jobs/%s/stop" % jid) == 403
    assert fetch_status(page, "PATCH", "/v1/jobs/%s" % jid,
                        "{'X-Gmux-Csrf': 'f'.repeat(32)}",
                        {"share": 0.3}) == 403
    assert host.job(jid)["state"] == "running"
    # the same cookie from elsewhere, without the page's header: refused
    cookie = "gmux_token=" + host.token
    st, _, body = https(host.port, "POST", "/v1/jobs/%s/stop" % jid,
                        b"{}", ctype="application/json",
                        headers={"Cookie": cookie})
    assert st == 403 and b"CSRF" in body
    # with the value: from this origin it works, from another it does not
    csrf = page.js("window.gmux.session.csrf")
    here = "127.0.0.1:%d" % host.port
    for origin, want, share in (("https://" + here, 200, 0.3),
                                ("https://evil.example", 403, 0.25),
                                ("http://" + here, 403, 0.25)):
        st, _, body = https(host.port, "PATCH", "/v1/jobs/%s" % jid,
                            json.dumps({"share": share}).encode(),
                            ctype="application/json",
                            headers={"Cookie": cookie, "X-Gmux-Csrf": csrf,
                                     "Origin": origin, "Host": here})
        assert st == want, (origin, st, body)
    assert host.job(jid)["share"] == 0.3
    # resize from the page works; what is typed survives a redraw
    page.wait(lambda: jid in running_ids(page), what="the job listed")
    n = len(page.errors)        # the 403s above
    sel = "document.querySelector('#jobs tr[data-id=\"%s\"] %%s')" % jid
    page.js("const i = %s; i.focus(); i.value = '0.35'" % (sel % "input.share"))
    host.gmux("run", "-d", "--share", "0.1", "--", "sleep", "60", check=0)
    page.wait(lambda: len(running_ids(page)) == 2, what="the redraw")
    assert page.js("%s.value" % (sel % "input.share")) == "0.35"
    assert page.js("document.activeElement === %s" % (sel % "input.share"))
    page.js("%s.click()" % (sel % "button.resize"))
    wait_for(lambda: host.job(jid)["share"] == 0.35, 10, what="the resize")
    assert page.errors[n:] == []


def test_logout(host, page):
    logged_in(page, host.base, host.token)
    page.js("document.getElementById('logout').click()")
    page.wait(lambda: page.path() == "/ui/login", what="the login page")
    assert not [c for c in page.cookies() if c["name"] == "gmux_token"]
    assert fetch_status(page, "GET", "/v1/session") == 401
    page.screenshot("logged-out")


def test_logout_needs_the_csrf_value(host):
    """Another site's form could log the page out: a logout that carries
    the cookie must carry its CSRF value and come from this origin, as
    every change does; one without a cookie has nothing to clear."""
    cookie = "gmux_token=" + host.token
    here = "127.0.0.1:%d" % host.port
    st, hdr, body = https(host.port, "GET", "/v1/session",
                          headers={"Cookie": cookie})
    assert st == 200
    csrf = json.loads(body)["csrf"]
    for headers in ({"Cookie": cookie},
                    {"Cookie": cookie, "X-Gmux-Csrf": "f" * len(csrf)},
                    {"Cookie": cookie, "X-Gmux-Csrf": csrf,
                     "Origin": "https://evil.example", "Host": here}):
        st, hdr, body = https(host.port, "POST", "/ui/logout",
                              headers=headers)
        assert st == 403 and b"CSRF" in body, (headers, st, body)
        assert "set-cookie" not in hdr
    st, hdr, _ = https(host.port, "POST", "/ui/logout",
                       headers={"Cookie": cookie, "X-Gmux-Csrf": csrf,
                                "Origin": "https://" + here, "Host": here})
    assert st == 200 and "gmux_token=;" in hdr["set-cookie"], hdr
    st, hdr, _ = https(host.port, "POST", "/ui/logout")
    assert st == 200


def test_events_stream_and_owner_rules_without_a_browser(host):
    """/v1/events over TCP: a token's stream shows its own jobs only."""
    carol = host.token_for("carol")
    host.gmux("run", "-d", "--share", "0.2", "--", "sleep", "60", check=0)
    st, hdr, body = https(host.port, "GET", "/v1/events", token=carol,
                          timeout=2, stream_for=1.5)
    assert st == 200 and hdr["content-type"] == "text/event-stream"
    events = parse_sse(body)
    assert events[0][0] == "history"
    state = next(json.loads(d) for e, d in events if e == "state")
    assert state["jobs"] == []
    assert state["cards"][0]["guaranteed"] == 0.2
    st, _, body = https(host.port, "GET", "/v1/events", token=host.token,
                        timeout=2, stream_for=1.5)
    state = next(json.loads(d) for e, d in parse_sse(body) if e == "state")
    assert len(state["jobs"]) == 1


def parse_sse(body):
    out = []
    for block in body.decode().split("\n\n"):
        ev, data = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        if ev is not None:
            out.append((ev, data))
    return out


def test_dashboard_off_without_ui(daemon):
    daemon.start()
    code, text = daemon.curl("GET", "/ui/")
    assert code == 404 and "dashboard is off" in text
    code, text = daemon.curl("GET", "/v1/events")
    assert code == 404


def test_ui_from_the_config(daemon):
    with open(os.path.join(daemon.home, "config"), "w") as f:
        f.write("UI=1\n")
    daemon.start()
    code, text = daemon.curl("GET", "/ui/")
    assert code == 200 and "<title>gmux</title>" in text
    code, text = daemon.curl("GET", "/v1/session")
    assert code == 200 and json.loads(text)["via"] == "socket"


def start_forwarder(who, *args):
    """gmux ui: the address it printed, and the process (stop it)."""
    p = who.popen("ui", *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline().decode().strip()
    assert line.startswith("http://127.0.0.1:"), (line, p.stderr.read())
    return line, p


def stop_forwarder(p):
    p.terminate()
    p.wait(10)


def test_gmux_ui_reaches_the_local_socket(daemon, page, browser):
    daemon.start("--ui")
    url, p = start_forwarder(daemon)
    try:
        page.goto(url)
        page.wait(lambda: page.path() == "/ui/", what="the dashboard")
        page.wait_js("window.gmux && window.gmux.state !== null")
        assert page.js("window.gmux.session.via") == "socket"
        assert page.js("window.gmux.session.admin") is True
        jid = daemon.gmux("run", "-d", "--share", "0.5", "--", "sleep",
                          "60", check=0).stdout.decode().strip()
        page.wait(lambda: bar(page, "guaranteed") == 0.5,
                  what="the bar to move")
        page.wait(lambda: jid in running_ids(page), what="the job listed")
        page.js("document.querySelector('#jobs tr[data-id=\"%s\"] "
                "button.stop').click()" % jid)
        page.wait(lambda: jid not in running_ids(page), what="the job to go")
        assert daemon.job(jid)["state"] == "stopped"
        assert page.errors == []
        page.screenshot("gmux-ui-local")
        c = [c for c in page.cookies() if c["name"] == "gmux_fwd"][0]
        assert c["httpOnly"] and c["sameSite"] == "Strict"
        # the address works once: another browser is refused
        ctx = browser.context()
        other = browser.page(ctx)
        try:
            other.goto(url)
            assert "used already" in other.js("document.body.textContent")
            other.goto(url.split("/ui/")[0] + "/ui/")
            assert "gmux ui printed" in other.js("document.body.textContent")
        finally:
            other.close()
            browser.send("Target.disposeBrowserContext",
                         {"browserContextId": ctx})
        # a change without the dashboard's header is refused
        port = int(url.split(":")[2].split("/")[0])
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(("POST /v1/jobs/%s/stop HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Cookie: gmux_fwd=%s\r\nContent-Length: 0\r\n\r\n" %
                   (jid, port, c["value"])).encode())
        assert s.recv(100).startswith(b"HTTP/1.1 403")
        s.close()
    finally:
        stop_forwarder(p)


def test_gmux_ui_reaches_a_remote_through_its_pin(make_daemon, make_client,
                                                  page):
    host = make_daemon()
    host.serve_tls("--ui")
    token = token_of(host.target)
    c = make_client()
    assert c.add("gpu1", host.target).returncode == 0
    url, p = start_forwarder(c, "--remote", "gpu1")
    try:
        page.goto(url)
        page.wait(lambda: page.path() == "/ui/", what="the dashboard")
        page.wait_js("window.gmux && window.gmux.state !== null")
        assert page.js("window.gmux.session.via") == "tls"
        assert page.js("window.gmux.session.owner") == \
            host.json("token", "ls", "--json")[0]["owner"]
        host.gmux("run", "-d", "--share", "0.25", "--", "sleep", "60",
                  check=0)
        page.wait(lambda: bar(page, "guaranteed") == 0.25,
                  what="the bar to move")
        assert page.errors == []
        assert not any(token in u for u in page.urls)
        assert all(token not in ck["value"] for ck in page.cookies())
        assert token not in page.js("document.documentElement.outerHTML")
        page.screenshot("gmux-ui-remote")
        # no login through the forwarder: its reply would carry the token
        r = page.js("fetch('/ui/login', {method: 'POST', headers: {"
                    "'Authorization': 'Bearer ' + 'x'.repeat(43),"
                    " 'X-Gmux-Csrf': 'local'}}).then(async r => [r.status,"
                    " await r.text()])")
        assert r[0] == 403 and "no login through gmux ui" in r[1]
        assert all(token not in ck["value"] for ck in page.cookies())
    finally:
        stop_forwarder(p)
    # a wrong pin: gmux ui says so and serves nothing
    c2 = make_client()
    bad = host.target.rsplit("#", 1)[0] + "#" + "0" * 64
    assert c2.add("bad", bad, "--no-check").returncode == 0
    r = c2.gmux("ui", "--remote", "bad", timeout=30)
    assert r.returncode == 1 and r.stdout == b""
    assert b"pin" in r.stderr.lower(), r.stderr


def test_gmux_ui_needs_the_dashboard_on(daemon):
    daemon.start()
    r = daemon.gmux("ui", timeout=30)
    assert r.returncode == 1 and r.stdout == b""
    assert b"does not serve the dashboard" in r.stderr, r.stderr


def test_stream_outlives_the_auth_timeout(daemon, page):
    """The guard cuts a connection without a token after AUTH_TIMEOUT (4 s
    here, 10 by default): the page's stream, on a connection with the
    cookie, is not cut."""
    daemon.env["GMUX_AUTH_TIMEOUT"] = "4"
    host = _host(daemon)
    logged_in(page, host.base, host.token)
    page.wait_js("window.gmux.opens === 1")
    time.sleep(6)
    jid = host.gmux("run", "-d", "--share", "0.5", "--", "sleep", "60",
                    check=0).stdout.decode().strip()
    page.wait(lambda: bar(page, "guaranteed") == 0.5, what="the bar to move")
    assert page.js("window.gmux.opens") == 1
    # the sparklines draw the samples the same stream goes on bringing
    # (one a tick: after 6 s there may be 3 of them yet)
    page.wait_js("(document.querySelector('.metric[data-metric=\"guaranteed\"]"
                 " .spark polyline') || {getAttribute: () => ''})"
                 ".getAttribute('points').split(' ').length >= 5", 30)
    assert page.js("window.gmux.opens") == 1
    assert page.errors == []
    host.gmux("stop", jid, check=0)


def test_stream_outlives_the_anonymous_bound(host, page):
    """The TLS port keeps TCP_ANON_PER_SOURCE (8) connections without a
    token per source and cuts the oldest past it: the page's stream from
    the same source, whose cookie is a good token, is never one of them."""
    logged_in(page, host.base, host.token)
    page.wait_js("window.gmux.opens === 1")
    held = [socket.create_connection(("127.0.0.1", host.port))
            for _ in range(40)]
    try:
        time.sleep(0.5)
        jid = host.gmux("run", "-d", "--share", "0.5", "--", "sleep", "60",
                        check=0).stdout.decode().strip()
        page.wait(lambda: bar(page, "guaranteed") == 0.5,
                  what="the bar to move")
        assert page.js("window.gmux.opens") == 1
        host.gmux("stop", jid, check=0)
    finally:
        for s in held:
            s.close()
    assert page.errors == []


def test_queue_reasons_and_the_live_log(host, page):
    logged_in(page, host.base, host.token)
    big = host.gmux("run", "-d", "--share", "1", "--", "sh", "-c",
                    "for i in $(seq 1 200); do echo line $i; sleep 0.2; done",
                    check=0).stdout.decode().strip()
    waiting = host.gmux("run", "-d", "--share", "0.5", "--", "true",
                        check=0).stdout.decode().strip()
    page.wait_js("document.querySelector('#queue tr[data-id=\"%s\"]') "
                 "!== null" % waiting)
    reason = page.js("document.querySelector('#queue tr[data-id=\"%s\"] "
                     "td.reason').textContent" % waiting)
    assert reason == host.job(waiting)["reason"] and "0.5" in reason
    assert page.js("document.getElementById('queue-empty').hidden") is True
    # the live log: lines keep coming while the page watches
    page.js("document.querySelector('#jobs tr[data-id=\"%s\"] "
            "button.log').click()" % big)
    page.wait_js("document.getElementById('log').textContent"
                 ".includes('line 3\\n')")
    first = page.js("document.getElementById('log').textContent.length")
    page.wait(lambda: page.js("document.getElementById('log').textContent"
                              ".length") > first + 20, what="more output")
    page.screenshot("dashboard-queue-log")
    assert page.errors == []
    # not clustered: no cluster section; a clustered state shows members
    assert page.js("window.gmux.session.cluster") is None
    assert page.js("document.getElementById('cluster-section').hidden")
    page.js("window.gmux.state.cluster = {id: 'c1', leader: 'm2', members:"
            " [{name: 'm1', addr: '10.0.0.1:7070', cards: 2, state: 'up'},"
            " {name: 'm2', addr: '10.0.0.2:7070', cards: 4, state: 'up'}]};"
            " renderCluster()")
    assert not page.js("document.getElementById('cluster-section').hidden")
    assert page.js("[...document.querySelectorAll('#members tbody tr')]"
                   ".map(r => r.cells[0].textContent)") == \
        ["m1", "m2 (leader)"]
    host.gmux("stop", big, check=0)
    page.wait_js("document.querySelector('#queue tr[data-id=\"%s\"]') "
                 "=== null" % waiting)


def test_bad_input_names_the_field(daemon):
    daemon.start("--ui")
    for q, field in (("window=soon", "window"), ("window=1s", "window"),
                     ("window=40d", "window"), ("points=0", "points"),
                     ("points=241", "points"), ("points=-1", "points"),
                     ("by=job", "by"), ("by=nobody", "by")):
        code, text = daemon.curl("GET", "/v1/usage/series?" + q)
        assert code == 400, (q, code, text)
        assert json.loads(text)["error"].startswith(field), (q, text)
    code, text = daemon.curl("GET", "/ui/nothing.js")
    assert code == 404 and "no such file" in text
    code, text = daemon.curl("GET", "/ui/..%2fgmux.pid")
    assert code == 404
    code, text = daemon.curl("POST", "/ui/login")
    assert code == 400 and "socket" in text
    code, text = daemon.curl("DELETE", "/v1/events")
    assert code == 405


def test_the_page_carries_its_policy(daemon):
    daemon.start("--ui")
    r = subprocess.run(["curl", "-s", "-i", "--unix-socket", daemon.socket,
                        "http://gmux/ui/"], capture_output=True, timeout=30)
    head = r.stdout.decode().split("\r\n\r\n", 1)[0].lower()
    assert "content-security-policy: default-src 'none'; script-src 'self'" \
        in head
    assert "x-frame-options: deny" in head
    assert "content-type: text/html" in head


def test_a_revoked_token_ends_the_session(host, page):
    dave = host.token_for("dave")
    logged_in(page, host.base, dave)
    tid = next(t["id"] for t in host.json("token", "ls", "--json")
               if t["owner"] == "dave" and not t.get("invite"))
    host.gmux("token", "revoke", tid, check=0)
    # the stream ends; the page finds its cookie no longer good
    page.wait(lambda: page.path() == "/ui/login", 15, "the login page")
