"""The access log: every login, every API write and every denial.

Records are written in a transaction of their own, so a refused or failed
write still leaves its record while its own changes are rolled back.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from ..core import authz, db, laterrows, names
from ..core.authz import Principal
from ..core.errors import Invalid
from ..core.models import AuditEntry

MAX_PAGE = 500


@dataclass(frozen=True)
class Record:
    action: str
    outcome: str  # success | denied | invalid | error
    status: int
    actor: str | None = None
    actor_domain: str | None = None
    domain: str | None = None
    credential: str = "none"
    source: str | None = None
    target: str = ""
    detail: str = ""


def entry_domain(target: str | None, actor_domain: str | None, actor_is_superadmin: bool,
                 status: int) -> str | None:
    """The domain an entry is about: whose domain admins read it.

    The target's domain when the handler knows it, whoever acted (a
    superadmin of ``default`` creating a keypair in ``acme`` writes an entry
    of ``acme``). Otherwise the actor's own domain, since a user or domain
    admin acts only inside it -- but not for a superadmin (who acts
    anywhere) and not for a 404 (what was not found may be another domain's
    hidden thing: its entry must not tell a domain admin it exists). None:
    only superadmins read it.
    """
    if target is not None:
        return target
    if actor_is_superadmin or status == 404:
        return None
    return actor_domain


def visible(text: str | None) -> str | None:
    """``text`` with its control and bidi characters written as ``\\uXXXX``:
    a name a client sent (a refused login, a path) cannot make an entry
    display as another."""
    if text is None or names.unsafe_char(text) is None:
        return text
    return "".join(f"\\u{ord(c):04x}" if names.unsafe_char(c) else c for c in text)


def _cut(text: str | None, n: int) -> str | None:
    return text[:n] if text is not None else None


def record(factory: sessionmaker[Session], rec: Record, now: dt.datetime) -> None:
    # ``db.transaction``: on SQLite it queues with the process's other writers
    with db.transaction(factory) as s:
        add(s, rec, now)


def add(s: Session, rec: Record, now: dt.datetime) -> None:
    """Add the entry ``rec`` to ``s``'s transaction: a plain INSERT, in a
    batch with the batch's other entries at its end (``core/laterrows``;
    as ORM objects, the unit of work of a batch's entries cost more than
    their INSERT)."""
    laterrows.insert(s, AuditEntry.__table__, dict(
        timestamp=now,
        actor=_cut(visible(rec.actor), 255),
        actor_domain=rec.actor_domain,
        domain=rec.domain,
        credential=rec.credential,
        source=_cut(visible(rec.source), 64),
        action=rec.action,
        target=visible(rec.target)[:512],
        outcome=rec.outcome,
        status=rec.status,
        detail=visible(rec.detail)[:4000],
    ))


def _entry_model(e: AuditEntry) -> dict:
    t = e.timestamp
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return {
        "id": e.id,
        "timestamp": t.isoformat(),
        "actor": e.actor,
        "actor_domain": e.actor_domain,
        "domain": e.domain,
        "credential": e.credential,
        "source": e.source,
        "action": e.action,
        "target": e.target,
        "outcome": e.outcome,
        "status": e.status,
        "detail": e.detail,
    }


def _parse_time(name: str, value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        raise Invalid(f"{name}: not an ISO 8601 time: {value!r}") from None
    # in UTC: SQLite compares the stored UTC times without their offset
    return t.astimezone(dt.timezone.utc) if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def _parse_int(name: str, value: str | None, default: int, lo: int, hi: int) -> int:
    if value is None:
        return default
    try:
        n = int(value)
    except ValueError:
        raise Invalid(f"{name}: not an integer: {value!r}") from None
    if not lo <= n <= hi:
        raise Invalid(f"{name}: must be between {lo} and {hi}")
    return n


def query(s: Session, p: Principal, args: dict[str, str | None]) -> dict:
    """A page of the log, newest first, as far as ``p`` may read it.

    Filters: user (actors whose name starts with it: ``ali`` finds alice
    and alina; exact and case-sensitive on every database), action, outcome,
    target (exactly: a session's records by its allocation id), since,
    until (ISO 8601); pagination: limit (1..500, default 100) and offset.
    """
    scope = authz.audit_scope(p)
    unknown = set(args) - {"user", "action", "outcome", "target", "since", "until", "limit",
                           "offset"}
    if unknown:
        raise Invalid(f"unknown query parameter(s): {', '.join(sorted(unknown))}")
    limit = _parse_int("limit", args.get("limit"), 100, 1, MAX_PAGE)
    offset = _parse_int("offset", args.get("offset"), 0, 0, 10**9)
    since = _parse_time("since", args.get("since"))
    until = _parse_time("until", args.get("until"))
    q = select(AuditEntry)
    if scope is not None:
        # by what the entry is about, never by who acted: filters only narrow this
        q = q.where(AuditEntry.domain == scope)
    if args.get("user"):
        # a prefix compared as text (not LIKE: '%' and '_' are plain, and
        # SQLite's LIKE would ignore case where PostgreSQL's does not)
        prefix = args["user"]
        q = q.where(func.substr(AuditEntry.actor, 1, len(prefix)) == prefix)
    if args.get("target"):
        q = q.where(AuditEntry.target == args["target"])
    if args.get("action"):
        q = q.where(AuditEntry.action == args["action"])
    if args.get("outcome"):
        q = q.where(AuditEntry.outcome == args["outcome"])
    if since is not None:
        q = q.where(AuditEntry.timestamp >= since)
    if until is not None:
        q = q.where(AuditEntry.timestamp < until)
    rows = s.scalars(
        q.order_by(AuditEntry.timestamp.desc(), AuditEntry.id.desc())
        .limit(limit + 1)
        .offset(offset)
    ).all()
    page = [_entry_model(e) for e in rows[:limit]]
    return {
        "entries": page,
        "offset": offset,
        "limit": limit,
        "next_offset": offset + limit if len(rows) > limit else None,
    }
