"""A session's own face: its scheduling history and its live use.

The history is built from what the service records already: the
allocation's row (asked, waited for what, admitted where, ended how), its
reclaim events (warned, kept, reclaimed) and the access-log entries about
it (stopped by whom, moved in its queue; both the older ``allocation.*``
names and the ``session.*`` ones). The use is what the reclaim pass read
of it (cgroup CPU time, memory, GPU utilisation): the latest reading and
the CPU share of its granted cores between consecutive readings.

``history_events`` and ``usage_model`` are pure; ``history`` and
``allocation_usage`` read one SQLAlchemy session.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.authz import Principal
from ..core.models import Allocation, AuditEntry, Node, Project, ReclaimEvent, ResourceGroup
from ..core.orm import aware, iso
from ..scheduling import ledger
from .reclaim.window import Reading

#: the reclaim events' kinds as the history names them
RECLAIM_EVENTS = {"warning": "warned", "extended": "kept", "reclaimed": "reclaimed",
                  "shadow": "would-reclaim"}
#: access-log actions the history leaves out: reports, and the steps the
#: allocation's row tells already (asked, queued, admitted, ended: the
#: ``session.*`` records of scheduling/sessionaudit.py and the older
#: ``allocation.create``); stops by someone, reclaims, queue moves stay
ROW_ACTIONS = ("allocation-activity.create", "allocation.create", "session.start",
               "session.queue", "session.admit", "session.end")
MAX_LOG_ENTRIES = 200
HUNDRED = Decimal(100)


@dataclass(frozen=True)
class Facts:
    """What the allocation's row says (plain values)."""

    id: str
    state: str
    session_type: str
    slots: dict
    project: str
    resource_group: str
    created_at: dt.datetime
    passes: int
    reasons: list
    waited_for: list | None
    admitted_at: dt.datetime | None
    node: str | None
    gpus: list
    released_at: dt.datetime | None
    release_reason: str
    ended_at: dt.datetime | None
    exit_code: int | None


@dataclass(frozen=True)
class LogEntry:
    """An access-log entry about the session."""

    at: dt.datetime
    action: str
    actor: str | None
    detail: str


@dataclass(frozen=True)
class ReclaimStep:
    at: dt.datetime
    kind: str
    rule: str
    details: dict


def _event(at: dt.datetime | None, event: str, text: str, **extra) -> dict:
    return dict({"at": iso(at), "event": event, "text": text}, **extra)


def ending(f: Facts) -> tuple[str, str]:
    """(event, text) of how it ended: cancelled while waiting, reclaimed, stopped, ended."""
    reason = f.release_reason or ""
    if f.state == "cancelled":
        return "cancelled", f"cancelled while waiting: {reason}" if reason else "cancelled while waiting"
    if reason.startswith("reclaimed"):
        return "reclaimed", reason
    if reason.startswith("stopped"):
        return "stopped", reason
    if f.exit_code is not None:
        return "ended", f"ended with exit code {f.exit_code}" + (f" ({reason})" if reason else "")
    return "ended", reason or "ended"


def history_events(f: Facts, steps: list[ReclaimStep], log: list[LogEntry]) -> list[dict]:
    """The session's history, oldest first: each ``{"at", "event", "text", ...}``
    (``event``: requested, queued, admitted, warned, kept, would-reclaim,
    reclaimed, logged, cancelled, stopped, ended); amounts stay exact
    strings in ``slots`` for the UI to format."""
    out = [_event(f.created_at, "requested",
                  f"{f.session_type} session asked for in {f.resource_group} ({f.project})",
                  slots=dict(f.slots), resource_group=f.resource_group, project=f.project)]
    waiting = f.reasons if f.state == "pending" else (f.waited_for or [])
    if f.state == "pending" or f.waited_for or f.passes:
        text = "waits in the queue" if f.state == "pending" else "waited in the queue"
        out.append(_event(f.created_at, "queued", text, reasons=list(waiting), passes=f.passes))
    if f.admitted_at is not None:
        where = f"admitted on {f.node}" if f.node else "admitted"
        if f.gpus:
            where += " (GPU " + ", ".join(f"{g.get('index')}" + (
                f" × {g['share']}" if g.get("share") not in (None, "1") else "")
                for g in f.gpus) + ")"
        out.append(_event(f.admitted_at, "admitted", where, node=f.node, gpus=list(f.gpus)))
    for st in steps:
        name = RECLAIM_EVENTS.get(st.kind, st.kind)
        reason = st.details.get("reason") or ""
        if st.kind == "extended":
            text = f"kept until {st.details.get('kept_until')}"
        else:
            text = f"{name} ({st.rule})" + (f": {reason}" if reason else "")
        out.append(_event(st.at, name, text, rule=st.rule, details=dict(st.details)))
    for e in log:
        out.append(_event(e.at, "logged", e.detail or e.action, action=e.action, by=e.actor))
    if f.released_at is not None and f.state in ("released", "cancelled"):
        name, text = ending(f)
        out.append(_event(f.ended_at or f.released_at, name, text, exit_code=f.exit_code))
    order = {id(e): i for i, e in enumerate(out)}
    return sorted(out, key=lambda e: (e["at"] or "", order[id(e)]))


def _facts(s: Session, a: Allocation) -> Facts:
    node = s.get(Node, a.node_id) if a.node_id else None
    return Facts(
        id=a.id, state=a.state, session_type=a.session_type, slots=dict(a.slots or {}),
        project=s.get(Project, a.project_id).name,
        resource_group=s.get(ResourceGroup, a.resource_group_id).name,
        created_at=aware(a.created_at), passes=a.passes or 0, reasons=list(a.reasons or []),
        waited_for=a.waited_for, admitted_at=aware(a.admitted_at),
        node=node.name if node else None, gpus=list(a.gpus or []),
        released_at=aware(a.released_at), release_reason=a.release_reason or "",
        ended_at=aware(a.ended_at), exit_code=a.exit_code)


def history(s: Session, p: Principal, alloc_id: str) -> dict:
    """The history of a session the caller may see (its owner, its domain's
    admins, superadmins); another's is not found."""
    a = ledger.visible_allocation(s, p, alloc_id)
    f = _facts(s, a)
    steps = [ReclaimStep(aware(e.at), e.kind, e.rule, dict(e.details or {}))
             for e in s.scalars(select(ReclaimEvent).where(ReclaimEvent.allocation_id == a.id)
                                .order_by(ReclaimEvent.at, ReclaimEvent.id))]
    targets = (a.id, f"{f.resource_group}/{a.id}")
    rows = s.scalars(select(AuditEntry).where(
        AuditEntry.target.in_(targets), AuditEntry.outcome == "success",
        AuditEntry.action.not_like("%.read"), AuditEntry.action.not_in(ROW_ACTIONS))
        .order_by(AuditEntry.timestamp, AuditEntry.id).limit(MAX_LOG_ENTRIES))
    log = [LogEntry(aware(e.timestamp), e.action, e.actor, e.detail or "") for e in rows]
    return {"id": a.id, "state": a.state, "events": history_events(f, steps, log)}


# --- live use ----------------------------------------------------------------

def _pct(x: Decimal) -> str:
    return str(x.quantize(Decimal("0.01")))


def cpu_percent(before: Reading, after: Reading, cores: Decimal) -> str | None:
    """The session's CPU use between two readings, in percent of its granted
    cores (2 busy cores of 4 are 50 %); None without both readings' CPU time."""
    if before.cpu_seconds is None or after.cpu_seconds is None or cores <= 0:
        return None
    wall = Decimal(str((after.at - before.at).total_seconds()))
    if wall <= 0:
        return None
    used = max(after.cpu_seconds - before.cpu_seconds, Decimal(0))
    return _pct(used / wall / cores * HUNDRED)


def _sample(r: Reading, cpu: str | None) -> dict:
    return {"at": iso(r.at), "cpu_percent": cpu,
            "mem_used": None if r.mem_used is None else str(r.mem_used),
            "mem_limit": None if r.mem_limit is None else str(r.mem_limit),
            "gpu_util": None if r.gpu_util is None else _pct(r.gpu_util),
            "gpu_mem": None if r.gpu_mem is None else _pct(r.gpu_mem)}


def usage_model(alloc_id: str, state: str, cores: Decimal, readings: list[Reading]) -> dict:
    """What the reclaim pass read of a session: its samples (oldest first;
    CPU in percent of its granted cores since the reading before, memory in
    bytes, GPU utilisation and memory in percent) and the latest one; with
    why there are none."""
    samples = [_sample(r, cpu_percent(readings[i - 1], r, cores) if i else None)
               for i, r in enumerate(readings)]
    note = ""
    if state != "allocated":
        note = "it is not running"
    elif not samples:
        note = ("not sampled: each reclaim pass reads a running session's container "
                "(a session without one, such as a local process, is not read; with "
                "usage_sample_window 0, only sessions under a utilization rule are)")
    return {"id": alloc_id, "state": state, "cores": str(cores),
            "latest": samples[-1] if samples else None, "samples": samples, "note": note}


def allocation_usage(s: Session, p: Principal, alloc_id: str,
                     readings_of) -> dict:
    """The live use of a session the caller may see; ``readings_of(id)``
    gives the reclaim pass's readings of it (oldest first)."""
    a = ledger.visible_allocation(s, p, alloc_id)
    cores = Decimal(str((a.slots or {}).get("cpu", "0")))
    readings = list(readings_of(a.id)) if a.state == "allocated" else []
    return usage_model(a.id, a.state, cores, readings)
