"""bench.pending runs end to end with a few pending sessions (figures only)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pending.__main__ import main  # noqa: E402


def _tcp_connections() -> set:
    import psutil

    return {(c.laddr, c.raddr) for c in psutil.Process().net_connections("tcp") if c.raddr}


def test_pending_benchmark_keeps_every_waiter_answered(capsys):
    before = _tcp_connections()
    assert main(["--sizes", "3,8", "--wait", "1", "--window", "2.5", "--settle", "0.5"]) == 0
    # every waiter's connection was closed, none left to the garbage collector
    assert _tcp_connections() - before == set()
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["3"], ["8"])]
    assert [r[0] for r in rows] == ["3", "8"]
    for pending, answers, errors, cpu, per_session in rows:
        # no waiter's long-poll failed; the figures are printed, not judged
        assert errors == "0" and int(answers) >= 0
        assert float(cpu) >= 0 and float(per_session) >= 0


def test_a_burst_joining_the_queue_is_timed_and_every_one_told_its_place(capsys):
    # main exits (SystemExit) when a pending answer comes without its place
    assert main(["--sizes", "4", "--wait", "1", "--window", "1", "--settle", "0.2",
                 "--burst", "12"]) == 0
    out = capsys.readouterr().out
    table = out.split("joining N pending at once")[1].splitlines()
    [row] = [line.split() for line in table if line.split()[:2] == ["4", "12"]]
    p50, p99, slowest, cpu = (float(x) for x in row[2:])
    assert 0 < p50 <= p99 <= slowest and cpu > 0
