"""The second Ctrl-C of gmux run detaches (issue 16, item 2): the job
keeps running, the SIGKILL that the first Ctrl-C's stop had pending is
cancelled, locally and on a remote host.  A later stop still stops it."""

import signal
import subprocess
import time

from conftest import wait_for

STUBBORN = ["sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.1; done"]


def ctrl_c_twice(p):
    assert p.stdout.readline() == b"up\n"
    p.send_signal(signal.SIGINT)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert b"detached from" in err
    return err


def test_local_detach_cancels_the_pending_kill(daemon):
    daemon.start()
    p = daemon.popen("run", "--grace", "1500ms", "--", *STUBBORN,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     bufsize=0)
    ctrl_c_twice(p)
    time.sleep(2.5)             # past the grace
    assert daemon.job("j1")["state"] == "running"
    daemon.gmux("stop", "--grace", "0", "j1", check=0)
    daemon.wait_state("j1", "stopped")


def test_remote_detach_cancels_the_pending_kill(make_daemon, make_client):
    d = make_daemon()
    target = d.serve_tls()
    c = make_client()
    assert c.add("gpu1", target).returncode == 0
    p = c.popen("run", "--grace", "1500ms", "--", *STUBBORN,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    err = ctrl_c_twice(p)
    assert b"gpu1:j1" in err
    time.sleep(2.5)
    assert d.job("j1")["state"] == "running"
    c.gmux("stop", "--grace", "0", "gpu1:j1", check=0)
    wait_for(lambda: d.job("j1")["state"] == "stopped", 10)


def test_a_preemption_is_not_cancelled_by_the_api(daemon):
    # Only a user's stop can be withdrawn: cancel on a job with no stop
    # pending changes nothing and says so.
    daemon.start()
    r = daemon.gmux("run", "-d", "--", "sleep", "30", check=0)
    code, text = daemon.curl("POST", "/v1/jobs/j1/stop", '{"cancel":true}')
    assert code == 409, text
    assert "no stop" in text
    assert daemon.job("j1")["state"] == "running"
    code, text = daemon.curl("POST", "/v1/jobs/j1/stop",
                             '{"cancel":"yes"}')
    assert code == 400 and "cancel" in text
    daemon.gmux("stop", "--grace", "0", "j1", check=0)
