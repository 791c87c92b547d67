"""Big values to and from a @mesh worker on another cluster member
(docs/tasks.md, "Big values over TCP"): a remote caller's 64 MiB
arguments go up to the entry's spool, the worker on the other member is
streamed them over its relayed stream and streams its 64 MiB result back
there, and the caller reads it; bytes checked by hash."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from clusterlib import etcd, members, tmp  # noqa: F401 (fixtures)
from clusterlib import WARM
from test_cluster_mesh import SDK, _pair, _result, tcp_env

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

# A caller over TCP whose four workers (two on each member) have
# connected before its map: the first four leases go to every idle one,
# so the other member's workers run some of the big calls.  Each task
# returns where it ran, its argument's hash and a 64 MiB result made
# from it; the caller checks every byte by hash.
CALLER = textwrap.dedent("""\
    import hashlib, json, os, sys, time
    sys.path.insert(0, %(sdk)r)
    import gmux
    import gmux.mesh
    M = sys.modules["gmux.mesh"]
    %(warm)s
    N, SIZE = int(sys.argv[1]), int(sys.argv[2])

    def big(b):
        return (os.environ.get("GMUX_CLUSTER_MEMBER"),
                hashlib.sha256(b).hexdigest(), b[::-1])

    f = gmux.mesh(share=0.5, target="a")(big)
    warm(f, "a")
    args = [os.urandom(SIZE) for _ in range(N)]
    out = []
    for a, (m, h, r) in zip(args, f.map(args)):
        out.append([m, h == hashlib.sha256(a).hexdigest(),
                    hashlib.sha256(r).digest() ==
                    hashlib.sha256(a[::-1]).digest(), len(r)])
    print(json.dumps(out))
""")


def test_a_worker_on_another_member_takes_and_gives_64_mib(members, tmp):
    a, b = _pair(members, "v1")
    script = os.path.join(tmp, "big.py")
    with open(script, "w") as f:
        f.write(CALLER % {"sdk": SDK, "warm": WARM})
    env = tcp_env(a, tmp, GMUX_SYNC="0")
    p = subprocess.Popen([sys.executable, script, "4", str(64 << 20)],
                         env=env, cwd=tmp, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    res = _result(p)
    assert [r[1:] for r in res] == [[True, True, 64 << 20]] * 4, res
    assert "b" in {m for m, _, _, _ in res}, res
    # b relayed the values: none of them touched its disk
    assert not os.path.exists(os.path.join(b.home, "tasks", "spool", "o"))
