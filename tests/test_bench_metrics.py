"""bench.metrics runs end to end with a few sessions (figures only)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.metrics.__main__ import main  # noqa: E402


def test_metrics_benchmark_scrapes_a_small_ledger(capsys):
    assert main(["--sessions", "12", "--ended", "30", "--pending", "3", "--scrapes", "3",
                 "--db", "sqlite"]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("sqlite"))
    p50, p95, top, series, kib = row[1:]
    assert float(p50) > 0 and float(p95) >= float(p50) and float(top) >= float(p95)
    assert int(series) > 50 and float(kib) > 1
