"""An admin's move of a pending request within its resource group's queue.
Pure: decisions over values, no IO.

The queue's order is ``ordering.order``'s over each request's order time
(``queue_at``, else ``created_at``). A move never touches ``created_at``
(the pending timeout and abandonment count from it): it gives order times
to the requests whose place changes, so that ``ordering.order`` yields the
wanted order.

The requests a caller may move among (``movable``): a superadmin every
request of the queue, a domain admin their domain's. A move permutes the
movable requests among the places they hold: the requests of others keep
their places, so a domain admin never jumps their requests over another
domain's. In a ``priority`` queue a request moves among the requests of its
own priority (change its priority to move it further); a ``drf`` queue is
ordered by the users' shares and cannot be ordered by hand.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from . import ordering
from ..core.errors import Conflict, Invalid

TICK = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class Queued:
    """One pending request as a move sees it."""

    id: str
    key: dt.datetime  # its order time: queue_at, else created_at (aware)
    priority: int
    user_id: int
    movable: bool  # may the caller move it


@dataclass(frozen=True)
class Target:
    """Where to: exactly one of ``before``/``after`` (a request id) or
    ``position`` (0 = the front, among the requests the caller may move;
    past the end = the back)."""

    before: str | None = None
    after: str | None = None
    position: int | None = None


def current_order(policy: str, queue: list[Queued]) -> list[Queued]:
    """``queue`` in the order the scheduler judges it."""
    by_id = {q.id: q for q in queue}
    waiting = [ordering.Waiting(q.id, q.key, q.priority, q.user_id) for q in queue]
    return [by_id[w.id] for w in ordering.order(policy, waiting)]


def move(policy: str, queue: list[Queued], moving: str, target: Target) -> dict[str, dt.datetime]:
    """The new order times (request id -> time) that put ``moving`` at
    ``target``; only the requests whose time changes are named. Refusals:
    Conflict for a drf queue, Invalid for a target outside the movable band."""
    if policy == "drf":
        raise Conflict("this queue is ordered by dominant resource fairness (drf) and "
                       "cannot be ordered by hand: set its queue_order to fifo or priority")
    order = current_order(policy, queue)
    by_id = {q.id: q for q in order}
    me = by_id[moving]
    band = [q for q in order if q.movable and (policy != "priority" or q.priority == me.priority)]
    rest = [q for q in band if q.id != moving]
    index = _index(policy, rest, by_id, me, target)
    wanted_band = rest[:index] + [me] + rest[index:]
    # the band's requests take each other's places; the others keep theirs
    places = iter(wanted_band)
    wanted = [next(places) if q in band else q for q in order]
    keys = {q.id: q.key for q in order}
    for q, old in zip(wanted_band, band):
        keys[q.id] = old.key
    if _order_of(policy, order, keys) != [q.id for q in wanted]:
        keys = _spread(policy, order, wanted)
    if _order_of(policy, order, keys) != [q.id for q in wanted]:  # pragma: no cover
        raise Conflict("the queue could not be reordered; try again")
    return {i: k for i, k in keys.items() if k != by_id[i].key}


def _index(policy: str, rest: list[Queued], by_id: dict[str, Queued], me: Queued,
           target: Target) -> int:
    given = [x for x in (target.before, target.after, target.position) if x is not None]
    if len(given) != 1:
        raise Invalid("give exactly one of before, after or position")
    if target.position is not None:
        return min(target.position, len(rest))
    other = target.before if target.before is not None else target.after
    if other == me.id:
        raise Invalid("a request cannot move before or after itself")
    ids = [q.id for q in rest]
    if other not in ids:
        if other in by_id and by_id[other].movable and policy == "priority":
            raise Invalid(f"request {other} has priority {by_id[other].priority}, this one "
                          f"{me.priority}: in a priority queue a request moves among those of "
                          "its priority; change its priority first")
        raise Invalid(f"request {other} is not in this queue among the ones you may move")
    return ids.index(other) + (1 if target.after is not None else 0)


def _order_of(policy: str, queue: list[Queued], keys: dict[str, dt.datetime]) -> list[str]:
    return [q.id for q in current_order(policy, [
        Queued(q.id, keys[q.id], q.priority, q.user_id, q.movable) for q in queue])]


def _spread(policy: str, order: list[Queued], wanted: list[Queued]) -> dict[str, dt.datetime]:
    """Strictly increasing order times in the ``wanted`` order, within each
    priority (fifo: one band), each as close to the old times as it can be:
    where equal times leave ``ordering`` to break ties by id."""
    keys = {q.id: q.key for q in order}
    bands: dict[int, list[Queued]] = {}
    for q in wanted:
        bands.setdefault(q.priority if policy == "priority" else 0, []).append(q)
    for band in bands.values():
        olds = sorted(q.key for q in band)
        last = None
        for q, old in zip(band, olds):
            key = old if last is None or old > last else last + TICK
            keys[q.id] = last = key
    return keys


def place_of(order: list[Queued], request: str) -> int:
    """0-based position of ``request`` in ``order``."""
    return next(i for i, q in enumerate(order) if q.id == request)
