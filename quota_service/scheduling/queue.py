"""The pending queue of a resource group: the scheduling pass over it, in the
order ``ordering`` decides.

``schedule`` is one pass over a group's queue in one ledger transaction: it
cancels what nobody waits for any more, what waited too long and what can
no longer be met, and admits and places what fits, in queue order. Which
requests are abandoned is decided by the caller (``waiters.abandoned``) and
given as data; the admission decisions are ``ledger.evaluate``'s.
"""

from __future__ import annotations

import datetime as dt
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Mapping

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, load_only

from . import admission, batchmemo, ledger, ordering, rejudge, sessionaudit, waiters
from ..core import db, laterrows, orm
from ..core import slots as slotlib
from ..tenancy import people
from ..core.models import Allocation, ResourceGroup
from .passview import PassView
from ..core.orm import aware



@dataclass
class PassResult:
    """What one pass over a group's queue did."""

    group: str
    admitted: list[str] = field(default_factory=list)
    #: (allocation id, domain, reason) of the requests the pass cancelled
    cancelled: list[tuple[str, str, str]] = field(default_factory=list)
    #: how many requests are still pending after the pass
    pending: int = 0


#: seconds after which a pass judges every request again, whatever the memo says
MEMO_MAX_AGE = 60.0


def schedule_all(factory, now: dt.datetime, strategy, presence: waiters.Presence | None,
                 abandon_after: float, log, memos: dict[str, Memo] | None = None,
                 generation: Callable[[], int] | None = None,
                 only: frozenset[str] | None = None,
                 carry: batchmemo.Carry | None = None,
                 since: Since | None = None) -> list[PassResult]:
    """One pass over every resource group's queue (``only``: over these
    groups' queues; None: every group), each in its own ledger
    transaction (blocking: run it in a worker thread). ``presence``: who
    waited for what lately (None: judge nobody abandoned). ``memos`` (kept
    by the caller between passes) and ``generation`` (``Waiters.generation``)
    spare judging again what cannot have changed; ``since``
    (``changelog.ChangeLog.since``) says which sessions started or ended
    since a generation, so that only the requests they touch are judged
    again (``rejudge``). Admissions and cancellations
    are in the access log (``sessionaudit``, in the pass's transaction) and logged.
    ``carry``: the ledger batches' memo (``batchmemo.Carry``), which a pass
    starts from and keeps current, as a batch does."""
    with db.transaction(factory) as s:
        groups = [g for g in s.scalars(select(ResourceGroup.name))
                  if only is None or g in only]
        gone: dict[str, str] = {}
        if presence is not None:
            pending = s.execute(select(Allocation.id, Allocation.created_at).where(
                Allocation.origin == "hub", Allocation.state == "pending")).all()
            gone = waiters.abandoned(((i, aware(c)) for i, c in pending), presence, now,
                                     abandon_after)
    results = []
    for name in groups:
        memo = memos.setdefault(name, Memo()) if memos is not None else None
        if memo is not None and time.monotonic() - memo.at > MEMO_MAX_AGE:
            memo.generation = None  # now and then, judge everybody again
        kept = None
        with carry.turn() if carry is not None else nullcontext():
            with db.ledger_transaction(factory) as s:
                # read holding the ledger lock: what committed before is in this pass
                laterrows.collect(s)  # its records at its end, one INSERT a table
                if carry is not None:
                    carry.begin(s)
                current = generation() if generation is not None else None
                result = schedule(s, name, now, strategy, gone, memo, current, since)
                laterrows.flush(s)
                if carry is not None:
                    kept = carry.ending(s)
            if carry is not None:
                carry.committed(kept)
        results.append(result)
        if result.admitted:
            log.info("resource group %s: admitted %d request(s) from the queue (%d still "
                     "pending): %s", name, len(result.admitted), result.pending,
                     ", ".join(result.admitted))
        for alloc_id, domain, reason in result.cancelled:
            log.info("resource group %s: cancelled pending request %s: %s", name, alloc_id,
                     reason)
    return results


def queue_order(rg: ResourceGroup, pending: list[Allocation], running: list[Allocation]):
    """The group's pending allocations in the order of its policy (``ordering``)."""
    capacity = held = None
    if rg.queue_order == "drf":
        capacity = ledger.group_view(rg, True).capacity
        held = ordering.held_by_user((a.user_id, slotlib.from_text(a.slots)) for a in running)
    by_id = {a.id: a for a in pending}
    # an admin's move (scheduling/queueadmin.py) sets queue_at, its order time
    waiting = [ordering.Waiting(a.id, aware(a.queue_at or a.created_at), a.priority, a.user_id)
               for a in pending]
    return [by_id[w.id] for w in ordering.order(rg.queue_order, waiting, capacity, held)]


#: the allocations whose sessions started or ended since a generation (None: anything changed)
Since = Callable[[int | None], "frozenset[str] | None"]
#: changed allocations read per query; past MAX_TOUCHED, everyone is judged again
TOUCHED_PER_QUERY = 500
MAX_TOUCHED = 5000


@dataclass
class Memo:
    """What a group's last pass found, to judge again only what may differ.

    While the world a decision reads is unchanged (``generation``: see
    ``waiters.Waiters.generation``), a request that had to wait still has
    to, for the same reasons: the next pass counts its pass without judging
    it again. Sessions that started or ended since (``since``) touch the
    requests that read or are blocked by what they hold (``rejudge``): only
    those are judged again; a setting change makes the next pass judge
    everyone again.
    """

    generation: int | None = None
    #: allocation id -> what its last judgement read and what blocks it
    waited: dict[str, rejudge.Kept] = field(default_factory=dict)
    #: when it was last made from a pass that judged everybody (monotonic)
    at: float = 0.0


QUEUE_COLUMNS = (Allocation.id, Allocation.created_at, Allocation.priority, Allocation.passes,
                 Allocation.state, Allocation.user_id, Allocation.project_id,
                 Allocation.domain_id, Allocation.resource_group_id, Allocation.queue_at,
                 # what judging one reads (small columns: loading them for the whole
                 # queue costs less than one query per judged request) and its record
                 Allocation.slots, Allocation.gpu_models, Allocation.session_type,
                 Allocation.image, Allocation.keypair, Allocation.reasons,
                 Allocation.origin, Allocation.server_name)
#: the loader option of those columns, made once: built for every chunk a
#: pass loads (one or two in a storm), it cost about 0.3 ms each
QUEUE_ONLY = load_only(*QUEUE_COLUMNS)
#: what ``touched_since`` reads of the changed allocations; this and a pass's
#: other statements are made once (each built with its cache key on every
#: pass cost about 0.2 ms of it)
_TOUCHED = select(Allocation.user_id, Allocation.project_id, Allocation.domain_id,
                  Allocation.resource_group_id, Allocation.state).where(
    Allocation.id.in_(bindparam("ids", expanding=True)))


def touched_since(s: Session, ids: frozenset[str]) -> rejudge.Touched | None:
    """What the sessions of the allocations ``ids`` freed (ended) and took
    (started); None when they are too many to be worth sorting out."""
    if len(ids) > MAX_TOUCHED:
        return None
    touched = rejudge.Touched()
    ids = sorted(ids)
    for at in range(0, len(ids), TOUCHED_PER_QUERY):
        for user, project, domain, group, state in s.execute(
                _TOUCHED, {"ids": ids[at:at + TOUCHED_PER_QUERY]}):
            own = rejudge.own_keys(user, project, domain, group)
            touched.started(own) if state == "allocated" else touched.ended(own)
    return touched


def known_decisions(s: Session, memo: Memo | None, generation: int | None,
                    since: Since | None) -> tuple[dict[str, rejudge.Kept], rejudge.Touched]:
    """The memo's judgements that may still hold, and what touched them since."""
    if memo is None or generation is None or memo.generation is None:
        return {}, rejudge.Touched()
    if memo.generation == generation:
        return memo.waited, rejudge.Touched()
    changed = since(memo.generation) if since is not None else None
    touched = touched_since(s, changed) if changed is not None else None
    if touched is None:
        return {}, rejudge.Touched()
    return memo.waited, touched


def schedule(s: Session, rg_name: str, now: dt.datetime, strategy,
             abandoned: Mapping[str, str] | None = None, memo: Memo | None = None,
             generation: int | None = None, since: Since | None = None) -> PassResult:
    """One pass over a group's pending queue.

    ``abandoned``: pending requests nobody waits for any more, with the
    reason they are cancelled; they are cancelled first, never admitted.
    Head-of-line: a request that waits for capacity blocks the ones behind it
    (so a large request is not starved by a stream of small ones) for at most
    ``hol_passes`` passes; after that it is skipped and smaller requests may
    go first. Waiting on one's own limits never blocks anybody else.
    Requests pending longer than the group's ``pending_timeout`` are cancelled.
    ``memo``: the group's last pass, reused when ``generation`` is still its
    generation, or for the requests that what changed ``since`` then does
    not touch (``rejudge``); updated for the next pass.
    """
    result = PassResult(rg_name)
    rg = ledger.group_for_decision(s, rg_name)
    if rg is None:
        return result
    abandoned = abandoned or {}
    # what ordering and counting read, for the whole queue; whole rows load
    # only for the requests the pass judges, counts or cancels (``LazyQueue``)
    line = s.execute(_LINE, {"group": rg.id}).all()
    if memo is not None and generation is not None and memo.generation == generation and \
            rejudge.idle_pass(((r.id, r.passes, aware(r.created_at)) for r in line), memo.waited,
                              rg.hol_passes, rg.pending_timeout, now, abandoned):
        result.pending = len(line)
        return result
    # what runs: rows, not ORM objects (nothing of them is written, and
    # building objects cost a pass more than judging its queue); in a
    # transaction with a memo (``batchmemo.Carry``), the memo's, which the
    # pass keeps current for the decisions after it
    carried = batchmemo.of(s)
    running = (carried.running(s, rg, ledger.running_in) if carried is not None
               else list(ledger.running_in(s, rg)))
    orm.hold_loaded(s)  # what the pass loads stays loaded until it commits
    queue = LazyQueue(s, queue_order(rg, line, running))
    view = PassView(s, rg, running, queue.objects, carried)
    known, touched = known_decisions(s, memo, generation, since)
    waited: dict[str, rejudge.Kept] = {}
    blocked = False  # the head of the line waits for capacity

    def cancel(a: Allocation, reason: str) -> None:
        view.cancelling(a)
        a.state, a.released_at = "cancelled", now
        a.release_reason = reason[:255]
        sessionaudit.ended(s, a, "pending", reason, now, sessionaudit.Via(sessionaudit.SCHEDULER))
        result.cancelled.append((a.id, people.user(s, a.user_id).domain.name, a.release_reason))

    for at, r in enumerate(queue.order):
        if r.id in abandoned:
            cancel(queue.get(at), abandoned[r.id])
            continue
        if rg.pending_timeout is not None and (
            now - aware(r.created_at)
        ).total_seconds() > rg.pending_timeout:
            cancel(queue.get(at), f"pending longer than {rg.pending_timeout} s")
            continue
        if blocked:
            continue  # behind the head of the line: only cancellations this pass
        last = known.get(r.id)
        if last is not None and not rejudge.must_judge(last, touched):
            waited[r.id] = last
            waits_for_capacity = last.waits_for_capacity
        else:
            a = queue.get(at)
            decision, placement = judge(s, view, rg, a, now, strategy)
            if placement is not None:
                amounts = slotlib.from_text(a.slots)
                view.admitting(a, amounts, placement)
                a.waited_for = a.reasons or None  # its history says what it waited for
                a.state, a.admitted_at, a.reasons = "allocated", now, []
                a.node_id = ledger._node_id(rg, placement.node)
                a.gpus = ledger.placement_gpus(rg, placement)
                view.admitted(a, amounts)
                sessionaudit.admitted(s, a, now)
                result.admitted.append(a.id)
                # what it now holds may block the requests after it
                touched.started(rejudge.own_keys(a.user_id, a.project_id, a.domain_id, rg.id))
                continue
            reasons = [r.as_dict() for r in decision.reasons]
            if reasons != a.reasons:
                a.reasons = reasons
            if decision.verdict == "refuse":  # e.g. its project was deactivated
                cancel(a, decision.text)
                continue
            last = waited[a.id] = rejudge.kept(reasons, rejudge.own_keys(
                a.user_id, a.project_id, a.domain_id, rg.id))
            waits_for_capacity = last.waits_for_capacity
        passes = r.passes
        if passes <= rg.hol_passes:  # past it, counting changes nothing
            passes = queue.get(at).passes = passes + 1
        if waits_for_capacity and passes <= rg.hol_passes:
            blocked = True  # head of line: hold the others back for now
    s.flush()
    if carried is not None:  # its passes and reasons changed
        carried.forget_line(rg.id)
    if memo is not None:
        if not known:
            memo.at = time.monotonic()
        # this pass's own admissions are in the change log (``since``) after
        # ``generation``; without one, they make the next pass judge everyone
        memo.generation = generation if since is not None or not result.admitted else None
        memo.waited = waited
    result.pending = sum(1 for r in queue.order if queue.state(r.id) == "pending")
    return result


#: what a pass reads of every request in its queue: what orders it, what
#: cancels it, and whether it still counts passes
LINE_COLUMNS = (Allocation.id, Allocation.created_at, Allocation.queue_at, Allocation.priority,
                Allocation.user_id, Allocation.passes)
#: a group's queue, narrowly (made once: see ``_TOUCHED``)
_LINE = select(*LINE_COLUMNS).where(Allocation.resource_group_id == bindparam("group"),
                                    Allocation.state == "pending")
#: whole requests loaded per query, in queue order
LOAD_CHUNK = 64
#: a chunk of them (made once: see ``_TOUCHED``)
_CHUNK = select(Allocation).options(QUEUE_ONLY).where(
    Allocation.id.in_(bindparam("ids", expanding=True)))


class LazyQueue:
    """A group's queue in order (``order``: narrow rows of ``LINE_COLUMNS``),
    whose whole requests are loaded a chunk at a time when the pass first
    needs one: a pass held by the head of the line, or that finds its
    requests' judgements still true (``rejudge``), reads a few of them, not
    thousands."""

    def __init__(self, s: Session, order: list):
        self.s, self.order = s, order
        #: what was loaded, in the order it was (``PassView`` reads their keypairs)
        self.objects: list[Allocation] = []
        self._by_id: dict[str, Allocation] = {}

    def get(self, at: int) -> Allocation:
        """The whole request at place ``at`` of ``order``."""
        wanted = self.order[at].id
        if wanted not in self._by_id:
            ids = [r.id for r in self.order[at:at + LOAD_CHUNK] if r.id not in self._by_id]
            rows = list(self.s.scalars(_CHUNK, {"ids": ids}))
            people.preload(self.s, {a.user_id for a in rows}, {a.project_id for a in rows})
            self.objects.extend(rows)
            self._by_id.update((a.id, a) for a in rows)
        return self._by_id[wanted]

    def state(self, alloc_id: str) -> str:
        """Its state now: "pending" unless the pass loaded and changed it."""
        a = self._by_id.get(alloc_id)
        return a.state if a is not None else "pending"


def judge(s: Session, view: PassView, rg: ResourceGroup, a: Allocation, now: dt.datetime,
          strategy):
    """(decision, placement or None) for a queued request."""
    user = people.user(s, a.user_id)
    project = people.project(s, a.project_id)
    refusal = inactive(user, project)
    if refusal is not None:
        return refusal, None
    amounts = slotlib.from_text(a.slots)
    policy = view.policy(a, user)
    req = admission.Request(
        user=user.name, keypair=None, project=project.name, domain=user.domain.name,
        resource_group=rg.name, slots=amounts, session_type=a.session_type, queued=True,
        gpu_models=frozenset(a.gpu_models), image=a.image)
    snap = view.snapshot(a, amounts, user, project, policy, now)
    return ledger.judge(req, snap, view.cluster, strategy, rg)


def inactive(user: people.UserRow, project: people.ProjectRow) -> admission.Decision | None:
    """A refusal when the user, their domain or the project was deactivated."""
    for level, thing in (("domain", user.domain), ("project", project), ("user", user)):
        if not thing.active:
            return admission.Decision("refuse", (admission.Reason(
                "inactive", admission.REFUSE, level, thing.name,
                message=f"{level} {thing.name} is not active"),))
    return None
