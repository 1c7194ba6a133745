"""The utilization window (pure): readings of one session over time, and
their averages over the policy's window.

What it guarantees (Backend.AI's idle checker's bugs, avoided):

- the window is judged by time, not by a count of readings: it is full once
  a reading at or before ``now - window`` exists (the *anchor*), however the
  timer jittered (#2205: a window that needed N samples never filled);
- CPU is the container's cumulative CPU time between the anchor and the
  latest reading, divided by the wall time and by the GRANTED cores: every
  process of the container counts, and 2 busy cores of a 4-core grant are
  50 % (#3857, #6092, #2804);
- a reading that failed is "no data" for that metric for as long as it lies
  in the window, never 0 % (#10315: a failed GPU reading killed busy sessions).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

HUNDRED = Decimal(100)
METRICS = ("cpu", "mem", "gpu_util", "gpu_mem")
GPU_METRICS = ("gpu_util", "gpu_mem")


@dataclass(frozen=True)
class Reading:
    """One look at a session: None where the source had no answer."""

    at: dt.datetime
    #: cumulative CPU time of every process of the session, in seconds
    cpu_seconds: Decimal | None = None
    mem_used: int | None = None
    mem_limit: int | None = None
    #: percent, averaged over the session's GPUs
    gpu_util: Decimal | None = None
    gpu_mem: Decimal | None = None

    @property
    def empty(self) -> bool:
        """Did no source answer? (a rule keeps such a reading as "no data";
        the display has nothing to show of it)"""
        return all(x is None for x in (self.cpu_seconds, self.mem_used, self.gpu_util,
                                       self.gpu_mem))


@dataclass
class Window:
    """The readings of one session kept for its window (oldest first)."""

    readings: list[Reading] = field(default_factory=list)

    def add(self, reading: Reading, keep: float) -> None:
        """Add ``reading``; drop what is older than the newest reading at or
        before ``reading.at - keep`` (the anchor is kept)."""
        if self.readings and reading.at <= self.readings[-1].at:
            return  # a clock that went back: ignore, never reorder
        self.readings.append(reading)
        cutoff = reading.at - dt.timedelta(seconds=keep)
        anchor = None
        for i, r in enumerate(self.readings):
            if r.at <= cutoff:
                anchor = i
        if anchor:
            del self.readings[:anchor]


@dataclass(frozen=True)
class Averages:
    """What the window says: each metric's average in percent, or why not."""

    full: bool
    #: seconds the window covers (anchor to latest reading)
    span: Decimal
    values: dict[str, Decimal]
    #: metric -> "no data" reason
    missing: dict[str, str]


def _pct(x: Decimal) -> Decimal:
    return x.quantize(Decimal("0.01"))


def average(readings: list[Reading], now: dt.datetime, window: int,
            cores: Decimal, gpus: bool) -> Averages:
    """Averages over the last ``window`` seconds as of ``now``; ``cores``: the
    granted cores; ``gpus``: whether the session holds GPUs (the GPU metrics
    apply only then)."""
    start = now - dt.timedelta(seconds=window)
    anchor_i = None
    for i, r in enumerate(readings):
        if r.at <= start:
            anchor_i = i
    if anchor_i is None or anchor_i == len(readings) - 1:
        span = Decimal(0) if not readings else Decimal(
            str((readings[-1].at - readings[0].at).total_seconds()))
        return Averages(False, span, {}, {m: "the window is not full yet" for m in METRICS})
    part = readings[anchor_i:]
    first, last = part[0], part[-1]
    span = Decimal(str((last.at - first.at).total_seconds()))
    values: dict[str, Decimal] = {}
    missing: dict[str, str] = {}
    # cpu: cumulative time between the anchor and the latest reading
    cpus = [r.cpu_seconds for r in part]
    if any(c is None for c in cpus):
        missing["cpu"] = "a CPU reading failed in the window"
    elif any(b < a for a, b in zip(cpus, cpus[1:])):
        missing["cpu"] = "the CPU counter went back (the container restarted)"
    elif cores <= 0:
        missing["cpu"] = "no cores granted"
    else:
        values["cpu"] = _pct((cpus[-1] - cpus[0]) / span / cores * HUNDRED)
    # the others: the mean of the readings after the anchor
    inner = part[1:]
    mems = [(r.mem_used, r.mem_limit) for r in inner]
    if any(u is None or not lim for u, lim in mems):
        missing["mem"] = "a memory reading failed in the window"
    else:
        values["mem"] = _pct(sum(Decimal(u) / Decimal(lim) for u, lim in mems)
                             * HUNDRED / len(mems))
    for m in GPU_METRICS:
        if not gpus:
            missing[m] = "the session holds no GPU"
            continue
        xs = [getattr(r, m) for r in inner]
        if any(x is None for x in xs):
            missing[m] = "a GPU reading failed or no GPU source reads this node"
        else:
            values[m] = _pct(sum(xs) / len(xs))
    return Averages(True, span, values, missing)


@dataclass(frozen=True)
class Judgement:
    """``idle``: True (under-used), False (used), None (cannot tell: no data)."""

    idle: bool | None
    why: str
    numbers: dict


def judge(avg: Averages, thresholds: dict[str, Decimal], operator: str,
          gpus: bool) -> Judgement:
    """Is the session under-used? ``and``: every thresholded metric is below
    its threshold; ``or``: any is. A thresholded metric without data makes
    the answer None whatever the operator: missing data is never idle."""
    applicable = {m: t for m, t in thresholds.items() if gpus or m not in GPU_METRICS}
    numbers = {"window_full": avg.full, "span_seconds": str(avg.span),
               "averages": {m: str(v) for m, v in avg.values.items()},
               "thresholds": {m: str(t) for m, t in applicable.items()},
               "operator": operator}
    if not applicable:
        return Judgement(None, "no threshold applies to this session", numbers)
    if not avg.full:
        return Judgement(None, "the window is not full yet", numbers)
    lacking = {m: avg.missing[m] for m in applicable if m not in avg.values}
    if lacking:
        numbers["no_data"] = lacking
        return Judgement(None, "no data: " + "; ".join(f"{m}: {w}" for m, w in
                                                       sorted(lacking.items())), numbers)
    below = {m: avg.values[m] < t for m, t in applicable.items()}
    idle = all(below.values()) if operator == "and" else any(below.values())
    parts = [f"{m} {avg.values[m]} % {'<' if below[m] else '>='} {t} %"
             for m, t in sorted(applicable.items())]
    return Judgement(idle, f" {operator} ".join(parts), numbers)
