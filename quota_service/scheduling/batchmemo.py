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
A write that failed (rolled back to its savepoint) after it moved the memo
leaves the memo made anew; one that failed before (a refusal, raised before
any write) leaves it as it was.

The memo outlives its batch (``Carry``): once the batch committed, the next
batch starts from it as long as nobody else changed the allocations
meanwhile -- a queue pass, a reconcile, an admin, another process, plain SQL
-- which the database's own counter of them says (``ledger_counters`` row
``allocations``, moved by triggers with every change to the columns read
here: migrations 0021, 0022). So a stream of decisions reads what the
domains hold and what runs in a group once, not once per batch. A change to
pending requests' reasons or passes alone (what most queue passes write)
moves another counter (``allocation_line``): the next batch keeps the rest
and reads only the line again. What is kept of a group
(its running sessions, its nodes with them subtracted, its line) is tied to
the group's rows it was made from (``groupcache``): a group changed since
(a node drained, a device replaced, the line's rules) is read again. Every
writer of those columns holds the ledger lock (as the batch itself relies
on), so the counter read at the end of a batch counts exactly the batch's
own changes and what it read.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import NamedTuple

from sqlalchemy.orm import Session

from . import groupview, holdings
from ..core import generations
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
    user_id: int

    @classmethod
    def of(cls, a: Allocation) -> Running:
        return cls(a.id, a.node_id, a.slots, list(a.gpus or []), a.user_id)


class RunningRows:
    """A group's running sessions, kept: iterated like the list
    ``ledger.running_in`` reads, and taken out or read by node without a
    scan of them all (a release did both, each a pass over every session
    running in its group)."""

    __slots__ = ("_by_id", "_by_node")

    def __init__(self, rows=()) -> None:
        self._by_id: dict[str, Running] = {}
        self._by_node: dict[int | None, dict[str, Running]] = {}
        for r in rows:
            self.append(r)

    def append(self, r: Running) -> None:
        self._by_id[r.id] = r
        self._by_node.setdefault(r.node_id, {})[r.id] = r

    def remove(self, alloc_id: str) -> None:
        """Take out ``alloc_id`` (nothing if it is not here)."""
        r = self._by_id.pop(alloc_id, None)
        if r is not None:
            del self._by_node[r.node_id][alloc_id]

    def on_node(self, node_id: int) -> list[Running]:
        return list(self._by_node.get(node_id, {}).values())

    def __iter__(self):
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)


def install(s: Session) -> None:
    """Give ``s``'s batch a new memo."""
    s.info[KEY] = Memo()


def of(s: Session) -> Memo | None:
    """The memo of ``s``'s batch, or None outside a batch."""
    return s.info.get(KEY)


#: the counter of the allocations' changes (migration 0021), and what moves it
COUNTER = "allocations"
#: the counter of changes to the line alone: a pending request's reasons or
#: passes (migration 0022), which the 'allocations' counter leaves out
LINE_COUNTER = "allocation_line"
TABLES = frozenset({Allocation.__tablename__})


def generation(s: Session) -> int | None:
    """The allocations' counter as ``s``'s transaction sees it (None: a
    database without it, whose memos are never kept): read once, and again
    only after the transaction wrote to the allocations."""
    return generations.generation(s, COUNTER, TABLES)


def line_generation(s: Session) -> int | None:
    """The line's counter (``generation``'s twin; None: a database without
    it, whose kept lines are never used)."""
    return generations.generation(s, LINE_COUNTER, TABLES)


class Carry:
    """The memo one ledger transaction leaves to the next: a batch
    (``groupcommit``'s ``view``) or a queue pass (``queue.schedule_all``).
    Kept when the transaction committed, used by the next one when the
    allocations' counter is where the kept one read it at its end; its line
    (``Memo.forget_line``) only when the line's counter is too (a queue pass
    of another process that only counted passes or changed reasons moved
    that one alone).

    Every transaction using it runs in its ``turn``, around the whole
    transaction (and the ledger lock it takes): ``begin`` takes the kept
    memo, and ``committed`` keeps what ``ending`` gave of it before the next
    turn begins. The ledger lock alone did not order them: it is let go at
    the COMMIT, before the committer kept its memo, so the next transaction
    found none kept (or the one before, stale) and read everything again
    (35 times in 1,000 storm requests on PostgreSQL)."""

    def __init__(self) -> None:
        self._kept: tuple[int, int | None, Memo] | None = None
        self._turn = threading.Lock()
        #: the memo's changes when the write under way began
        self._clean = 0
        #: transactions that started from the last one's memo (of them,
        #: those that read the line again), and writes that failed without
        #: having moved it (for tests and figures)
        self.carried = self.line_read_again = self.kept_on_failure = 0

    def turn(self) -> threading.Lock:
        """Held by one transaction's use of the memo, from before its BEGIN
        to after ``committed`` (a transaction that failed after ``begin``
        leaves none kept: ``begin`` took it)."""
        return self._turn

    def begin(self, s: Session) -> None:
        kept, self._kept = self._kept, None
        if kept is not None and generation(s) == kept[0]:
            gen, line, memo = kept
            if line is None or line_generation(s) != line:
                memo.forget_line()
                self.line_read_again += 1
            s.info[KEY] = memo
            self.carried += 1
        else:
            install(s)
        self._clean = of(s).changes

    def succeeded(self, s: Session) -> None:
        self._clean = of(s).changes

    def failed(self, s: Session) -> None:
        """A write of the batch was rolled back: what it moved of the memo
        is wrong, so the memo is made anew; one it did not move (a refusal,
        a missing allocation: raised before any write) stays."""
        memo = of(s)
        if memo is not None and memo.changes == self._clean:
            self.kept_on_failure += 1
            return
        install(s)
        self._clean = 0

    def ending(self, s: Session) -> tuple[int, int | None, Memo] | None:
        """The transaction's writes are done, its COMMIT next: what to keep
        (for ``committed``) once that succeeded."""
        gen, memo = generation(s), of(s)
        return None if gen is None or memo is None else (gen, line_generation(s), memo)

    def committed(self, kept: tuple[int, int | None, Memo] | None) -> None:
        self._kept = kept


class Memo:
    def __init__(self) -> None:
        #: how many writes moved it (``added``, ``placed``, ``removed``)
        self.changes = 0
        self._held: dict[int, dict[holdings.Key, holdings.Held]] = {}
        self._running: dict[int, RunningRows] = {}
        self._blocking: dict[int, int] = {}
        self._clusters: dict[int, object] = {}
        #: per group id: the group's rows (``groupcache.GroupRow``) what is kept was made with
        self._groups: dict[int, object] = {}

    def _group(self, rg) -> None:
        """Forget what was kept of ``rg``'s group if it came from other rows
        of it (the group changed since)."""
        if self._groups.get(rg.id) is not rg:
            self._running.pop(rg.id, None)
            self._blocking.pop(rg.id, None)
            self._clusters.pop(rg.id, None)
            self._groups[rg.id] = rg

    # -- reading, once per batch -------------------------------------------------

    def held(self, s: Session, domain_id: int) -> dict[holdings.Key, holdings.Held]:
        if domain_id not in self._held:
            self._held[domain_id] = holdings.domain_usage(s, domain_id)
        return self._held[domain_id]

    def kept_held(self, domain_id: int) -> dict[holdings.Key, holdings.Held] | None:
        """What the domain holds, if the memo has read it (None: not)."""
        return self._held.get(domain_id)

    def running(self, s: Session, rg, read) -> RunningRows:
        """``read(s, rg)`` (``ledger.running_in``) once per group."""
        self._group(rg)
        if rg.id not in self._running:
            self._running[rg.id] = RunningRows(read(s, rg))
        return self._running[rg.id]

    def forget_line(self, rg_id: int | None = None) -> None:
        """Someone else changed a pending request's reasons or passes (of the
        group ``rg_id``; None: of any): how many hold the line is read again
        when asked."""
        if rg_id is None:
            self._blocking.clear()
        else:
            self._blocking.pop(rg_id, None)

    def forget_cluster(self, rg_id: int) -> None:
        """The group's nodes are read again when asked."""
        self._clusters.pop(rg_id, None)

    def blocking(self, s: Session, rg, read) -> int:
        """``read(s, rg)`` (``ledger.blocking_queue``) once per group."""
        self._group(rg)
        if rg.id not in self._blocking:
            self._blocking[rg.id] = read(s, rg)
        return self._blocking[rg.id]

    def cluster(self, rg, running: list, build):
        """``build(rg, running)`` (``ledger.cluster_state``) once per group
        while only admissions change it (``placed``)."""
        self._group(rg)
        if rg.id not in self._clusters:
            self._clusters[rg.id] = build(rg, running)
        return self._clusters[rg.id]

    # -- what the batch wrote ------------------------------------------------------

    def added(self, a: Allocation, hol_passes: int) -> None:
        """``a`` was just made (allocated or pending)."""
        self.changes += 1
        amounts = slotlib.from_text(a.slots)
        self._count(a, a.state, amounts, 1)
        if a.state == "allocated" and a.resource_group_id in self._running:
            self._running[a.resource_group_id].append(Running.of(a))
        if (a.state == "pending" and a.resource_group_id in self._blocking
                and blocks(a.reasons, a.passes or 0, hol_passes)):
            self._blocking[a.resource_group_id] += 1

    def placed(self, rg_id: int, request, decision) -> None:
        """An admission took ``decision`` (a placement) for ``request``: the
        group's nodes give it exactly what a new reading would subtract."""
        self.changes += 1
        cluster = self._clusters.get(rg_id)
        if cluster is not None:
            cluster.apply(request, decision)

    def removed(self, a: Allocation, was: str) -> None:
        """``a`` (``was`` allocated or pending) just ended."""
        self.changes += 1
        self._count(a, was, slotlib.from_text(a.slots), -1)
        if was == "allocated":
            rg_id = a.resource_group_id
            rows = self._running.get(rg_id)
            if rows is not None:
                rows.remove(a.id)
            cluster = self._clusters.get(rg_id)
            if cluster is not None and rows is not None and a.node_id is not None:
                # its node read again from what still runs there (a node shrunk
                # under its sessions counts nothing free, which taking back what
                # one session held would not say)
                groupview.refresh_node(cluster, self._groups[rg_id], a.node_id,
                                       rows.on_node(a.node_id))
            else:
                self._clusters.pop(rg_id, None)  # read again when asked
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
