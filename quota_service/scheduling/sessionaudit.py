"""Sessions in the access log: when each was asked for, waited, started
and ended, and how (docs/admin.md#sessions-in-the-access-log).

Every record is written in the transaction that changes the allocation,
so a session's records and its state never disagree. The record's
``target`` is the allocation id (the session's id): ``GET audit?target=ID``
(or ``history``) reads one session's records in order. The ``detail`` is
``name: value`` parts joined with ``"; "``, in a fixed order, ``ended``
last (its value may hold anything):

    user: bob; server: lab; project: ml; resource group: default;
    resources: cpu 2, mem 4 GiB, gpu.shares 0.5; node: n1; ended: stopped by ada

Records written before these names (``allocation.create``,
``allocation.delete``, ``allocation.cancel``, ``allocation.reclaim``) keep
their names.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import laterrows
from ..core.models import Allocation, AuditEntry
from ..core.names import format_slot
from . import groupcache
from ..tenancy import audit, people

#: a session asked for and started at once (placed on a node)
START = "session.start"
#: a session asked for that waits in its resource group's queue
QUEUE = "session.queue"
#: a waiting session the scheduler admitted from the queue onto a node
ADMIT = "session.admit"
#: someone asked the hub to stop a session's server (its end follows)
STOP = "session.stop"
#: the idle-reclaim pass stopped a session (its end follows)
RECLAIM = "session.reclaim"
#: a session ended, or a waiting one was cancelled: ``ended`` says how
END = "session.end"
ACTIONS = (START, QUEUE, ADMIT, STOP, RECLAIM, END)

#: the first word of ``ended``: how a session ended
ENDINGS = ("stopped", "cancelled", "reclaimed", "died", "failed", "released")

#: what the hub's spawner says when it releases (spawner/mixin.py)
HUB_STOPPED = "stopped"
HUB_DIED = "the server is no longer running"
HUB_FAILED = "the server failed to start"

#: who the scheduler's and reclaim's records name as actor
SCHEDULER = "hubgrid-scheduler"
RECLAIMER = "hubgrid-reclaim"


@dataclass(frozen=True)
class Via:
    """Who did it and how they reached the service (the actor of a record)."""

    actor: str | None
    credential: str = "service"
    source: str | None = None


def resources(slots: dict[str, str] | None) -> str:
    """``cpu 2, mem 4 GiB, gpu.shares 0.5``: a slot map exactly, for people."""
    return ", ".join(f"{k} {format_slot(k, Decimal(v))}"
                     for k, v in sorted((slots or {}).items())) or "none"


def describe(s: Session, a: Allocation) -> list[tuple[str, str]]:
    """The parts every session record carries, in order."""
    user = people.user(s, a.user_id)
    parts = [("user", user.name if user else "?")]
    if a.origin == "hub":
        parts.append(("server", a.server_name or "(default)"))
    else:
        parts.append(("started through", "the API"))
    project = people.project(s, a.project_id)
    rg = groupcache.group_by_id(s, a.resource_group_id)
    parts += [("project", project.name if project else "?"),
              ("resource group", rg.name if rg else "?"),
              ("type", a.session_type),
              ("resources", resources(a.slots))]
    if a.gpus:
        parts.append(("gpus", ", ".join(f"#{g['index']} x {g['share']}" for g in a.gpus)))
    node = groupcache.node_of(s, rg, a.node_id)
    if node is not None:
        parts.append(("node", node.name))
    return parts


def detail_text(parts: list[tuple[str, str]]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in parts)


def parse_detail(detail: str) -> dict[str, str]:
    """A session record's detail as ``{name: value}`` (``ended`` whole)."""
    out: dict[str, str] = {}
    head, sep, ended = detail.partition("; ended: ")
    if not sep and detail.startswith("ended: "):
        head, ended, sep = "", detail[len("ended: "):], "x"
    for part in head.split("; ") if head else []:
        name, _, value = part.partition(": ")
        out[name] = value
    if sep:
        out["ended"] = ended
    return out


def write(s: Session, a: Allocation, action: str, now: dt.datetime, via: Via | None = None,
          extra: list[tuple[str, str]] = (), status: int = 200) -> None:
    """Add the session record ``action`` of ``a`` to the transaction of ``s``."""
    user = people.user(s, a.user_id)
    domain = user.domain.name if user else None
    via = via or Via(user.name if user else None)
    if user is not None and via.actor == user.name and via.actor not in (SCHEDULER, RECLAIMER):
        actor_domain = domain  # the owner acts: no second look-up
    else:
        actor_domain = _domain_of(s, via.actor, domain)
    # a plain INSERT (the ORM's unit of work for one row cost a decision a
    # sixth of its time), with the batch's others at its end (``laterrows``)
    laterrows.insert(s, AuditEntry.__table__, dict(
        timestamp=now, actor=audit.visible(via.actor), actor_domain=actor_domain,
        domain=domain, credential=via.credential, source=via.source, action=action,
        target=a.id, outcome="success", status=status,
        detail=audit.visible(detail_text(describe(s, a) + list(extra)))[:4000]))


def _domain_of(s: Session, name: str | None, fallback: str | None) -> str | None:
    if name in (None, SCHEDULER, RECLAIMER):
        return None
    user = people.user_named(s, name)
    return user.domain.name if user is not None else fallback


def started(s: Session, a: Allocation, now: dt.datetime, via: Via | None) -> None:
    """``a`` was just made: started on a node, or queued (with why)."""
    if a.state == "allocated":
        write(s, a, START, now, via, status=201)
    else:
        why = " and ".join(r["text"] for r in (a.reasons or []) if r.get("text"))
        write(s, a, QUEUE, now, via, [("waits for", why or "its turn")], status=202)


def admitted(s: Session, a: Allocation, now: dt.datetime) -> None:
    """The scheduler admitted ``a`` from the queue."""
    created = a.created_at if a.created_at.tzinfo else a.created_at.replace(
        tzinfo=dt.timezone.utc)
    waited = max(0, int((now - created).total_seconds()))
    write(s, a, ADMIT, now, Via(SCHEDULER), [("waited", f"{waited} s")])


def ending(s: Session, a: Allocation, was: str, reason: str) -> tuple[str, Via | None]:
    """How ``a`` ended (``ended``, its first word one of ``ENDINGS``) and who
    ended it (None: its owner), from the release ``reason`` and what the
    access log already says of it."""
    notice = a.reclaim_notice or {}
    if notice.get("reclaim_reason"):
        text = notice["reclaim_reason"]
        why = text.partition("): ")[2] or text
        return f"reclaimed by the {notice.get('rule', '?')} rule: {why}", Via(RECLAIMER)
    if was == "pending":
        who = _stopper(reason)
        if who is not None:
            return f"cancelled while waiting, by {who.actor}", who
        return f"cancelled while waiting: {reason}", None
    if reason == HUB_STOPPED:
        asked = s.scalars(select(AuditEntry).where(
            AuditEntry.target == a.id, AuditEntry.action == STOP,
            AuditEntry.outcome == "success").order_by(AuditEntry.id.desc()).limit(1)).first()
        if asked is not None and asked.actor:
            return f"stopped by {asked.actor}", Via(asked.actor, asked.credential, asked.source)
        return "stopped through the hub (by its owner, an admin or the hub's culler)", None
    if reason == HUB_DIED:
        return "died: the server was no longer running", None
    if reason == HUB_FAILED or reason.startswith(HUB_FAILED + ": "):
        return f"failed: {reason}", None
    if reason.split(" ", 1)[0] in ENDINGS:
        return reason, _stopper(reason)
    return f"released: {reason}", None


def _stopper(reason: str) -> Via | None:
    """``stopped by ada`` / ``cancelled by ada ...``: ada."""
    words = reason.split(" ")
    if len(words) >= 3 and words[1] == "by" and words[0] in ("stopped", "cancelled"):
        return Via(words[2])
    return None


def ended(s: Session, a: Allocation, was: str, reason: str, now: dt.datetime,
          via: Via | None = None) -> None:
    """``a`` (``was`` pending or allocated) just ended for ``reason``."""
    how, found = ending(s, a, was, reason)
    extra = [("ended", how)]
    if was == "allocated" and a.admitted_at is not None:
        admitted_at = a.admitted_at if a.admitted_at.tzinfo else a.admitted_at.replace(
            tzinfo=dt.timezone.utc)
        ran = max(0, int((now - admitted_at).total_seconds()))
        extra.insert(0, ("ran", f"{ran} s"))
        if a.exit_code is not None:
            extra.insert(1, ("exit code", str(a.exit_code)))
    write(s, a, END, now, via or found, extra)


def history(s: Session, alloc_id: str) -> list[AuditEntry]:
    """One session's records (and the requests about it), oldest first."""
    return list(s.scalars(select(AuditEntry).where(AuditEntry.target == alloc_id)
                          .order_by(AuditEntry.timestamp, AuditEntry.id)))
