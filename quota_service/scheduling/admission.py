"""Admission: may this request start now, wait, or never? Pure, no IO.

A pipeline of small validators over a frozen ``Snapshot``; each returns
``Reason`` records. A reason is *blocking* (the request can never be met as
it stands: refuse) or *waiting* (it fits once others release: pending).
Every reason carries its numbers and a sentence for the user, e.g.
``project ml-team gpu.shares: used 3.5 + requested 1 > limit 4 (over by 0.5)``.

Placement (which node, which GPUs) is decided afterwards by
``scheduling.placement`` for admitted requests only.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Mapping

from ..core import slots as slotlib
from ..core.names import format_amount, format_slot

ZERO = Decimal(0)

REFUSE = "refuse"
WAIT = "wait"


@dataclass(frozen=True)
class Reason:
    """Why a request is refused or pending; ``code`` is a fixed vocabulary."""

    code: str  # slot-limit | sessions | pending-sessions | pending-slots | per-session-gpu | access | session-type | capacity | queue | inactive | image
    kind: str  # refuse | wait
    level: str  # keypair | user | project | domain | resource-group | image
    name: str
    slot: str | None = None
    used: Decimal | None = None
    requested: Decimal | None = None
    limit: Decimal | None = None
    message: str = ""

    @property
    def text(self) -> str:
        if self.message:
            return self.message
        def f(amount):
            return format_slot(self.slot, amount)
        over = self.used + self.requested - self.limit
        return (
            f"{self.level} {self.name} {self.slot}: used {f(self.used)} + requested "
            f"{f(self.requested)} > limit {f(self.limit)} (over by {f(over)})"
        )

    def as_dict(self) -> dict:
        out = {"code": self.code, "kind": self.kind, "level": self.level, "name": self.name,
               "text": self.text}
        for key in ("slot", "used", "requested", "limit"):
            value = getattr(self, key)
            if value is not None:
                out[key] = format_amount(value) if isinstance(value, Decimal) else value
        return out


@dataclass(frozen=True)
class Limits:
    """The limits of one level (a keypair's policy, a project, a domain...)."""

    level: str
    name: str
    slots: Mapping[str, Decimal] = field(default_factory=dict)
    #: slots the policy does not name: unlimited (False) or zero (True)
    unspecified_limited: bool = False
    max_sessions: int | None = None
    max_pending_sessions: int | None = None
    max_pending_slots: Mapping[str, Decimal] | None = None
    max_gpus_per_session: Decimal | None = None

    def limit_of(self, slot: str) -> Decimal | None:
        if slot in self.slots:
            return self.slots[slot]
        return ZERO if self.unspecified_limited else None


@dataclass(frozen=True)
class Usage:
    """What a level holds now: running (allocated) and pending."""

    slots: Mapping[str, Decimal] = field(default_factory=dict)
    sessions: int = 0
    pending_slots: Mapping[str, Decimal] = field(default_factory=dict)
    pending_sessions: int = 0


@dataclass(frozen=True)
class Request:
    user: str
    keypair: str | None
    project: str
    domain: str
    resource_group: str
    slots: Mapping[str, Decimal]
    session_type: str = "interactive"
    #: True when this request is already in the queue (re-examined)
    queued: bool = False
    #: allowed GPU models; empty: any
    gpu_models: frozenset[str] = frozenset()
    #: the registry image the session runs; None: the backend has no images
    image: str | None = None


@dataclass(frozen=True)
class Group:
    """The resource group as admission sees it."""

    name: str
    accessible: bool
    session_types: frozenset[str]
    #: the largest capacity of any node (a drained node counts: it comes back)
    largest_node: Mapping[str, Decimal]
    #: total capacity of the group's schedulable nodes
    capacity: Mapping[str, Decimal]
    #: the capacity of each node (when known): a request must fit within a
    #: single node, not just each of its slots within some node
    nodes: tuple[Mapping[str, Decimal], ...] = ()
    #: the GPU models of each node, in the order of ``nodes``
    node_models: tuple[frozenset[str], ...] = ()


@dataclass(frozen=True)
class ImageFacts:
    """A registry image as admission sees it."""

    name: str
    #: the smallest request a session of it may make
    min_slots: Mapping[str, Decimal]
    #: may the requesting user's domain use it (``images.usable_by``)
    usable: bool
    #: the session types it runs (``images.session_types``)
    session_types: frozenset[str] = frozenset({"interactive", "batch"})


@dataclass(frozen=True)
class Snapshot:
    """Everything admission reads, taken in one transaction at ``now``."""

    now: dt.datetime
    levels: tuple[tuple[Limits, Usage], ...]
    group: Group
    #: the registry entry of the requested image; None when there is none
    image: ImageFacts | None = None


@dataclass(frozen=True)
class Decision:
    verdict: str  # admit | pending | refuse
    reasons: tuple[Reason, ...] = ()

    @property
    def text(self) -> str:
        return "; ".join(r.text for r in self.reasons)


# --- validators ------------------------------------------------------------

def no_access(group: str) -> Reason:
    """The refusal of a resource group the caller may not use -- and of one
    that does not exist, word for word: its name tells nothing."""
    return Reason("access", REFUSE, "resource-group", group,
                  message=f"resource group {group} is not available to you")


def check_group(req: Request, snap: Snapshot) -> list[Reason]:
    g = snap.group
    if not g.accessible:
        return [no_access(g.name)]
    if req.session_type not in g.session_types:
        return [Reason("session-type", REFUSE, "resource-group", g.name,
                       message=f"resource group {g.name} does not run {req.session_type} sessions "
                       f"(it runs: {', '.join(sorted(g.session_types))})")]
    return []


def check_image(req: Request, snap: Snapshot) -> list[Reason]:
    """The image must be in the registry, usable by the user's domain (one
    it may not use is refused exactly like an unknown one), run the session
    type asked for (an inference image runs no Jupyter session), and the
    request at least the image's minimum."""
    if req.image is None:
        return []
    img = snap.image
    if img is None or img.name != req.image or not img.usable:
        return [Reason("image", REFUSE, "image", req.image,
                       message=f"unknown image {req.image!r}")]
    if req.session_type not in img.session_types:
        return [Reason("session-type", REFUSE, "image", img.name,
                       message=f"image {img.name} does not run {req.session_type} sessions "
                       f"(it runs: {', '.join(sorted(img.session_types))})")]
    out = []
    for slot, minimum in sorted(img.min_slots.items()):
        offered = _offered(req.slots, slot)
        if offered < minimum:
            out.append(Reason("image", REFUSE, "image", img.name, slot,
                              requested=offered, limit=minimum,
                              message=f"image {img.name} needs at least {slot} "
                              f"{format_slot(slot, minimum)} (requested {format_slot(slot, offered)})"))
    return out


def _offered(requested: Mapping[str, Decimal], slot: str) -> Decimal:
    """What a request offers towards a minimum of ``slot``: a GPU minimum
    (whole devices or a share) is met by whole devices and shares alike."""
    reg = slotlib.registry()
    device = reg[slot].device if slot in reg else None
    if device is not None or any(t.device == slot for t in reg.values()):
        device = device or slot
        kinds = [device] + [n for n, t in reg.items() if t.device == device]
        return sum((requested.get(k, ZERO) for k in kinds), ZERO)
    return requested.get(slot, ZERO)


def check_capacity(req: Request, snap: Snapshot) -> list[Reason]:
    """Refuse what no node of the group could ever hold; wait for the rest."""
    g = snap.group
    out = []
    for slot, amount in sorted(req.slots.items()):
        biggest = _room(g.largest_node, slot)
        if amount > biggest:
            out.append(Reason("capacity", REFUSE, "resource-group", g.name, slot,
                              message=f"resource group {g.name} {slot}: requested "
                              f"{format_slot(slot, amount)} > largest node {format_slot(slot, biggest)}"))
    nodes = g.nodes
    if req.gpu_models and slotlib.gpu_devices(req.slots) and g.node_models:
        nodes = tuple(n for n, models in zip(g.nodes, g.node_models) if models & req.gpu_models)
        if not nodes:
            return [Reason("capacity", REFUSE, "resource-group", g.name, "gpu",
                           message=f"resource group {g.name}: no node has GPU model "
                           + " or ".join(sorted(req.gpu_models)))]
    if not out and nodes and not any(
        all(amount <= _room(node, slot) for slot, amount in req.slots.items())
        for node in nodes
    ):
        out.append(Reason("capacity", REFUSE, "resource-group", g.name,
                          message=f"resource group {g.name}: no node has "
                          + _amounts(req.slots) + " together"))
    return out


ONE = Decimal(1)


def _room(node: Mapping[str, Decimal], slot: str) -> Decimal:
    """What an empty node offers of ``slot``; a share needs one GPU."""
    if slot == "gpu.shares":
        return ONE if node.get("gpu", ZERO) >= ONE else ZERO
    return node.get(slot, ZERO)


def check_per_session(req: Request, snap: Snapshot) -> list[Reason]:
    out = []
    asked = slotlib.gpu_devices(req.slots)
    for limits, _usage in snap.levels:
        cap = limits.max_gpus_per_session
        if cap is not None and asked > cap:
            out.append(Reason("per-session-gpu", REFUSE, limits.level, limits.name, "gpu",
                              message=f"{limits.level} {limits.name}: at most {format_amount(cap)} "
                              f"GPUs per session, requested {format_amount(asked)}"))
    return out


def _limited_amounts(requested, used):
    """(slot, requested, used) to compare with the limits. A device limit
    (``gpu``) counts devices whole or shared, so it caps gpu + gpu.shares
    together; a share limit (``gpu.shares``) caps the shares alone."""
    reg = slotlib.registry()
    shares_of = {t.device: name for name, t in reg.items() if t.device}
    out = []
    for slot, amount in sorted(requested.items()):
        held = used.get(slot, ZERO)
        if slot in shares_of:
            held += used.get(shares_of[slot], ZERO)
        out.append((slot, amount, held))
        device = reg[slot].device if slot in reg else None
        if device is not None:
            out.append((device, amount, used.get(device, ZERO) + used.get(slot, ZERO)))
    return out


def check_limits(req: Request, snap: Snapshot) -> list[Reason]:
    """Slot totals and session counts at every level."""
    out = []
    for limits, usage in snap.levels:
        for slot, amount, used in _limited_amounts(req.slots, usage.slots):
            limit = limits.limit_of(slot)
            if limit is None:
                continue
            if amount > limit:  # can never fit, whatever is released
                out.append(Reason("slot-limit", REFUSE, limits.level, limits.name, slot,
                                  used, amount, limit))
            elif used + amount > limit:
                out.append(Reason("slot-limit", WAIT, limits.level, limits.name, slot,
                                  used, amount, limit))
        if limits.max_sessions is not None:
            if limits.max_sessions == 0:
                out.append(Reason("sessions", REFUSE, limits.level, limits.name,
                                  message=f"{limits.level} {limits.name}: no sessions allowed"))
            elif usage.sessions + 1 > limits.max_sessions:
                out.append(Reason("sessions", WAIT, limits.level, limits.name,
                                  message=f"{limits.level} {limits.name}: {usage.sessions} of "
                                  f"{limits.max_sessions} concurrent sessions running"))
    return out


def remaining(levels, slots) -> dict[str, Decimal | None]:
    """What one more session could still take of each of ``slots`` under
    every level's limits, counted as ``check_limits`` counts (a device limit
    caps whole devices and shares together); None: no level limits it."""
    out: dict[str, Decimal | None] = {}
    for slot in slots:
        left = None
        for limits, usage in levels:
            for name, _amount, used in _limited_amounts({slot: ZERO}, usage.slots):
                limit = limits.limit_of(name)
                if limit is not None:
                    room = max(limit - used, ZERO)
                    left = room if left is None else min(left, room)
        out[slot] = left
    return out


def sessions_left(levels) -> int | None:
    """How many more sessions may run under every level (None: no limit)."""
    left = None
    for limits, usage in levels:
        if limits.max_sessions is not None:
            room = max(limits.max_sessions - usage.sessions, 0)
            left = room if left is None else min(left, room)
    return left


def check_pending(req: Request, snap: Snapshot) -> list[Reason]:
    """A request that would wait must fit the pending allowances."""
    if req.queued:
        return []
    out = []
    for limits, usage in snap.levels:
        if limits.max_pending_sessions is not None and (
            usage.pending_sessions + 1 > limits.max_pending_sessions
        ):
            out.append(Reason("pending-sessions", REFUSE, limits.level, limits.name,
                              message=f"{limits.level} {limits.name}: already "
                              f"{usage.pending_sessions} of {limits.max_pending_sessions} "
                              "pending sessions"))
        for slot, cap in sorted((limits.max_pending_slots or {}).items()):
            used = usage.pending_slots.get(slot, ZERO)
            amount = req.slots.get(slot, ZERO)
            if amount and used + amount > cap:
                out.append(Reason("pending-slots", REFUSE, limits.level, limits.name, slot,
                                  used, amount, cap,
                                  message=f"{limits.level} {limits.name} pending {slot}: "
                                  f"{format_slot(slot, used)} + requested {format_slot(slot, amount)} > "
                                  f"limit {format_slot(slot, cap)}"))
    return out


def decide(req: Request, snap: Snapshot) -> Decision:
    """The admission verdict. ``admit`` still needs a node (placement)."""
    for stage in (check_group, check_image, check_capacity, check_per_session):
        reasons = stage(req, snap)
        if reasons:
            return Decision("refuse", tuple(reasons))
    reasons = check_limits(req, snap)
    refusals = [r for r in reasons if r.kind == REFUSE]
    if refusals:
        return Decision("refuse", tuple(refusals))
    if reasons:
        blocking = check_pending(req, snap)
        if blocking:
            return Decision("refuse", tuple(blocking))
        return Decision("pending", tuple(reasons))
    return Decision("admit")


def _waiting(req: Request, snap: Snapshot, code: str, message: str) -> Decision:
    """Pending for a reason of the group's (a new request that would wait,
    so the pending allowances apply)."""
    blocking = check_pending(req, snap)
    if blocking:
        return Decision("refuse", tuple(blocking))
    return Decision("pending", (Reason(code, WAIT, "resource-group", snap.group.name,
                                       message=message),))


def waiting_for_capacity(req: Request, snap: Snapshot,
                         free: tuple[Mapping[str, Decimal], ...] | None = None,
                         unenforced: tuple[str, ...] = ()) -> Decision:
    """Admitted by the limits, but no node has room now: pending. ``free``:
    what each node that could hold the request (schedulable, an allowed GPU
    model) has free now (``gpu``: whole free GPUs, ``gpu.shares``: the most
    free on one GPU); the reason then says which slot is short, by how much.
    ``unenforced``: the nodes that take no GPU share now because their
    shares cannot be enforced (``node: why``), said first."""
    why = "" if not free else shortfall(req.slots, free)
    if unenforced:
        tail = (f": GPU shares cannot be enforced now on {'; '.join(unenforced)}"
                + (f"; elsewhere {why}" if why else "")
                + ", waiting for a node that enforces them")
    elif free is not None and not free:
        tail = ": every node that could hold it is drained, waiting for one to take sessions again"
    elif why:
        tail = f": {why}, waiting for running sessions to end"
    else:
        tail = " (waiting for running sessions to end)"
    return _waiting(req, snap, "capacity",
                    f"resource group {snap.group.name}: no node has room now for "
                    f"{_amounts(req.slots)}{tail}")


def _amounts(slots: Mapping[str, Decimal]) -> str:
    """``cpu 1, mem 2 GiB``: a request's slots for people."""
    return ", ".join(f"{k} {format_slot(k, v)}" for k, v in sorted(slots.items()))


#: the slots placement judges per node; a share sits on ONE GPU
PLACED = ("cpu", "mem", "gpu", "gpu.shares")


def shortfall(slots: Mapping[str, Decimal], free: tuple[Mapping[str, Decimal], ...]) -> str:
    """What is short for ``slots`` on the nodes' ``free`` amounts: the slots
    short on every node, each with the most one node (one GPU, for shares)
    has free; when each fits somewhere but no node has them all, what the
    closest node lacks. Empty when nothing is short."""
    asked = {k: v for k, v in sorted(slots.items()) if k in PLACED and v > ZERO}
    most = {k: max(n.get(k, ZERO) for n in free) for k in asked}
    short = [k for k in asked if asked[k] > most[k]]
    if short:
        def room(k):  # what the best node (GPU) has, or that none has any
            where = "GPU" if k == "gpu.shares" else "node"
            if most[k] <= ZERO:
                return f"no {where} has any free"
            return f"at most {format_slot(k, most[k])} free on a {where}"

        return " and ".join(
            f"{k} short by {format_slot(k, asked[k] - most[k])} ({room(k)})" for k in short)

    def gaps(node):
        return {k: v - node.get(k, ZERO) for k, v in asked.items() if v > node.get(k, ZERO)}

    closest = gaps(min(free, key=lambda n: (len(gaps(n)),
                                            sum(g / asked[k] for k, g in gaps(n).items()))))
    return " and ".join(
        f"{k} short by {format_slot(k, gap)} on the closest node ("
        + (f"{format_slot(k, asked[k] - gap)} free there)" if gap < asked[k] else "none free there)")
        for k, gap in closest.items())


def waiting_in_line(req: Request, snap: Snapshot, ahead: int) -> Decision:
    """Admitted and placeable, but ``ahead`` earlier requests hold the head of
    the line: pending behind them."""
    return _waiting(req, snap, "queue",
                    f"resource group {snap.group.name}: queued behind {ahead} earlier "
                    "request(s) waiting for capacity")
