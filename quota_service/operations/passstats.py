"""How the service's periodic passes run: for each pass (a fixed name), how
many ran, their seconds in all, how many failed and when the last one
ended; ``timed`` and ``timed_async`` record a pass around its function.

The metrics endpoint exports them (``hubgrid_pass_duration_seconds`` and
friends), so an operator sees a scheduler pass that grows slow with the
queue, or a pass that stopped running. Durations are measurements, not
amounts of a resource: floats. Thread-safe: the blocking passes run in
worker threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

#: every pass the service runs (the metrics' ``pass`` label: bounded)
PASSES = ("schedule", "reclaim", "log-retention", "usage-scan")

T = TypeVar("T")


@dataclass(frozen=True)
class PassRecord:
    runs: int = 0
    seconds: float = 0.0
    failures: int = 0
    #: when the last run ended (Unix seconds), whether it failed or not
    last_end: float | None = None


class PassStats:
    def __init__(self, wall: Callable[[], float] = time.time):
        self._lock = threading.Lock()
        self._wall = wall
        self._records = {name: PassRecord() for name in PASSES}

    def record(self, name: str, seconds: float, ok: bool) -> None:
        if name not in self._records:
            raise ValueError(f"{name!r} is not one of the passes {PASSES}")
        with self._lock:
            r = self._records[name]
            self._records[name] = PassRecord(r.runs + 1, r.seconds + seconds,
                                             r.failures + (not ok), self._wall())

    def snapshot(self) -> dict[str, PassRecord]:
        with self._lock:
            return dict(self._records)


def timed(stats: PassStats, name: str, run: Callable[..., T],
          timer: Callable[[], float] = time.perf_counter) -> Callable[..., T]:
    """``run`` (blocking), each call recorded as a run of pass ``name``."""
    def go(*args) -> T:
        start, ok = timer(), False
        try:
            result = run(*args)
            ok = True
            return result
        finally:
            stats.record(name, timer() - start, ok)
    return go


def timed_async(stats: PassStats, name: str, run: Callable[[], Awaitable[T]],
                timer: Callable[[], float] = time.perf_counter) -> Callable[[], Awaitable[T]]:
    """``run`` (a coroutine function), each await recorded as a run of pass ``name``."""
    async def go() -> T:
        start, ok = timer(), False
        try:
            result = await run()
            ok = True
            return result
        finally:
            stats.record(name, timer() - start, ok)
    return go
