"""The caller's tree on a map's workers on other members (docs/python.md,
"Across a cluster"): a caller over TCP syncs its directory to its entry,
and the member of each of its workers there fetches that tree from the
entry (docs/cluster.md, "Trees"), so a function that imports the
caller's own modules runs there as on the entry."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from clusterlib import etcd, members, tmp  # noqa: F401 (fixtures)
from conftest import GMUX
from clusterlib import WARM
from test_cluster_mesh import SDK, _pair, _result, tcp_env

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None,
                                reason="etcd-server is not installed")

# The caller's own module and package, in its directory: the mapped
# function is helper's, and it uses pkg's and that of lib/extra.py
# (lib is on the caller's sys.path).
HELPER = textwrap.dedent("""\
    import os
    import extra
    from pkg import names

    def where(i):
        return [i, os.environ.get("GMUX_CLUSTER_MEMBER"), names.twice(i),
                names.__name__, extra.WHERE]
""")

# Its four workers (two on each member) connect before the map: the
# first leases go to every idle one, so b's run some of the tasks.
CALLER = textwrap.dedent("""\
    import json, os, sys, time
    sys.path.insert(0, %(sdk)r)
    sys.path.insert(0, os.path.abspath("lib"))
    import gmux
    import gmux.mesh
    import helper
    M = sys.modules["gmux.mesh"]
    %(warm)s

    f = gmux.mesh(share=0.5, target="a")(helper.where)
    warm(f, "a")
    try:
        print(json.dumps(f.map(range(12))))
    except gmux.MapError as e:
        print(json.dumps(sorted({str(x) for _, x in e.exceptions})))
        sys.exit(3)
""")


def _project(tmp):
    proj = os.path.join(tmp, "proj")
    os.makedirs(os.path.join(proj, "pkg"))
    os.makedirs(os.path.join(proj, "lib"))
    files = {"helper.py": HELPER,
             "caller.py": CALLER % {"sdk": SDK, "warm": WARM},
             "lib/extra.py": "WHERE = 'lib'\n", "pkg/__init__.py": "",
             "pkg/names.py": "def twice(i):\n    return 2 * i\n"}
    for name, text in files.items():
        with open(os.path.join(proj, name), "w") as f:
            f.write(text)
    return proj


def _run(a, proj, **env):
    p = subprocess.Popen([sys.executable, "caller.py"],
                         env=tcp_env(a, os.path.dirname(proj), **env),
                         cwd=proj, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    return p


def test_workers_on_another_member_import_the_callers_modules(members,
                                                                tmp):
    a, b = _pair(members, "mt1")
    proj = _project(tmp)
    res = _result(_run(a, proj, GMUX_BIN=GMUX))
    assert [r[0] for r in res] == list(range(12))
    assert [r[2:] for r in res] == [[2 * i, "pkg.names", "lib"]
                                    for i in range(12)]
    assert "b" in {r[1] for r in res}, res


def test_without_the_tree_a_worker_lacks_the_callers_modules(members, tmp):
    a, b = _pair(members, "mt2")
    proj = _project(tmp)
    p = _run(a, proj, GMUX_BIN=GMUX, GMUX_SYNC="0")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 3, err.decode()[-3000:]
    assert (b"No module named 'pkg'" in out or
            b"No module named 'extra'" in out), (out, err[-3000:])
