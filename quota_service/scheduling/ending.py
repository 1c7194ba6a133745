"""Ending a session for a caller that needs no model of it: the API's
``DELETE allocations/{id}`` answers 204 and names nothing.

``ledger.release`` loads the whole allocation (36 columns, ten of them
JSON) and builds the model the hub and ``POST .../stop`` answer with; at a
storm's pace that load and model were a tenth of the service's CPU. ``end``
reads only what an end reads (the release itself, its usage interval, its
session record, the batch's view), and the same checks decide: hidden from
a caller who may not see it, refused while a hub server holds it,
idempotent. A column it leaves out is still read when something asks for it
(one more query, never a wrong answer): ``tests/test_ending.py`` checks that
an end reads its allocation in one query. The API's ends name their
allocation to their ledger batch (``read``), which loads all of its ends'
allocations in one query before its first write: each end then finds its
own loaded."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, load_only
from sqlalchemy.orm.util import identity_key

from . import groupcache, ledger, sessionaudit
from ..core import statements
from ..core.authz import Principal
from ..core.errors import NotFound
from ..core.models import Allocation

#: what ending a session reads of its allocation
COLUMNS = (Allocation.id, Allocation.user_id, Allocation.project_id, Allocation.domain_id,
           Allocation.resource_group_id, Allocation.node_id, Allocation.session_type,
           Allocation.slots, Allocation.gpus, Allocation.state, Allocation.origin,
           Allocation.server_name, Allocation.admitted_at, Allocation.ended_at,
           Allocation.exit_code, Allocation.reclaim_notice)
#: the loader option of those columns, made once (built per call, with its
#: cache key, it cost a tenth of an end)
ONLY = load_only(*COLUMNS)
#: the allocation by its id, made once too (``Session.get`` builds its
#: statement and that statement's cache key on every call)
_LOAD = select(Allocation).options(ONLY).where(Allocation.id == bindparam("id"))
#: a batch's ends' allocations (``read``)
_LOAD_MANY = select(Allocation).options(ONLY).where(
    Allocation.id.in_(bindparam("ids", expanding=True)))


@dataclass(frozen=True)
class Ended:
    """Where the session that ended was: its owner's domain, its group."""

    domain: str
    resource_group: str


def read(s: Session, alloc_ids: list[str]) -> None:
    """Load what ``end`` reads of the allocations ``alloc_ids`` in one query
    (a ledger batch's ends: ``core/groupcommit``'s ``before``); the batch
    holds them (``orm.hold_loaded``) and ``end`` finds each loaded."""
    for ids in statements.chunks(sorted(set(alloc_ids))):
        s.execute(_LOAD_MANY, {"ids": list(ids)}).scalars().all()


def end(s: Session, p: Principal, alloc_id: str, now: dt.datetime, reason: str,
        via: sessionaudit.Via | None = None) -> Ended:
    """``ledger.release`` without the model."""
    a = s.identity_map.get(identity_key(Allocation, alloc_id))  # read with its batch's
    if a is None:
        a = s.execute(_LOAD, {"id": alloc_id}).scalar_one_or_none()
    if a is None:
        raise NotFound(f"allocation {alloc_id!r} not found")
    owner = ledger.seen_by(s, p, a)
    ledger.releasable(a)
    ledger.release_allocation(s, a, now, reason, via=via, model=False)
    return Ended(owner.domain.name, groupcache.group_by_id(s, a.resource_group_id).name)
