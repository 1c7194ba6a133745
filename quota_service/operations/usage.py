"""Usage accounting (issue #12), pure: what sessions used over a period.

Each session is an interval ``[start, end)`` holding a slot map (``cpu``
cores, ``mem`` bytes, ``gpu`` whole devices, ``gpu.shares`` a fraction of one
device, and any slot a plugin registers). Over a period ``[start, end)`` an
interval contributes, for each slot, ITS OWN amount times ITS OWN duration
clipped to the period (never summed amounts times summed durations: that
inflated Backend.AI's buckets, BA-6927). A session still running (``end``
None) counts up to ``now``.

Everything is exact: durations are Decimal seconds (to the microsecond) and
products are taken in a context that raises rather than rounds, so the
slot-seconds of the users, of the projects, of the days and of the cluster
add up to the same figures exactly. Only the derived hours are rounded (for
display), never summed again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Context, Decimal, Inexact, InvalidOperation, Overflow
from typing import Iterable, Mapping

from ..core.names import format_amount

UTC = dt.timezone.utc
DAY = dt.timedelta(days=1)
ZERO = Decimal(0)
#: the longest period one query may cover (two years, a leap day included)
MAX_PERIOD_DAYS = 731
#: how usage may be grouped
GROUPINGS = ("user", "project", "domain", "resource_group")
#: the figures' places after the decimal point in the derived hours
HOUR_PLACES = Decimal("0.000001")

_EXACT = Context(prec=120, traps=[InvalidOperation, Overflow, Inexact])
_SECONDS_PER_HOUR = Decimal(3600)
_GIB = Decimal(2) ** 30


@dataclass(frozen=True)
class Interval:
    """One session: who held what, from when to when (None: still running)."""

    allocation: str
    user: str
    domain: str
    project: str
    resource_group: str
    slots: Mapping[str, Decimal]
    start: dt.datetime
    end: dt.datetime | None = None

    def key(self, by: str) -> tuple[str, ...]:
        """The group this session falls in, for a grouping of ``GROUPINGS``."""
        if by == "user":
            return (self.domain, self.user)
        if by == "project":
            return (self.domain, self.project)
        if by == "domain":
            return (self.domain,)
        return (self.resource_group,)


#: the names of a group key's parts, per grouping
KEY_FIELDS = {
    "user": ("domain", "user"),
    "project": ("domain", "project"),
    "domain": ("domain",),
    "resource_group": ("resource_group",),
}


@dataclass
class Figures:
    """What a set of sessions used: exact seconds and slot-seconds."""

    sessions: int = 0
    #: of which had not ended (counted up to ``now``)
    running: int = 0
    #: session-seconds (wall time, every session counted once per second)
    seconds: Decimal = ZERO
    #: slot name -> amount x seconds (core-seconds, byte-seconds, ...)
    slot_seconds: dict[str, Decimal] = field(default_factory=dict)

    def add(self, slots: Mapping[str, Decimal], seconds: Decimal, running: bool) -> None:
        self.sessions += 1
        self.running += running
        self.seconds = _EXACT.add(self.seconds, seconds)
        for name, amount in slots.items():
            part = _EXACT.multiply(amount, seconds)
            self.slot_seconds[name] = _EXACT.add(self.slot_seconds.get(name, ZERO), part)


@dataclass
class Report:
    """The figures of a period: the total, per group, and per UTC day."""

    start: dt.datetime
    end: dt.datetime
    now: dt.datetime
    by: str
    total: Figures = field(default_factory=Figures)
    groups: dict[tuple[str, ...], Figures] = field(default_factory=dict)
    #: with a daily series: day -> the total's figures of that day
    days: dict[dt.date, Figures] | None = None
    #: with a daily series: group -> day -> figures (only days with sessions)
    group_days: dict[tuple[str, ...], dict[dt.date, Figures]] | None = None


def seconds_between(a: dt.datetime, b: dt.datetime) -> Decimal:
    """``b - a`` in exact Decimal seconds (to the microsecond)."""
    d = b - a
    whole = Decimal(d.days * 86400 + d.seconds)
    return _EXACT.add(whole, Decimal(d.microseconds).scaleb(-6)) if d.microseconds else whole


def clip(iv: Interval, start: dt.datetime, end: dt.datetime,
         now: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
    """The part of ``iv`` inside ``[start, end)`` and before ``now``, or None
    when it has none. A session of no length counts where it started."""
    last = iv.end if iv.end is not None else now
    last = max(last, iv.start)  # a clock that went back: no negative time
    lo, hi = max(iv.start, start), min(last, end)
    if hi > lo:
        return lo, hi
    if start <= iv.start < end and iv.start == last:  # zero-length, inside
        return iv.start, iv.start
    return None


def utc_day(t: dt.datetime) -> dt.datetime:
    """The UTC midnight that starts the day of ``t``."""
    t = t.astimezone(UTC)
    return dt.datetime(t.year, t.month, t.day, tzinfo=UTC)


def day_parts(lo: dt.datetime, hi: dt.datetime) -> Iterable[tuple[dt.date, Decimal]]:
    """``[lo, hi)`` cut at UTC midnights: (day, seconds in it)."""
    day = utc_day(lo)
    if hi == lo:
        yield day.date(), ZERO
        return
    while day < hi:
        nxt = day + DAY
        yield day.date(), seconds_between(max(lo, day), min(hi, nxt))
        day = nxt


def aggregate(intervals: Iterable[Interval], start: dt.datetime, end: dt.datetime,
              now: dt.datetime, by: str = "user", daily: bool = False) -> Report:
    """The usage of ``intervals`` over ``[start, end)`` as of ``now``,
    grouped ``by`` one of ``GROUPINGS``, with a UTC-daily series if asked."""
    if by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}")
    report = Report(start, end, now, by)
    if daily:
        report.days, report.group_days = {}, {}
    for iv in intervals:
        part = clip(iv, start, end, now)
        if part is None:
            continue
        lo, hi = part
        running = iv.end is None
        key = iv.key(by)
        seconds = seconds_between(lo, hi)
        report.total.add(iv.slots, seconds, running)
        report.groups.setdefault(key, Figures()).add(iv.slots, seconds, running)
        if daily:
            mine = report.group_days.setdefault(key, {})
            for day, secs in day_parts(lo, hi):
                report.days.setdefault(day, Figures()).add(iv.slots, secs, running)
                mine.setdefault(day, Figures()).add(iv.slots, secs, running)
    return report


def every_day(start: dt.datetime, end: dt.datetime) -> list[dt.date]:
    """The UTC days ``[start, end)`` touches, in order."""
    out, day = [], utc_day(start)
    while day < end:
        out.append(day.date())
        day += DAY
    return out


# --- presentation -------------------------------------------------------------

def hours(slot_seconds: Decimal, divisor: Decimal = _SECONDS_PER_HOUR) -> str:
    """Slot-seconds as hours (or GiB-hours with a divisor), rounded to 6 places."""
    value = (slot_seconds / divisor).quantize(HOUR_PLACES, rounding=ROUND_HALF_EVEN)
    return format(value, "f")


def figures_model(f: Figures) -> dict:
    """The JSON of one figure set: exact seconds, and hours for reading."""
    get = f.slot_seconds.get
    whole, shares = get("gpu", ZERO), get("gpu.shares", ZERO)
    return {
        "sessions": f.sessions,
        "running": f.running,
        "session_hours": hours(f.seconds),
        "core_hours": hours(get("cpu", ZERO)),
        "mem_gib_hours": hours(get("mem", ZERO), _SECONDS_PER_HOUR * _GIB),
        "gpu_hours": hours(whole),
        "gpu_share_hours": hours(shares),
        "gpu_device_hours": hours(_EXACT.add(whole, shares)),
        "seconds": format_amount(f.seconds),
        "slot_seconds": {k: format_amount(v) for k, v in sorted(f.slot_seconds.items())},
    }


def iso(t: dt.datetime) -> str:
    return t.astimezone(UTC).isoformat()
