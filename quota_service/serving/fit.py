"""Does an endpoint's replica fit: what its creator may still take, and
what the resource group's nodes hold?

Pure arithmetic over plain data, no IO; each finding names the field to
change, with exact decimal text:

- ``problems``: ``replicas`` replicas of ``slots`` each against the
  admission's ``remaining`` (what one more session could take of each slot,
  None: unlimited) and ``sessions_left``; the replicas already running or
  queued (``held``) are in those figures already and count once;
- ``capacity``: one replica against the group's nodes (``NodeRoom``: a
  node's capacity, ``gpu`` its device count) as admission judges a request
  (``admission.check_capacity``): one that no node could ever hold is a
  problem; one that only nodes taking no sessions now could hold, and
  replicas beyond what the group holds at once, are warnings (replicas may
  wait in the queue).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Mapping, Sequence

from ..core.names import format_slot

ZERO = Decimal(0)
ONE = Decimal(1)
#: the slot of GPU shares: a share sits on ONE device (``core.slots``)
SHARES = "gpu.shares"


def problems(slots: Mapping[str, Decimal], replicas: int,
             remaining: Mapping[str, Decimal | None], sessions_left: int | None,
             held: int = 0, whose: str = "your limits") -> list[dict]:
    """[{field, message}] for each limit ``replicas`` x ``slots`` passes.

    ``held``: how many of the ``replicas`` already run or wait as sessions
    (the endpoint's active allocations): ``remaining`` and ``sessions_left``
    count those already, so only the rest are new and each session is
    counted once. ``whose``: the limits' owner as the message names them
    ("your limits", or the creator's when someone else scales)."""
    new = max(0, replicas - held)
    out = []
    if sessions_left is not None and new > sessions_left:
        sessions = (f"{replicas} replicas are {replicas} sessions" if not held else
                    f"{replicas} replicas with {held} running or queued already are "
                    f"{new} more session{'s' if new != 1 else ''}")
        out.append({"field": "replicas", "message":
                    f"{sessions}: {whose} leave room for {sessions_left} more"})
    for name, amount in sorted(slots.items()):
        left = remaining.get(name)
        need = amount * new
        if left is not None and need > left:
            times = f"{replicas}" if not held else f"{new} more (of {replicas})"
            out.append({"field": f"slots.{name}", "message":
                        f"{times} x {format_slot(name, amount)} = {format_slot(name, need)}"
                        f": {whose} leave {format_slot(name, left)}"})
    return out


def whose_limits(creator: str, caller: str | None) -> str:
    """The limits a check of an endpoint's replicas reads, named for the
    one who reads the message: the caller's own, or the creator's."""
    if caller is None or caller == creator:
        return "your limits"
    return f"the limits of {creator} (the endpoint's creator)"


# --- the group's nodes -----------------------------------------------------------

@dataclass(frozen=True)
class NodeRoom:
    """A node of the group as the capacity check reads it."""

    name: str
    #: its slots; ``gpu``: how many devices it has
    capacity: Mapping[str, Decimal]
    #: does it take new sessions now (a drained node does not, but comes back)
    schedulable: bool = True


def room(capacity: Mapping[str, Decimal], slot: str) -> Decimal:
    """What an empty node offers one session of ``slot``: a share needs one
    GPU (so at most 1), any other slot the node's amount."""
    if slot == SHARES:
        return ONE if capacity.get("gpu", ZERO) >= ONE else ZERO
    return capacity.get(slot, ZERO)


def holds(slots: Mapping[str, Decimal], capacity: Mapping[str, Decimal]) -> bool:
    """Could an empty node of ``capacity`` hold one replica of ``slots``?"""
    return all(amount <= room(capacity, slot) for slot, amount in slots.items())


def at_once(slots: Mapping[str, Decimal], capacity: Mapping[str, Decimal]) -> int:
    """How many replicas of ``slots`` an empty node holds together: per slot
    its amount over the replica's, shares per device (each GPU holds
    1 // share of them)."""
    counts = []
    for slot, amount in slots.items():
        if amount <= ZERO:
            continue
        if slot == SHARES:
            counts.append(int(ONE // amount) * int(capacity.get("gpu", ZERO)))
        else:
            counts.append(int(capacity.get(slot, ZERO) // amount))
    return min(counts) if counts else 0


def total(nodes: Sequence[NodeRoom], slot: str) -> Decimal:
    """What the nodes offer of ``slot`` in all (shares: one per GPU)."""
    key = "gpu" if slot == SHARES else slot
    return sum((n.capacity.get(key, ZERO) for n in nodes), ZERO)


def _amounts(slots: Mapping[str, Decimal]) -> str:
    return ", ".join(f"{k} {format_slot(k, v)}" for k, v in sorted(slots.items()))


def _too_big(group: str, slot: str, amount: Decimal, biggest: Decimal) -> str:
    if slot == SHARES:
        return f"a GPU share needs a GPU: no node of resource group {group} has one"
    return (f"one replica asks for {slot} {format_slot(slot, amount)}; the largest node of "
            f"resource group {group} has {format_slot(slot, biggest)}")


def capacity(group: str, slots: Mapping[str, Decimal], replicas: int,
             nodes: Sequence[NodeRoom]) -> tuple[list[dict], list[dict]]:
    """``(problems, warnings)``, each ``[{field, message}]``, of ``replicas``
    replicas of ``slots`` on the nodes of ``group``.

    Problems (no replica could ever run): the group has no node; a slot
    beyond every node's (``slots.<slot>``, with the largest node's); no node
    with every slot together (``slots``). Warnings (replicas wait): only
    nodes that take no sessions now could hold one (``resource_group``); a
    slot's total beyond what the nodes taking sessions have in all
    (``slots.<slot>``); else more replicas than those nodes hold at once
    (``replicas``)."""
    if not nodes:
        return [{"field": "resource_group", "message":
                 f"resource group {group} has no nodes: no replica can run there"}], []
    found = []
    for slot, amount in sorted(slots.items()):
        biggest = max(room(n.capacity, slot) for n in nodes)
        if amount > biggest:
            found.append({"field": f"slots.{slot}", "message": _too_big(group, slot, amount,
                                                                        biggest)})
    if found:
        return found, []
    holders = [n for n in nodes if holds(slots, n.capacity)]
    if not holders:
        return [{"field": "slots", "message":
                 f"no node of resource group {group} has {_amounts(slots)} together"}], []
    if not any(n.schedulable for n in holders):
        names = ", ".join(sorted(n.name for n in holders))
        return [], [{"field": "resource_group", "message":
                     f"one replica fits only nodes of resource group {group} that take no "
                     f"new sessions now ({names}): replicas wait in the queue until one does"}]
    open_ = [n for n in nodes if n.schedulable]
    warnings = []
    for slot, amount in sorted(slots.items()):
        need, has = amount * replicas, total(open_, slot)
        if need > has:
            warnings.append({"field": f"slots.{slot}", "message":
                             f"{replicas} x {format_slot(slot, amount)} = "
                             f"{format_slot(slot, need)}: resource group {group} has "
                             f"{format_slot(slot, has)} in all; the replicas that do not fit "
                             "wait in the queue"})
    fitting = sum(at_once(slots, n.capacity) for n in open_)
    if not warnings and replicas > fitting:
        warnings.append({"field": "replicas", "message":
                         f"at most {fitting} replicas of this size fit the nodes of resource "
                         f"group {group} at once (with nothing else running); the other "
                         f"{replicas - fitting} wait in the queue"})
    return [], warnings
