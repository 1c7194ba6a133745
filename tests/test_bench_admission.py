"""bench.admission runs end to end and admits exactly K (small numbers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.admission.__main__ import main  # noqa: E402


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_admission_benchmark_admits_exactly_k(db, capsys, monkeypatch):
    import os

    if db == "postgres" and not os.environ.get("HUBGRID_TEST_POSTGRES_URL"):
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL is required in CI")
        pytest.skip("no PostgreSQL")
    assert main(["--requests", "24", "--concurrency", "8", "--admit", "5", "--db", db]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(db))
    assert row.split()[1:5] == ["5", "19", "0", "5"]
