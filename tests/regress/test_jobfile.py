"""Job files, the request's directives, arrays and payloads on one host, on
fake cards, through the real daemon and CLI (docs/scheduling.md, "Job
files and directives"): what a standalone host honours (a card's vendor or
model, whole cards, CPUs and RAM, its name and tags, --time, --output),
what it refuses and why (a gang), #GMUX and #SBATCH lines and each bad
one's error, arrays kept as one record (their elements' environment, the %
limit, ps, stop, a restart), submit --payloads --wait, status and queue."""

import json
import os
import pty
import sqlite3
import subprocess
import time

from conftest import GMUX, T0, wait_for
from remotelib import https_json

G = 1 << 30
FAKE = "2xH100:80G,1xRTX4090:24G"


def run_d(d, *args):
    r = d.gmux("run", "-d", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip()


def refused(d, *args):
    """gmux run ARGS must be refused at once; returns its one-line error."""
    r = d.gmux("run", *args, "--", "true")
    assert r.returncode != 0, r.stdout
    err = r.stderr.decode().strip()
    assert len(err.splitlines()) == 1, err
    return err


def submit(d, tmp_path, text, *args, name="job.gmux", check=0):
    path = tmp_path / name
    path.write_text(text)
    r = d.gmux("submit", *args, str(path))
    if check is not None:
        assert r.returncode == check, (r.stdout, r.stderr)
    return r


def jobs(d):
    return {j["id"]: j for j in d.json("ps", "-a", "--json")}


def wait_ended(d, jid, timeout=30):
    return d.wait_state(jid, ("exited", "failed", "stopped"), timeout)


# -- what a standalone host refuses, and why

def test_what_this_host_cannot_do_is_refused_with_the_reason(daemon):
    daemon.start(fake=FAKE)
    assert "no card is an a100 (this host has: 2 x H100, 1 x RTX4090)" in \
        refused(daemon, "--gpus", "a100:1")
    assert "gpus: needs 3 h100 cards; this host has 2" in \
        refused(daemon, "--gpus", "h100:3")
    assert "nodes: a gang of 2 members needs a cluster" in \
        refused(daemon, "--nodes", "2")
    assert "cpus: needs 4096 CPUs; this host has" in \
        refused(daemon, "--cpus", "4096")
    assert "ram: needs 64T; this host has" in refused(daemon, "--ram", "64T")
    assert "server: no member is named gpu9" in \
        refused(daemon, "--server", "gpu9")
    assert "partition: this host has no tag big" in \
        refused(daemon, "--partition", "big")
    assert "mode: overcommit admits on measured memory use, and no card " \
        "here measures it (fake cards do not)" in \
        refused(daemon, "--mode", "overcommit", "--share", "0.5")
    assert "vram: needs 1 card with 100G" in \
        refused(daemon, "--mode", "exclusive", "--vram", "100G")
    # the request's own mistakes name the field
    assert "mode: exclusive takes whole cards, not a share of 0.5" in \
        refused(daemon, "--mode", "exclusive", "--share", "0.5")
    assert "cards: 3, but gpus asks for 2" in \
        refused(daemon, "--gpus", "2", "--cards", "3")
    # nothing was kept of any of them
    assert daemon.json("ps", "-a", "--json") == []


def test_bad_flags_are_usage_errors(daemon):
    daemon.start(fake=FAKE)
    for args, what in [(["--gpus", "h100:0"], "--gpus: "),
                       (["--mode", "all"], "--mode: "),
                       (["--time", "forever"], "--time: "),
                       (["--array", "5-1"], "--array: "),
                       (["--cpus", "0"], "--cpus: "),
                       (["--ram", "lots"], "--ram: ")]:
        r = daemon.gmux("run", *args, "--", "true")
        assert r.returncode == 2, (args, r.stderr)
        assert what in r.stderr.decode(), r.stderr


def test_the_api_names_the_bad_field(daemon):
    daemon.start(fake=FAKE)
    for body, field in [({"gpus": 2}, "gpus: "),
                        ({"mode": "x"}, "mode: "),
                        ({"array": "1,1"}, "array: "),
                        ({"element": {"of": 1}}, "element: "),
                        ({"payloads": []}, "payloads: "),
                        ({"name": "a/b"}, "name: ")]:
        body["argv"] = ["true"]
        code, text = daemon.curl("POST", "/v1/jobs", json.dumps(body))
        assert code == 400, (body, text)
        assert json.loads(text)["error"].startswith(field), text
    code, text = daemon.curl("POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "gpus": "tpu:1"}))
    assert code == 422 and "no card is an tpu" in text, text


# -- what it honours

def test_a_model_or_vendor_picks_its_cards(daemon):
    daemon.start(fake=FAKE)
    j = run_d(daemon, "--gpus", "rtx4090:1", "--", "sleep", "30")
    assert daemon.wait_state(j, "running")["card"] == 2
    # whole cards by default: the next rtx4090 job waits for it
    k = run_d(daemon, "--gpus", "rtx4090", "--", "true")
    assert daemon.wait_state(k, "queued")
    n = run_d(daemon, "--gpus", "nvidia:2", "--share", "0.5", "--", "true")
    wait_ended(daemon, n)
    assert jobs(daemon)[n]["exit_code"] == 0
    daemon.gmux("stop", j, check=0)
    assert wait_ended(daemon, k)["card"] == 2


def test_exclusive_takes_a_whole_card_and_vram_is_the_shared_cap(daemon):
    daemon.start(fake="1xH100:80G")
    j = run_d(daemon, "--mode", "exclusive", "--", "sleep", "30")
    assert daemon.wait_state(j, "running")["share"] == 1
    k = run_d(daemon, "--share", "0.1", "--", "true")
    assert daemon.wait_state(k, "queued")
    daemon.gmux("stop", j, check=0)
    wait_ended(daemon, k)
    v = run_d(daemon, "--share", "0.25", "--vram", "60G", "--", "true")
    assert jobs(daemon)[v]["mem"] == 60 * G


def test_the_host_s_name_and_tags(daemon):
    with open(os.path.join(daemon.home, "config"), "w") as f:
        f.write("NAME=gpu2\nTAGS=big, fast\n")
    daemon.start(fake=FAKE)
    for args in (["--server", "gpu2"], ["--partition", "fast"],
                 ["--partition", "big", "--server", "gpu2"]):
        r = daemon.gmux("run", *args, "--", "true")
        assert r.returncode == 0, (args, r.stderr)
    assert "no tag small (TAGS in its config: big, fast)" in \
        refused(daemon, "--partition", "small")


def test_a_job_past_its_time_is_stopped_and_says_why(daemon):
    daemon.start(fake=FAKE)
    t0 = time.monotonic()
    r = daemon.gmux("run", "--time", "1s", "--grace", "0", "--", "sleep",
                    "30", timeout=30)
    assert time.monotonic() - t0 < 10
    assert r.returncode != 0
    j = jobs(daemon)["j1"]
    assert j["state"] == "stopped"
    assert j["reason"] == "its time limit (1s) was reached"
    assert j["time_limit_ms"] == 1000


def test_name_cpus_output_error_and_chdir(daemon, tmp_path):
    daemon.start(fake=FAKE)
    sub = tmp_path / "sub"
    sub.mkdir()
    r = daemon.gmux("run", "--job-name", "train", "--cpus", "1",
                    "--chdir", str(sub), "--output", "o-%x-%j.txt",
                    "--error", "e-%j.txt", "--", "sh", "-c",
                    "echo $GMUX_JOB_NAME $SLURM_JOB_NAME $GMUX_CPUS "
                    "$SLURM_CPUS_PER_TASK $PWD; echo oops >&2")
    assert r.returncode == 0, r.stderr
    line = "train train 1 1 %s\n" % sub
    assert r.stdout.decode() == line       # it streams back as ever
    assert (sub / "o-train-j1.txt").read_text() == line
    assert (sub / "e-j1.txt").read_text() == "oops\n"
    # the job's files, made with the caller's umask
    r = subprocess.run(["sh", "-c", 'umask 027; exec "$0" run --output '
                        '"$1" -- true', GMUX, str(sub / "u.txt")],
                       env=daemon.env, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert (sub / "u.txt").stat().st_mode & 0o777 == 0o640
    assert jobs(daemon)["j1"]["name"] == "train"
    # an array's elements: %A the array, %a the index
    a = run_d(daemon, "--array", "3,7", "--job-name", "n", "--chdir",
              str(sub), "--output", "%x-%A_%a.out", "--", "sh", "-c",
              "echo $GMUX_ARRAY_INDEX")
    wait_ended(daemon, a)
    for i in (3, 7):
        assert (sub / ("n-%s_%d.out" % (a, i))).read_text() == "%d\n" % i
    # an output file that cannot be made fails the job, saying where
    r = daemon.gmux("run", "--output", "/nonexistent/o.txt", "--", "true")
    assert r.returncode != 0
    failed = [j for j in jobs(daemon).values() if j["state"] == "failed"]
    assert len(failed) == 1 and "/nonexistent/o.txt" in failed[0]["reason"]
    r = daemon.gmux("run", "--output", "%q.txt", "--", "true")
    assert r.returncode != 0 and b"output: %q is not %j" in r.stderr


# -- job files

SWEEP = """#!/bin/sh
#GMUX --gpus nvidia:1 --share 0.5 --vram 20G --cpus 1 --ram 1G
#GMUX --array 0-5%2 --priority 3 --mode shared
#SBATCH --job-name=sweep --time=02:00:00      # the common #SBATCH lines work
echo "$GMUX_ARRAY_JOB_ID $GMUX_ARRAY_INDEX $GMUX_ARRAY_COUNT" \
  "$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT" \
  "$SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $SLURM_JOB_NAME" \
  >> OUT
"""


def test_a_job_file_with_an_array(daemon, tmp_path):
    daemon.start(fake=FAKE)
    out = tmp_path / "out"
    r = submit(daemon, tmp_path, SWEEP.replace("OUT", str(out)))
    jid = r.stdout.decode().strip()
    assert jid == "j1"
    a = wait_ended(daemon, jid)
    assert a["state"] == "exited" and a["exit_code"] == 0
    assert a["count"] == 6 and a["limit"] == 2
    assert a["name"] == "sweep" and a["priority"] == 3
    assert a["time_limit_ms"] == 2 * 3600 * 1000
    lines = sorted(out.read_text().splitlines())
    assert lines == ["j1 %d 6 1 %d 6 0 5 sweep" % (i, i) for i in range(6)]
    els = [j for j in jobs(daemon).values() if j.get("array_job") == jid]
    assert sorted(e["id"] for e in els) == ["j1_%d" % i for i in range(6)]
    assert all(e["mem"] == 20 * G and e["share"] == 0.5 for e in els)
    # an element is a job of its own number too, as the books name it
    e = next(e for e in els if e["id"] == jid + "_4")
    assert e["job_id"] != jid and e["job_id"] not in [x["id"] for x in els]
    assert daemon.json("status", "--json", e["job_id"])["id"] == jid + "_4"
    by_job = daemon.json("usage", "--by", "job", "--json")
    assert e["job_id"] in json.dumps(by_job)


def test_slurm_lines_and_flags_over_the_file(daemon, tmp_path):
    daemon.start(fake=FAKE)
    r = submit(daemon, tmp_path, "#!/bin/sh\n#SBATCH --gres=gpu:rtx4090:1\n"
               "#SBATCH -J first --mem=512 -c 1 -t 5 --nodes=1\n"
               "#SBATCH --output=slurm-%%j.out --chdir=%s\n"
               "echo $SLURM_JOB_NAME\n" % tmp_path,
               "--job-name", "second")
    jid = r.stdout.decode().strip()
    j = wait_ended(daemon, jid)
    assert j["exit_code"] == 0 and j["card"] == 2
    assert j["gpus"] == "rtx4090:1" and j["ram"] == 512 << 20
    assert j["time_limit_ms"] == 5 * 60 * 1000
    assert (tmp_path / ("slurm-%s.out" % jid)).read_text() == "second\n"


def test_each_bad_directive_is_an_error_naming_its_line(daemon, tmp_path):
    daemon.start(fake=FAKE)
    r = submit(daemon, tmp_path, "#!/bin/sh\n"
               "#GMUX --gpus\n"                    # 2: no value
               "#GMUX --share 2 --bogus\n"         # 3: bad value, unknown
               "#SBATCH --account=lab\n"           # 4: not read by gmux
               "#SBATCH --gres=disk:2\n"           # 5: not a gpu
               "#GMUXX --cpus 1\n"                 # 6: no space
               "#GMUX --array 5-1\n"               # 7: bad array
               "#GMUX --job-name 'open\n"          # 8: quote
               "#GMUX --time forever\n"            # 9: bad time
               "#SBATCH --nodes=2-4\n"             # 10: a range
               "echo hi\n"
               "#GMUX --cpus 2\n",                 # 12: after the body
               check=2)
    assert r.stdout == b""
    err = r.stderr.decode().splitlines()
    path = str(tmp_path / "job.gmux")
    want = ["line 2: --gpus: needs a value",
            "line 3: --bogus: not a flag of gmux run",
            "line 3: --share: '2' is not",
            "line 4: #SBATCH --account: not one gmux reads",
            "line 5: --gres=disk:2: only gpu",
            "line 6: #GMUX must be followed by a space",
            "line 7: --array: ",
            "line 8: a quote is not closed",
            "line 9: --time: 'forever' is not a time limit",
            "line 10: #SBATCH --nodes: '2-4'",
            "line 12: #GMUX after the script's first command (line 11)"]
    assert len(err) == len(want), err
    for w in want:
        assert any(e.startswith("gmux submit: %s: %s" % (path, w))
                   for e in err), (w, err)
    assert daemon.json("ps", "-a", "--json") == []


def test_the_script_is_copied_when_submitted(daemon, tmp_path):
    daemon.start(fake=FAKE)
    gate = tmp_path / "gate"
    run_d(daemon, "--share", "1", "--card", "2", "--", "sh", "-c",
          "while [ ! -e %s ]; do sleep 0.02; done" % gate)
    r = submit(daemon, tmp_path, "#GMUX --gpus rtx4090 --job-name x\n"
               "echo first\n")
    jid = r.stdout.decode().strip()
    daemon.wait_state(jid, "queued")
    (tmp_path / "job.gmux").write_text("echo second\n")
    gate.write_text("")
    wait_ended(daemon, jid)
    assert daemon.gmux("logs", jid, check=0).stdout == b"first\n"
    assert jid in daemon.gmux("ps", "-a", check=0).stdout.decode()


# -- arrays

def test_the_limit_holds_and_ps_shows_an_array_compactly(daemon, tmp_path):
    daemon.start(fake=FAKE)
    gate = tmp_path / "gate"
    jid = run_d(daemon, "--array", "0-7%3", "--", "sh", "-c",
                "while [ ! -e %s ]; do sleep 0.02; done" % gate)
    wait_for(lambda: daemon.job(jid).get("counts", {}).get("running") == 3,
             what="3 running")
    time.sleep(0.3)
    a = daemon.job(jid)
    assert a["counts"]["running"] == 3 and a["pending"] == "3-7%3"
    ps = daemon.gmux("ps", check=0).stdout.decode()
    assert "%s_[3-7%%3]" % jid in ps
    assert "%s_0" % jid in ps and "%s_3 " % jid not in ps
    # ps --json lists only elements that were made
    ids = [j["id"] for j in daemon.json("ps", "--json")]
    assert sorted(ids) == sorted([jid] + ["%s_%d" % (jid, i)
                                          for i in range(3)])
    gate.write_text("")
    wait_ended(daemon, jid)
    assert daemon.job(jid)["counts"]["ended"] == 8


def test_stop_an_array_an_element_and_one_not_made_yet(daemon, tmp_path):
    daemon.start(fake=FAKE)
    jid = run_d(daemon, "--array", "0-9%2", "--", "sleep", "30")
    wait_for(lambda: daemon.job(jid).get("counts", {}).get("running") == 2,
             what="2 running")
    daemon.gmux("stop", "%s_1" % jid, check=0)   # running: that one only
    r = daemon.gmux("stop", "%s_5" % jid)        # not made yet: never is
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    r = daemon.gmux("stop", "%s_42" % jid)
    assert r.returncode != 0 and b"no index 42" in r.stderr
    wait_for(lambda: daemon.job("%s_2" % jid).get("state") == "running",
             what="the next element")
    assert daemon.job(jid)["state"] == "running"
    r = daemon.gmux("logs", jid)
    assert r.returncode != 0
    assert b"is an array: name one of its elements" in r.stderr
    r = daemon.gmux("stop", "--grace", "0", jid, check=0)  # the rest
    assert r.stdout.decode() == jid + "\n"
    a = daemon.job(jid)             # stop waits until it has ended
    assert a["state"] == "stopped" and a["pending"] == ""
    made = [j for j in jobs(daemon) if j.startswith(jid + "_")]
    assert "%s_5" % jid not in made and len(made) < 10
    assert all(jobs(daemon)[m]["state"] == "stopped" for m in made)
    st = daemon.json("status", "--json", jid)
    assert [e["state"] for e in st["elements"]][5] == "stopped"


def test_an_array_survives_a_restart_and_runs_each_element_once(
        daemon, tmp_path):
    daemon.start(fake=FAKE)
    out = tmp_path / "out"
    gate = tmp_path / "gate"
    jid = run_d(daemon, "--array", "0-5%2", "--", "sh", "-c",
                "echo $GMUX_ARRAY_INDEX >> %s; "
                "while [ ! -e %s ]; do sleep 0.02; done" % (out, gate))
    wait_for(lambda: daemon.job(jid).get("counts", {}).get("running") == 2,
             what="2 running")
    daemon.kill9()
    # as if it died after making an element but before saying so
    db = sqlite3.connect(os.path.join(daemon.home, "state.db"))
    db.execute("UPDATE arrays SET next = 0")
    db.commit()
    db.close()
    daemon.start(fake=FAKE)
    a = daemon.job(jid)
    assert a["counts"]["running"] == 2 and a["pending"] == "2-5%2"
    gate.write_text("")
    a = wait_ended(daemon, jid)
    assert a["state"] == "exited"
    assert sorted(out.read_text().split()) == [str(i) for i in range(6)]


def test_ten_thousand_elements_are_one_record(daemon):
    daemon.start(fake=FAKE)
    t0 = time.monotonic()
    jid = run_d(daemon, "--array", "0-9999%1", "--", "sleep", "30")
    took = time.monotonic() - t0
    a = daemon.job(jid)
    assert a["count"] == 10000
    assert took < 2.0, took     # the benchmark holds it to 50 ms
    n = len(daemon.json("ps", "-a", "--json"))
    assert n <= 4, n            # the array and its two made elements
    daemon.gmux("stop", jid, check=0)
    assert wait_ended(daemon, jid)["state"] == "stopped"


# -- payloads, status, queue

PAYLOAD_SCRIPT = """#!/usr/bin/python3
import json, sys
p = json.load(sys.stdin)
print("working on", p)
if p.get("fail"):
    sys.exit(3)
print(json.dumps({"lr": p["lr"], "twice": p["lr"] * 2}))
"""


def test_payloads_results_and_wait(daemon, tmp_path):
    daemon.start(fake=FAKE)
    (tmp_path / "p.json").write_text(json.dumps(
        [{"lr": 1}, {"lr": 2}, {"lr": 3}]))
    (tmp_path / "grid.py").write_text(PAYLOAD_SCRIPT)
    # gpumesh's order: the flags after the script
    r = daemon.gmux("submit", str(tmp_path / "grid.py"), "--payloads",
                    str(tmp_path / "p.json"), "--wait", timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    jid = out[0]
    assert out[-4].startswith("ELEMENT")
    assert "3/3 done" in r.stdout.decode()      # plain lines: not a tty
    assert '{"lr":2,"twice":4}' in out[-2]
    st = daemon.json("status", "--json", jid)
    assert [e["result"] for e in st["elements"]] == [
        {"lr": i, "twice": 2 * i} for i in (1, 2, 3)]
    assert all(e["host"] and e["exit_code"] == 0 for e in st["elements"])
    # one failure: its result is null, and submit --wait exits 1
    (tmp_path / "q.json").write_text(json.dumps([{"lr": 1}, {"fail": 1}]))
    r = daemon.gmux("submit", "--payloads", str(tmp_path / "q.json"),
                    "--wait", str(tmp_path / "grid.py"), timeout=60)
    assert r.returncode == 1, r.stderr
    st = daemon.json("status", "--json", r.stdout.decode().split()[0])
    assert st["state"] == "failed"
    assert [e["exit_code"] for e in st["elements"]] == [0, 3]
    assert st["elements"][1]["result"] is None
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = daemon.gmux("submit", "--payloads", str(bad), str(tmp_path /
                                                         "grid.py"))
    assert r.returncode == 2 and b"must be a JSON array" in r.stderr


def test_queue_shows_order_priority_age_and_reason(daemon, tmp_path):
    daemon.start(fake="1xH100:80G")
    gate = tmp_path / "gate"
    run_d(daemon, "--share", "1", "--", "sh", "-c",
          "while [ ! -e %s ]; do sleep 0.02; done" % gate)
    a = run_d(daemon, "--share", "0.5", "--priority", "2", "--", "true")
    b = run_d(daemon, "--share", "0.5", "--priority", "7", "--", "true")
    arr = run_d(daemon, "--share", "0.5", "--array", "0-3", "--", "true")
    q = wait_for(lambda: (lambda q: q if len(q) == 5 else None)(
        daemon.json("queue", "--json")), what="5 waiting")
    # the array's two elements in the queue have the default priority, 5:
    # before a's 2
    assert [e["id"] for e in q] == [b, arr + "_0", arr + "_1", a, arr]
    assert [e["position"] for e in q] == [1, 2, 3, 4, None]
    assert q[0]["priority"] == 7 and q[0]["effective_priority"] >= 7
    assert "0.5 of a card" in q[0]["reason"]
    assert q[4]["pending"] == "2-3" and "behind its elements" in q[4]["reason"]
    text = daemon.gmux("queue", check=0).stdout.decode()
    assert text.splitlines()[0].split() == ["POS", "ID", "OWNER", "PRIO",
                                            "WAITED", "WAITS", "FOR"]
    assert "%s_[2-3]" % arr in text
    gate.write_text("")
    wait_ended(daemon, arr)
    assert daemon.json("queue", "--json") == []


def test_retention_forgets_an_old_array_with_its_elements(clocked):
    d = clocked
    d.env["GMUX_JOB_RETENTION_DAYS"] = "2"
    d.start(fake=FAKE)
    old = run_d(d, "--array", "0-2", "--", "true")
    wait_ended(d, old)
    d.stop()
    with open(os.path.join(d.home, "clock"), "w") as f:
        f.write(str(T0 + 3 * 24 * 3600 * 1000))
    d.start(fake=FAKE)
    wait_for(lambda: d.json("ps", "-a", "--json") == [],
             what="the array and its elements to be pruned")
    r = d.gmux("status", old)
    assert r.returncode == 1 and b"no job" in r.stderr
    db = sqlite3.connect(os.path.join(d.home, "state.db"))
    assert db.execute("SELECT count(*) FROM arrays").fetchone()[0] == 0
    db.close()


def test_wait_draws_a_bar_on_a_terminal(daemon, tmp_path):
    daemon.start(fake=FAKE)
    (tmp_path / "p.json").write_text(json.dumps([1, 2, 3, 4]))
    (tmp_path / "t.sh").write_text("#!/bin/sh\ncat\n")
    leader, follower = pty.openpty()
    p = subprocess.Popen([GMUX, "submit", "--payloads",
                          str(tmp_path / "p.json"), "--wait",
                          str(tmp_path / "t.sh")], env=daemon.env,
                         stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert p.wait(timeout=30) == 0, p.stderr.read()
    os.close(leader)
    text = out.decode()
    assert "\r  ####################" in text and "100%  4/4 done" in text
    assert text.splitlines()[-1].split()[-1] == "4"   # the last result


def test_over_tcp_an_owner_sees_only_its_own_and_arrays_stay_home(
        make_daemon):
    d = make_daemon()
    d.serve_tls(fake=FAKE)
    alice = d.token_for("alice")
    gate = "/tmp/never-%d" % os.getpid()
    run_d(d, "--share", "1", "--card", "2", "--", "sh", "-c",
          "while [ ! -e %s ]; do sleep 0.02; done" % gate)
    mine = run_d(d, "--gpus", "rtx4090", "--array", "0-3", "--", "true")
    waiting = run_d(d, "--gpus", "rtx4090", "--", "true")
    assert len(d.json("queue", "--json")) == 4     # the host sees all
    st, q = https_json(d.port, "GET", "/v1/queue", token=alice)
    assert st == 200 and q == []
    for path in ("/v1/jobs/%s/status" % mine, "/v1/jobs/%s" % mine,
                 "/v1/jobs/%s/status" % waiting):
        st, j = https_json(d.port, "GET", path, token=alice)
        assert st == 404 and j["error"].startswith("no job "), (path, st, j)
    st, j = https_json(d.port, "POST", "/v1/jobs/%s/stop" % mine,
                       token=alice)
    assert st == 404, j
    st, j = https_json(d.port, "GET", "/v1/jobs?all=1", token=alice)
    assert st == 200 and j == []
    st, j = https_json(d.port, "POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "array": "0-3"}).encode(), token=alice)
    assert st in (403, 422), j
    assert st == 403 or "submit it on the host" in j["error"], j
    st, j = https_json(d.port, "POST", "/v1/jobs", json.dumps(
        {"argv": ["true"], "output": "o.txt"}).encode(), token=alice)
    assert st in (403, 422), j
    assert st == 403 or "output streams back" in j["error"], j
    open(gate, "w").close()
    wait_ended(d, mine)
    os.unlink(gate)


def test_a_card_type_finds_the_remote_host_that_has_one(make_daemon,
                                                          make_client):
    h100, rtx = make_daemon(), make_daemon()
    c = make_client()
    for name, d, fake in (("a", h100, "1xH100:80G"),
                          ("b", rtx, "1xRTX4090:24G")):
        assert c.add(name, d.serve_tls(fake=fake)).returncode == 0
    r = c.gmux("run", "--gpus", "rtx4090:1", "--", "echo", "here")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"here\n"
    assert len(rtx.json("ps", "-a", "--json")) == 1
    assert h100.json("ps", "-a", "--json") == []
    r = c.gmux("run", "--gpus", "mi300x:1", "--", "true")
    assert r.returncode != 0
    assert r.stderr.count(b"no card is an mi300x") == 2, r.stderr


def test_a_queued_job_whose_card_type_went_is_refused_after_a_restart(
        daemon):
    daemon.start(fake=FAKE)
    run_d(daemon, "--card", "2", "--share", "1", "--", "sleep", "30")
    j = run_d(daemon, "--gpus", "rtx4090", "--", "true")
    daemon.wait_state(j, "queued")
    daemon.stop()
    daemon.start(fake="2xH100:80G")
    assert daemon.wait_state(j, "failed")["card"] is None


def test_a_job_file_to_a_remote_host(make_daemon, make_client):
    d = make_daemon()
    c = make_client()
    assert c.add("gpu1", d.serve_tls(fake=FAKE)).returncode == 0
    sub = os.path.join(c.work, "jobs")
    os.makedirs(sub)
    with open(os.path.join(sub, "job.gmux"), "w") as f:
        f.write("#!/bin/sh -e\n#SBATCH --gres=gpu:rtx4090:1 -J far\n"
                "#GMUX --time 5m\necho \"$SLURM_JOB_NAME $1 $(cat data)\"\n")
    with open(os.path.join(c.work, "data"), "w") as f:
        f.write("sent\n")
    r = c.gmux("submit", "jobs/job.gmux", "arg1")
    assert r.returncode == 0, r.stderr
    ref = r.stdout.decode().strip()
    assert ref.startswith("gpu1:j")
    jid = ref.split(":")[1]
    j = wait_ended(d, jid)
    assert j["exit_code"] == 0 and j["card"] == 2 and j["name"] == "far"
    assert j["time_limit_ms"] == 5 * 60 * 1000
    assert c.gmux("logs", ref, check=0).stdout == b"far arg1 sent\n"
    # what stays home
    with open(os.path.join(c.work, "arr.gmux"), "w") as f:
        f.write("#GMUX --array 0-3\ntrue\n")
    r = c.gmux("submit", "arr.gmux")
    assert r.returncode == 2 and b"an array is submitted on its host" in \
        r.stderr
    r = c.gmux("submit", "--wait", "jobs/job.gmux")
    assert r.returncode == 2 and b"--wait is for this machine" in r.stderr
    outside = os.path.join(c.home, "out.gmux")
    with open(outside, "w") as f:
        f.write("true\n")
    r = c.gmux("submit", outside)
    assert r.returncode == 2 and b"must be under the directory" in r.stderr


def test_an_array_s_elements_wait_with_the_array_s_age(clocked, tmp_path):
    d = clocked
    d.start(fake="1xH100:80G")
    order = tmp_path / "order"
    gate = tmp_path / "gate"
    run_d(d, "--share", "1", "--", "sh", "-c",
          "while [ ! -e %s ]; do sleep 0.02; done" % gate)
    arr = run_d(d, "--share", "1", "--array", "0-1", "--", "sh", "-c",
                "echo a$GMUX_ARRAY_INDEX >> %s" % order)
    d.set_clock(T0 + 10 * 60 * 1000, tick=False)
    late = run_d(d, "--share", "1", "--", "sh", "-c",
                 "echo late >> %s" % order)
    gate.write_text("")
    wait_ended(d, late)
    wait_ended(d, arr)
    # element 1 was made after "late" came, but it is as old as its array
    assert order.read_text().split() == ["a0", "a1", "late"]
    r = d.gmux("run", "--array", "0-1", "--timeout", "1m", "--", "true")
    assert r.returncode != 0 and b"timeout_ms: not for an array" in r.stderr


def test_an_array_s_retry_with_its_key_gets_the_same_array(daemon):
    daemon.start(fake=FAKE)
    body = json.dumps({"argv": ["true"], "array": "0-2"})
    code, a = daemon.curl("POST", "/v1/jobs?idempotency_key=k-1", body)
    assert code == 201, a
    first = json.loads(a)["id"]
    wait_ended(daemon, first)
    code, b = daemon.curl("POST", "/v1/jobs?idempotency_key=k-1", body)
    assert code == 200 and json.loads(b)["id"] == first, b
    assert len([j for j in jobs(daemon) if j.startswith(first)]) == 4
