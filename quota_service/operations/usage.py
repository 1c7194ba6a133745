"""Usage accounting, pure: what sessions used over a period.

Each session is an interval ``[start, end)`` holding a slot map (``cpu``
cores, ``mem`` bytes, ``gpu`` whole devices, ``gpu.shares`` a fraction of one
device, and any slot a plugin registers). Over a period ``[start, end)`` an
interval contributes, for each slot, ITS OWN amount times ITS OWN duration
clipped to the period (never summed amounts times summed durations: that
inflated Backend.AI's buckets, BA-6927). A session still running (``end``
None) counts up to ``now``.

Everything is exact: times are whole microseconds, each slot's amounts are
scaled to whole numbers (``cpu`` 1.5 at scale 1 is 15), and the sums are of
Python integers, so the slot-seconds of the users, of the projects, of the
days and of the cluster add up to the same figures exactly (and fast: a year
of 10,000 sessions in well under a second). Only the derived hours are
rounded (half-even, 6 places, for reading), never summed again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Context, Decimal, Inexact, InvalidOperation, Overflow
from typing import Iterable, Mapping

UTC = dt.timezone.utc
DAY = dt.timedelta(days=1)
#: the longest period one query may cover (two years, a leap day included)
MAX_PERIOD_DAYS = 731
#: how usage may be grouped
GROUPINGS = ("user", "project", "domain", "resource_group")

_EXACT = Context(prec=120, traps=[InvalidOperation, Overflow, Inexact])


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


class Figures:
    """What a set of sessions used, exactly: counts, microseconds, and per
    slot the sum of amount x microseconds as an integer (amounts scaled by
    ``10**scales[slot]`` so each is a whole number: no rounding anywhere)."""

    __slots__ = ("sessions", "running", "micros", "units", "scales")

    def __init__(self, scales: Mapping[str, int] | None = None):
        self.sessions = 0
        #: of which had not ended (counted up to ``now``)
        self.running = 0
        #: session-microseconds (wall time)
        self.micros = 0
        self.units: dict[str, int] = {}
        self.scales = scales if scales is not None else {}

    def add(self, amounts: tuple[tuple[str, int], ...], micros: int, running: bool) -> None:
        self.sessions += 1
        self.running += running
        self.micros += micros
        units = self.units
        for name, amount in amounts:
            units[name] = units.get(name, 0) + amount * micros

    def merge(self, other: Figures) -> None:
        self.sessions += other.sessions
        self.running += other.running
        self.micros += other.micros
        for name, v in other.units.items():
            self.units[name] = self.units.get(name, 0) + v

    @property
    def seconds(self) -> Decimal:
        """Session-seconds, exact."""
        return _EXACT.scaleb(Decimal(self.micros), -6)

    @property
    def slot_seconds(self) -> dict[str, Decimal]:
        """Slot name -> amount x seconds (core-seconds, byte-seconds, ...), exact."""
        return {k: _EXACT.scaleb(Decimal(v), -(self.scales.get(k, 0) + 6))
                for k, v in self.units.items()}


@dataclass
class Report:
    """The figures of a period: the total, per group, and per UTC day."""

    start: dt.datetime
    end: dt.datetime
    now: dt.datetime
    by: str
    total: Figures
    groups: dict[tuple[str, ...], Figures]
    #: with a daily series: day -> the total's figures of that day
    days: dict[dt.date, Figures] | None = None
    #: with a daily series: group -> day -> figures (only days with sessions)
    group_days: dict[tuple[str, ...], dict[dt.date, Figures]] | None = None


EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
DAY_US = 86_400 * 1_000_000


def micros(t: dt.datetime) -> int:
    """Microseconds since the epoch (UTC), exact."""
    d = t - EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def _scale(amount: Decimal) -> int:
    exponent = amount.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def clip(iv: Interval, p0: int, p1: int, now: int) -> tuple[int, int] | None:
    """The part of ``iv`` inside ``[p0, p1)`` (microseconds), a running one
    up to ``now``; None when it has none. A session of no length counts
    where it started."""
    s = micros(iv.start)
    e = max(micros(iv.end) if iv.end is not None else now, s)  # never negative time
    lo, hi = max(s, p0), min(e, p1)
    if hi > lo:
        return lo, hi
    if s == e and p0 <= s < p1:
        return s, s
    return None


def aggregate(intervals: Iterable[Interval], start: dt.datetime, end: dt.datetime,
              now: dt.datetime, by: str = "user", daily: bool = False) -> Report:
    """The usage of ``intervals`` over ``[start, end)`` as of ``now``,
    grouped ``by`` one of ``GROUPINGS``, with a UTC-daily series if asked."""
    if by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}")
    p0, p1, n = micros(start), micros(end), micros(now)
    kept, scales = [], {}
    for iv in intervals:
        part = clip(iv, p0, p1, n)
        if part is not None:
            kept.append((iv, part))
            for name, amount in iv.slots.items():
                scales[name] = max(scales.get(name, 0), _scale(amount))
    groups: dict[tuple[str, ...], Figures] = {}
    group_days: dict[tuple[str, ...], dict[int, Figures]] = {}
    for iv, (lo, hi) in kept:
        amounts = tuple((k, int(_EXACT.scaleb(v, scales[k]))) for k, v in iv.slots.items())
        key, running = iv.key(by), iv.end is None
        fig = groups.get(key)
        if fig is None:
            fig = groups[key] = Figures(scales)
        fig.add(amounts, hi - lo, running)
        if daily:
            mine = group_days.setdefault(key, {})
            first, last = lo // DAY_US, (max(hi, lo + 1) - 1) // DAY_US
            for day in range(first, last + 1):
                part = min(hi, (day + 1) * DAY_US) - max(lo, day * DAY_US)
                f = mine.get(day)
                if f is None:
                    f = mine[day] = Figures(scales)
                f.add(amounts, part, running)
    total = Figures(scales)
    for fig in groups.values():
        total.merge(fig)
    report = Report(start, end, now, by, total, groups)
    if daily:
        to_date = {}
        report.days, report.group_days = {}, {}
        for key, days in group_days.items():
            dated = report.group_days[key] = {}
            for day, f in days.items():
                date = to_date.get(day) or to_date.setdefault(
                    day, (EPOCH + dt.timedelta(days=day)).date())
                dated[date] = f
                report.days.setdefault(date, Figures(scales)).merge(f)
    return report


def utc_day(t: dt.datetime) -> dt.datetime:
    """The UTC midnight that starts the day of ``t``."""
    t = t.astimezone(UTC)
    return dt.datetime(t.year, t.month, t.day, tzinfo=UTC)


def every_day(start: dt.datetime, end: dt.datetime) -> list[dt.date]:
    """The UTC days ``[start, end)`` touches, in order."""
    out, day = [], utc_day(start)
    while day < end:
        out.append(day.date())
        day += DAY
    return out


# --- presentation -------------------------------------------------------------

def rounded(n: int, d: int) -> str:
    """``n / d`` (both >= 0) rounded half-even to 6 places, as text."""
    q, r = divmod(n * 10**6, d)
    if 2 * r > d or (2 * r == d and q % 2):
        q += 1
    text = str(q).rjust(7, "0")
    return f"{text[:-6]}.{text[-6:]}"


def exact_text(units: int, scale: int) -> str:
    """``units * 10**-scale`` as text without exponent or trailing zeros."""
    if scale <= 0:
        return str(units * 10 ** -scale)
    text = str(units).rjust(scale + 1, "0")
    whole, frac = text[:-scale], text[-scale:].rstrip("0")
    return f"{whole}.{frac}" if frac else whole


class Presenter:
    """Renders the figures of one report (its slot scales known once)."""

    def __init__(self, scales: Mapping[str, int]):
        self.scales = dict(scales)
        s = self.scales.get
        self._divisors = {k: 3600 * 10 ** (s(k, 0) + 6) for k in ("cpu", "gpu", "gpu.shares")}
        self._divisors["mem"] = 3600 * 10 ** (s("mem", 0) + 6) * 2**30
        self._gpu_scale = max(s("gpu", 0), s("gpu.shares", 0))
        self._gpu_factors = (10 ** (self._gpu_scale - s("gpu", 0)),
                             10 ** (self._gpu_scale - s("gpu.shares", 0)))
        self._exact_scales = {k: v + 6 for k, v in self.scales.items()}

    def model(self, f: Figures) -> dict:
        """The JSON of one figure set: exact seconds, and hours for reading."""
        u, d = f.units, self._divisors
        whole, shares = u.get("gpu", 0), u.get("gpu.shares", 0)
        fw, fs = self._gpu_factors
        return {
            "sessions": f.sessions,
            "running": f.running,
            "session_hours": rounded(f.micros, 3_600_000_000),
            "core_hours": rounded(u.get("cpu", 0), d["cpu"]),
            "mem_gib_hours": rounded(u.get("mem", 0), d["mem"]),
            "gpu_hours": rounded(whole, d["gpu"]),
            "gpu_share_hours": rounded(shares, d["gpu.shares"]),
            "gpu_device_hours": rounded(whole * fw + shares * fs,
                                        3600 * 10 ** (self._gpu_scale + 6)),
            "seconds": exact_text(f.micros, 6),
            "slot_seconds": {k: exact_text(v, self._exact_scales.get(k, 6))
                             for k, v in sorted(u.items())},
        }


def figures_model(f: Figures) -> dict:
    """The JSON of one figure set (``Presenter.model``)."""
    return Presenter(f.scales).model(f)


def iso(t: dt.datetime) -> str:
    return t.astimezone(UTC).isoformat()
