"""The ledger's hash chain, checked from a prune export by an independent
implementation of the encoding documented in docs/ledger.md.

build/tests/test-ledger --export FILE closes six intervals and prunes them
all into FILE; no daemon is needed.
"""

import csv
import hashlib
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
BIN = os.path.join(ROOT, os.environ.get("GMUX_BUILD", "build"), "tests",
                   "test-ledger")

INTS = ("seq", "job", "card", "seats", "ceiling", "mem", "start_ms",
        "end_ms")
ORDER = ("seq", "job", "owner", "card", "vendor", "model", "seats",
         "ceiling", "mem", "fence", "start_ms", "end_ms")


def row_hash(prev: bytes, row: dict) -> str:
    enc = bytearray(b"gmux-ledger-1")
    enc += prev
    for field in ORDER:
        if field in INTS:
            enc += int(row[field]).to_bytes(8, "big", signed=True)
        else:
            data = row[field].encode()
            enc += len(data).to_bytes(4, "big") + data
    return hashlib.sha256(enc).hexdigest()


@pytest.fixture
def export(tmp_path):
    if not os.path.exists(BIN):
        pytest.skip("needs build/tests/test-ledger")
    path = tmp_path / "export.csv"
    subprocess.run([BIN, "--export", str(path)], check=True)
    assert os.stat(path).st_mode & 0o777 == 0o600
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_export_chain_verifies(export):
    assert [int(r["seq"]) for r in export] == [1, 2, 3, 4, 5, 6]
    prev = "0" * 64
    for row in export:
        assert row["prev_hash"] == prev
        assert row_hash(bytes.fromhex(prev), row) == row["hash"]
        prev = row["hash"]


def test_export_detects_a_change(export):
    row = dict(export[2])
    row["seats"] = str(int(row["seats"]) + 1)
    assert row_hash(bytes.fromhex(row["prev_hash"]), row) != row["hash"]
