"""The order of a resource group's pending queue: FIFO, priority, or
dominant resource fairness (DRF). Pure: decisions over plain values, no IO."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from ..core import slots as slotlib

ZERO = Decimal(0)
POLICIES = ("fifo", "priority", "drf")


@dataclass(frozen=True)
class Waiting:
    """One pending request, as far as its place in the queue goes."""

    id: str
    created_at: dt.datetime  # aware
    priority: int
    user_id: int


def held_by_user(running: Iterable[tuple[int, Mapping[str, Decimal]]]) -> dict[int, dict[str, Decimal]]:
    """What each user holds in the group: (user id, slots) pairs summed per user."""
    held: dict[int, dict[str, Decimal]] = {}
    for user_id, slots in running:
        held[user_id] = slotlib.add(held.get(user_id, {}), slots)
    return held


def dominant_share(held: Mapping[str, Decimal], capacity: Mapping[str, Decimal]) -> Decimal:
    """The largest fraction of the group's capacity of any one slot held (exact)."""
    return max((v / capacity[k] for k, v in held.items() if capacity.get(k)), default=ZERO)


def order(policy: str, waiting: Iterable[Waiting], capacity: Mapping[str, Decimal] | None = None,
          held: Mapping[int, Mapping[str, Decimal]] | None = None) -> list[Waiting]:
    """``waiting`` in the order the queue judges it.

    - ``fifo``: oldest first;
    - ``priority``: highest priority first, oldest first among equals;
    - ``drf``: the user holding the smallest dominant share of ``capacity``
      (``held``: per user id) first, oldest first among equals.
    Ties end on the id, so the order is total and repeatable.
    """
    if policy == "priority":
        return sorted(waiting, key=lambda w: (-w.priority, w.created_at, w.id))
    if policy == "drf":
        capacity, held = capacity or {}, held or {}
        return sorted(waiting, key=lambda w: (dominant_share(held.get(w.user_id, {}), capacity),
                                              w.created_at, w.id))
    return sorted(waiting, key=lambda w: (w.created_at, w.id))
