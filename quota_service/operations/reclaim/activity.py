"""A session's latest activity (pure), from what the hub and the session's
Lab extension report.

- the hub's ``last_activity`` of the server (proxy traffic and the
  single-user server's own reports);
- the Lab extension's report: the last kernel, terminal or API activity,
  and whether a kernel is busy. A busy kernel is activity at the moment of
  the report even with no browser attached (jupyterhub-idle-culler's #10,
  #55: long cells with no output were culled).
"""

from __future__ import annotations

import datetime as dt


def parse_time(value) -> dt.datetime | None:
    """An ISO 8601 time (``Z`` allowed) as an aware UTC datetime; None if absent or bad."""
    if not value or not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.astimezone(dt.timezone.utc) if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def latest(hub_last: dt.datetime | None, report: dict | None,
           now: dt.datetime) -> tuple[dt.datetime | None, str]:
    """(the latest activity, where it was seen); never after ``now`` (a
    client's clock ahead of ours cannot keep a session forever)."""
    seen: list[tuple[dt.datetime, str]] = []
    if hub_last is not None:
        seen.append((hub_last, "the hub"))
    if report:
        reported = parse_time(report.get("reported_at"))
        last = parse_time(report.get("last_activity"))
        if last is not None:
            seen.append((min(last, reported or now), "the session (kernels, terminals)"))
        if reported is not None and int(report.get("busy_kernels") or 0) > 0:
            seen.append((reported, f"the session ({report['busy_kernels']} busy kernel(s))"))
    if not seen:
        return None, "nothing"
    t, source = max(seen, key=lambda x: x[0])
    return min(t, now), source
