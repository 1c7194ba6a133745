"""bench.usage runs end to end with a few sessions (figures only)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.usage.__main__ import QUERIES, main  # noqa: E402


def test_usage_benchmark_prints_a_time_for_every_query(capsys):
    assert main(["--db", "sqlite", "--sessions", "60", "--users", "6", "--domains", "2",
                 "--running", "4", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "60 ended + 4 running sessions" in out
    for label, caller, *_ in QUERIES:
        line = next(x for x in out.splitlines() if x.startswith(label + " "))
        best, cpu, sessions = line[len(label):].split()
        assert float(best) >= 0 and float(cpu) >= 0
        # the superadmin counts every session; the others a part of them
        assert (int(sessions) == 64) if caller == "root" else (0 <= int(sessions) <= 64)
