"""The usage report the API answers (``GET usage``): the query's arguments
checked, the caller's scope (``authz.usage_scope``), then JSON or CSV.

Arguments (all optional): ``start`` and ``end`` (ISO 8601 dates or times;
a date is its UTC midnight, a time without offset is UTC; default: the 30
UTC days up to the end of today), ``by`` (``user``, ``project``, ``domain``
or ``resource_group``; default ``user``), ``series=daily``, ``domain`` and
``user`` (narrow to one; what the caller may not see is a 404), ``format``
(``json`` or ``csv``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import authz
from ..core.authz import Principal
from ..core.errors import ApiError, Hidden
from ..core.models import Domain, User
from . import usage, usage_store
from .usage import GROUPINGS, KEY_FIELDS, MAX_PERIOD_DAYS, UTC

ARGUMENTS = {
    "start": "from this UTC date or ISO 8601 time on (default: 30 days before end)",
    "end": "before this UTC date or ISO 8601 time (default: the end of today, UTC)",
    "by": "group by user, project, domain or resource_group (default user)",
    "series": "daily: add a series of UTC days, for the total and per group",
    "domain": "only this domain's usage",
    "user": "only this user's usage",
    "format": "json (default) or csv",
}
#: the units of the figures (for the JSON and the docs)
UNITS = {
    "session_hours": "hours sessions ran",
    "core_hours": "CPU cores x hours",
    "mem_gib_hours": "GiB of memory x hours",
    "gpu_hours": "whole GPUs x hours",
    "gpu_share_hours": "GPU shares (fractions of one device) x hours",
    "gpu_device_hours": "gpu_hours + gpu_share_hours",
    "seconds": "session-seconds, exact",
    "slot_seconds": "slot amount x seconds per slot, exact (mem: byte-seconds)",
}
FIGURES = ("sessions", "running", "session_hours", "core_hours", "mem_gib_hours",
           "gpu_hours", "gpu_share_hours", "gpu_device_hours", "seconds")


@dataclass(frozen=True)
class Query:
    start: dt.datetime
    end: dt.datetime
    by: str = "user"
    daily: bool = False
    format: str = "json"
    domain: str | None = None
    user: str | None = None


def parse_time(name: str, value: str) -> dt.datetime:
    """A date (its UTC midnight) or an ISO 8601 time (UTC without an offset)."""
    try:
        if len(value) == 10:
            d = dt.date.fromisoformat(value)
            return dt.datetime(d.year, d.month, d.day, tzinfo=UTC)
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ApiError(f"{name}: not an ISO 8601 date or time: {value[:40]!r} "
                       "(e.g. 2026-01-31 or 2026-01-31T12:00:00Z)") from None
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def parse(args: dict[str, str], now: dt.datetime) -> Query:
    """The query ``args`` ask for; a 400 with the reason otherwise."""
    unknown = sorted(set(args) - set(ARGUMENTS))
    if unknown:
        raise ApiError(f"unknown query parameter(s): {', '.join(unknown)}")
    end = (parse_time("end", args["end"]) if args.get("end")
           else usage.utc_day(now) + usage.DAY)
    start = (parse_time("start", args["start"]) if args.get("start")
             else end - dt.timedelta(days=30))
    if end <= start:
        raise ApiError(f"end ({usage.iso(end)}) must be after start ({usage.iso(start)})")
    if end - start > dt.timedelta(days=MAX_PERIOD_DAYS):
        raise ApiError(f"the period is longer than {MAX_PERIOD_DAYS} days: "
                       "ask for shorter periods")
    by = args.get("by") or "user"
    if by not in GROUPINGS:
        raise ApiError(f"by: {by[:40]!r} is not one of {', '.join(GROUPINGS)}")
    series = args.get("series") or "none"
    if series not in ("none", "daily"):
        raise ApiError(f"series: {series[:40]!r} is not 'daily' (or 'none')")
    fmt = args.get("format") or "json"
    if fmt not in ("json", "csv"):
        raise ApiError(f"format: {fmt[:40]!r} is not 'json' or 'csv'")
    return Query(start, end, by, series == "daily", fmt, args.get("domain") or None,
                 args.get("user") or None)


def _scope_ids(s: Session, p: Principal, q: Query) -> tuple[int | None, int | None]:
    """(domain id, user id) the report is narrowed to: the caller's scope and
    the query's filters; a filter naming what the caller may not see is 404."""
    domain, user = authz.usage_scope(p)
    domain_id = user_id = None
    if q.domain is not None:
        authz.require_see_domain(p, q.domain)
        row = s.scalar(select(Domain).where(Domain.name == q.domain))
        if row is None:
            raise Hidden(f"domain {q.domain!r} not found")
        domain_id = row.id
    if q.user is not None:
        row = s.scalar(select(User).where(User.name == q.user))
        if row is None:
            raise Hidden(f"user {q.user!r} not found")
        authz.require_see_user(p, row.name, row.domain.name)
        user_id = row.id
    if domain is not None and domain_id is None:
        domain_id = s.scalar(select(Domain.id).where(Domain.name == domain))
    if user is not None and user_id is None:
        user_id = s.scalar(select(User.id).where(User.name == user))
    return domain_id, user_id


def report(s: Session, p: Principal, q: Query, now: dt.datetime) -> usage.Report:
    """The usage ``p`` may read over the query's period, as of ``now``."""
    domain_id, user_id = _scope_ids(s, p, q)
    rows = usage_store.intervals(s, q.start, q.end, domain_id=domain_id, user_id=user_id)
    return usage.aggregate(rows, q.start, q.end, now, q.by, q.daily)


def _row(show, key_names, key, figures: usage.Figures) -> dict:
    return {**dict(zip(key_names, key)), **show(figures)}


def _day(show, day: dt.date, figures: usage.Figures) -> dict:
    return {"day": day.isoformat(), **show(figures)}


def as_json(r: usage.Report, q: Query) -> dict:
    """The report's JSON (docs/operations.md, "Usage accounting")."""
    names = KEY_FIELDS[r.by]
    show = usage.Presenter(r.total.scales).model
    groups = []
    for key in sorted(r.groups):
        g = _row(show, names, key, r.groups[key])
        if r.group_days is not None:
            days = r.group_days[key]
            g["series"] = [_day(show, d, days[d]) for d in sorted(days)]
        groups.append(g)
    out = {
        "start": usage.iso(r.start), "end": usage.iso(r.end), "as_of": usage.iso(r.now),
        "by": r.by, "series_interval": "day" if r.days is not None else None,
        "filters": {"domain": q.domain, "user": q.user},
        "units": UNITS, "total": show(r.total), "groups": groups,
    }
    if r.days is not None:
        empty = usage.Figures()
        out["series"] = [_day(show, d, r.days.get(d, empty))
                         for d in usage.every_day(r.start, r.end)]
    return out


def as_csv(r: usage.Report) -> str:
    """One row per group (and per day with a daily series), a header first;
    the exact slot-seconds of every slot seen in its own column."""
    names = KEY_FIELDS[r.by]
    slots = sorted(r.total.slot_seconds)
    head = (["period_start", "period_end"] + (["day"] if r.days is not None else [])
            + list(names) + list(FIGURES) + [f"slot_seconds.{k}" for k in slots])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(head)
    period = [usage.iso(r.start), usage.iso(r.end)]
    show = usage.Presenter(r.total.scales).model

    def line(day, key, f):
        m = show(f)
        w.writerow(period + ([day.isoformat()] if day is not None else []) + list(key)
                   + [m[k] for k in FIGURES] + [m["slot_seconds"].get(k, "0") for k in slots])

    for key in sorted(r.groups):
        if r.group_days is None:
            line(None, key, r.groups[key])
        else:
            for day, f in sorted(r.group_days[key].items()):
                line(day, key, f)
    return buf.getvalue()


def filename(q: Query) -> str:
    return f"usage-{q.by}-{q.start.date().isoformat()}-{q.end.date().isoformat()}.csv"
