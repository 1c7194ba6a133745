"""bench.admin runs end to end with a small cluster (figures only)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.admin.__main__ import listings, main  # noqa: E402


def test_admin_benchmark_prints_a_time_for_every_listing(capsys):
    assert main(["--db", "sqlite", "--users", "20", "--nodes", "3", "--pending", "10",
                 "--running", "5", "--domains", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "20 users in 2 domains, 3 nodes, 5 running sessions, 10 pending" in out
    for label, *_ in listings("x"):
        line = next(x for x in out.splitlines() if x.startswith(label + " "))
        best, cpu, entries = line[len(label):].split()
        assert float(best) >= 0 and float(cpu) >= 0 and int(entries) >= 0
    queue = next(x for x in out.splitlines() if x.startswith("queue in order "))
    assert queue.split()[-1] == "10"
