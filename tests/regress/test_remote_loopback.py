"""A remote job's --allow to the host's loopback is not refused silently
(issue 16, item 5): gmux run says at submission that the host keeps its
loopback closed to remote jobs, and the refusal is in the job's log.  A
host whose operator opened it (REMOTE_LOOPBACK=1) says nothing."""

import socket

PY = "/usr/bin/python3"
CONNECT = ("import socket, sys\n"
           "try:\n"
           "    socket.create_connection(('127.0.0.1', %d), timeout=5)\n"
           "    print('connected')\n"
           "except OSError as e:\n"
           "    print('refused', e.errno)\n")


def host_client(make_daemon, make_client, loopback=None):
    d = make_daemon()
    if loopback is not None:
        d.env["GMUX_REMOTE_LOOPBACK"] = loopback
    d.serve_tls()
    c = make_client()
    assert c.add("gpu1", d.target).returncode == 0
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    return d, c, srv, srv.getsockname()[1]


def test_run_says_the_loopback_is_closed_and_the_log_says_it_was(
        make_daemon, make_client):
    d, c, srv, port = host_client(make_daemon, make_client)
    allow = "127.0.0.1:%d" % port
    r = c.gmux("run", "--allow", allow, "--allow", "example.com:443",
               "--", PY, "-c", CONNECT % port)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"refused 111\n"
    err = r.stderr.decode().splitlines()
    assert err[0] == ("gmux run: gpu1: the host keeps its loopback closed "
                      "to remote jobs: %s will be refused; see "
                      "REMOTE_LOOPBACK" % allow), err
    said = ("gmux: the fence refused %s: this host keeps its loopback "
            "closed to remote jobs (see REMOTE_LOOPBACK)" % allow)
    assert said in err, err
    assert len(err) == 2, err
    # In the job's log, for whoever reads it later.
    logs = c.gmux("logs", "gpu1:j1", check=0).stderr.decode()
    assert said in logs
    # Said for localhost too, and never for a job that asks for none.
    r = c.gmux("run", "-d", "--allow", "localhost:%d" % port, "--", "true")
    assert b"localhost:%d will be refused" % port in r.stderr
    r = c.gmux("run", "--", "true")
    assert r.stderr == b""
    srv.close()


def test_an_open_loopback_says_nothing(make_daemon, make_client):
    d, c, srv, port = host_client(make_daemon, make_client, loopback="1")
    r = c.gmux("run", "--allow", "127.0.0.1:%d" % port, "--", PY, "-c",
               CONNECT % port)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"connected\n"
    assert r.stderr == b"", r.stderr
    srv.close()
