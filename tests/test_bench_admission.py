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


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_admission_storm_answers_every_kind_and_releases_everything(db, capsys):
    import os

    if db == "postgres" and not os.environ.get("HUBGRID_TEST_POSTGRES_URL"):
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL is required in CI")
        pytest.skip("no PostgreSQL")
    # 3 users on 1 node: the busiest asks past its limits, so some answers
    # wait and some are refused, and every admitted session is released
    assert main(["--workload", "storm", "--requests", "40", "--concurrency", "8",
                 "--users", "3", "--domains", "1", "--projects", "1", "--nodes", "1",
                 "--seed", "3", "--db", db]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(db)).split()
    admitted, pending, refused = int(row[2]), int(row[6]), int(row[10])
    assert admitted + pending + refused == 40 and min(admitted, pending, refused) > 0
    assert "ledger empty after: yes" in out


def test_the_storm_plan_is_seeded_and_mixed():
    from bench.admission import storm
    from bench.admission.world import Tenant

    tenants = [Tenant(f"u{i}", "p", "auth") for i in range(300)]
    first, again = storm.plan(tenants, 1000, 7), storm.plan(tenants, 1000, 7)
    assert first == again != storm.plan(tenants, 1000, 8)
    assert {tuple(sorted(a.slots)) for a in first} == {tuple(sorted(m)) for m in storm.MIX}
    assert all(0 <= a.hold <= storm.MAX_HOLD for a in first)
    # a few users ask much more than most
    asked = sorted((sum(a.tenant is t for a in first) for t in tenants), reverse=True)
    assert asked[0] > 10 * asked[-1]
