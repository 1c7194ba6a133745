"""What the decisions of one batch (``core.groupcommit``) read once and keep
current as they write.

A decision reads what its domain's users, projects and the domain hold
(``holdings.domain_usage``), what runs in its resource group
(``ledger.running_in``), its nodes with what runs subtracted
(``ledger.cluster_state``) and how many requests hold the head of the group's
line (``ledger.blocking_queue``). In a batch, each is read from the
database by the first decision that needs it and then moved by every
admission, queued request, release and cancellation of the batch itself
(``added``, ``placed``, ``removed``), so the next decision of the batch judges exactly
what it would have read from the database, without reading it. The batch
holds the ledger lock throughout: nobody else changes any of it meanwhile.
A write that failed (rolled back to its savepoint) leaves the memo made anew.
"""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

from sqlalchemy.orm import Session

from . import holdings
from ..core import slots as slotlib
from ..core.models import Allocation

#: ``Session.info`` key of the batch's memo
KEY = "hubgrid_batch_memo"


class Running(NamedTuple):
    """A running session as ``ledger.running_in`` reads it."""

    id: str
    node_id: int | None
    slots: dict
    gpus: list


def install(s: Session) -> None:
    """Give ``s``'s batch a new memo (``groupcommit``'s ``fresh``)."""
    s.info[KEY] = Memo()


def of(s: Session) -> Memo | None:
    """The memo of ``s``'s batch, or None outside a batch."""
    return s.info.get(KEY)


class Memo:
    def __init__(self) -> None:
        self._held: dict[int, dict[holdings.Key, holdings.Held]] = {}
        self._running: dict[int, list] = {}
        self._blocking: dict[int, int] = {}
        self._clusters: dict[int, object] = {}

    # -- reading, once per batch -------------------------------------------------

    def held(self, s: Session, domain_id: int) -> dict[holdings.Key, holdings.Held]:
        if domain_id not in self._held:
            self._held[domain_id] = holdings.domain_usage(s, domain_id)
        return self._held[domain_id]

    def running(self, s: Session, rg, read) -> list:
        """``read(s, rg)`` (``ledger.running_in``) once per group."""
        if rg.id not in self._running:
            self._running[rg.id] = list(read(s, rg))
        return self._running[rg.id]

    def blocking(self, s: Session, rg, read) -> int:
        """``read(s, rg)`` (``ledger.blocking_queue``) once per group."""
        if rg.id not in self._blocking:
            self._blocking[rg.id] = read(s, rg)
        return self._blocking[rg.id]

    def cluster(self, rg, running: list, build):
        """``build(rg, running)`` (``ledger.cluster_state``) once per group
        while only admissions change it (``placed``)."""
        if rg.id not in self._clusters:
            self._clusters[rg.id] = build(rg, running)
        return self._clusters[rg.id]

    # -- what the batch wrote ------------------------------------------------------

    def added(self, a: Allocation, hol_passes: int) -> None:
        """``a`` was just made (allocated or pending)."""
        amounts = slotlib.from_text(a.slots)
        self._count(a, a.state, amounts, 1)
        if a.state == "allocated" and a.resource_group_id in self._running:
            self._running[a.resource_group_id].append(
                Running(a.id, a.node_id, a.slots, list(a.gpus or [])))
        if (a.state == "pending" and a.resource_group_id in self._blocking
                and blocks(a.reasons, a.passes or 0, hol_passes)):
            self._blocking[a.resource_group_id] += 1

    def placed(self, rg_id: int, request, decision) -> None:
        """An admission took ``decision`` (a placement) for ``request``: the
        group's nodes give it exactly what a new reading would subtract."""
        cluster = self._clusters.get(rg_id)
        if cluster is not None:
            cluster.apply(request, decision)

    def removed(self, a: Allocation, was: str) -> None:
        """``a`` (``was`` allocated or pending) just ended."""
        self._count(a, was, slotlib.from_text(a.slots), -1)
        if was == "allocated":
            rows = self._running.get(a.resource_group_id)
            if rows is not None:
                self._running[a.resource_group_id] = [r for r in rows if r.id != a.id]
            # read again when asked: a node shrunk under its sessions counts nothing
            # free, which taking back what one session held would not say
            self._clusters.pop(a.resource_group_id, None)
        elif was == "pending":
            self._blocking.pop(a.resource_group_id, None)  # read again when asked

    def _count(self, a: Allocation, state: str, amounts: dict[str, Decimal], sign: int) -> None:
        held = self._held.get(a.domain_id)
        if held is not None:
            holdings.count(held, a.user_id, a.project_id, a.domain_id, state, amounts, sign)


def waits_for_the_group(reasons) -> bool:
    """Whether a pending request's ``reasons`` are its group's alone
    (capacity, the line), none of its own limits."""
    return bool(reasons) and all(r["level"] == "resource-group" for r in reasons)


def blocks(reasons, passes: int, hol_passes: int) -> bool:
    """Whether a pending request holds the head of its group's line: it
    waits for the group alone and has passes left."""
    return passes < hol_passes and waits_for_the_group(reasons)
