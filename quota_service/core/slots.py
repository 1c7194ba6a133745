"""Resource slots: the registry of slot types and exact slot-map arithmetic.

A request and a capacity are maps of slot name to a Decimal amount:
``cpu`` (cores), ``mem`` (bytes), ``gpu`` (whole devices) and ``gpu.shares``
(a fraction of ONE device, quantum 0.01). A device plugin registers further
slot types with ``register``. A request asks for whole devices or shares of
a kind, never both.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Context, Decimal, Inexact, InvalidOperation, Overflow
from typing import Mapping

from . import sizes
from .names import format_amount, parse_amount

SlotMap = Mapping[str, Decimal]


@dataclass(frozen=True)
class SlotType:
    name: str
    unit: str  # count | bytes | share
    quantum: Decimal
    maximum: Decimal
    description: str
    #: for share slots: the whole-device slot they are a fraction of
    device: str | None = None


_REGISTRY: dict[str, SlotType] = {}


def register(slot: SlotType) -> SlotType:
    """Add a slot type (e.g. from an accelerator plugin); names are unique."""
    existing = _REGISTRY.get(slot.name)
    if existing is not None and existing != slot:
        raise ValueError(f"slot type {slot.name!r} is already registered differently")
    _REGISTRY[slot.name] = slot
    return slot


def registry() -> dict[str, SlotType]:
    return dict(_REGISTRY)


register(SlotType("cpu", "count", Decimal("0.001"), Decimal(100_000), "CPU cores"))
register(SlotType("mem", "bytes", Decimal(1), Decimal(2) ** 60, "memory in bytes ('16G', '512 MiB' allowed: binary units)"))
register(SlotType("gpu", "count", Decimal(1), Decimal(1024), "whole GPU devices"))
register(SlotType("gpu.shares", "share", Decimal("0.01"), Decimal(1),
                  "a fraction of one GPU device", device="gpu"))

# exact arithmetic for sizes and quantum checks: amounts have at most 28
# digits, so neither a size suffix nor a quotient by a quantum can be rounded
# (the default context's 28 digits would round, or raise DivisionImpossible)
_EXACT = Context(prec=100, traps=[InvalidOperation, Overflow, Inexact])

def _amount(slot: SlotType, value) -> Decimal:
    if slot.unit == "bytes" and isinstance(value, str) and sizes.has_unit(value):
        # "16G", "512 MiB", "2048 B": exactly, in binary units (core/sizes.py)
        return parse_amount(slot.name, sizes.parse_bytes(value, f"slot {slot.name!r}"))
    return parse_amount(slot.name, value)


def parse_request(raw: Mapping, *, limits: bool = False) -> dict[str, Decimal]:
    """A validated request slot map; raises ValueError with the reason.

    Refused: unknown slot names, negative/NaN/huge amounts, amounts that are
    not a multiple of the slot's quantum, shares above one device, and
    asking for whole devices and shares of the same kind together.
    With ``limits``: a limit map, where zero means "none allowed" and the
    per-request maxima and the whole-or-share rule do not apply.
    """
    if not isinstance(raw, Mapping):
        raise ValueError("resource slots must be an object of slot name to amount")
    out: dict[str, Decimal] = {}
    for name, value in raw.items():
        slot = _REGISTRY.get(name)
        if slot is None:
            raise ValueError(
                f"unknown slot {name!r}; known slots: {', '.join(sorted(_REGISTRY))}"
            )
        amount = _amount(slot, value)
        if _EXACT.remainder(amount, slot.quantum):
            raise ValueError(f"slot {name!r}: {format_amount(amount)} is not a multiple of {slot.quantum}")
        if not limits and amount > slot.maximum:
            if slot.unit == "share":
                raise ValueError(
                    f"slot {name!r}: {format_amount(amount)} is more than one device; "
                    f"ask for whole devices with {slot.device!r}"
                )
            raise ValueError(f"slot {name!r}: {format_amount(amount)} is above the maximum {slot.maximum}")
        if amount or limits:
            out[name] = amount
    if limits:
        return dict(sorted(out.items()))
    for name, amount in out.items():
        device = _REGISTRY[name].device
        if device is not None and out.get(device):
            raise ValueError(
                f"ask for whole devices ({device!r}) or a share ({name!r}), not both"
            )
    return out


def add(a: SlotMap, b: SlotMap) -> dict[str, Decimal]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Decimal(0)) + v
    return out


def subtract(a: SlotMap, b: SlotMap) -> dict[str, Decimal]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Decimal(0)) - v
    return {k: v for k, v in out.items() if v}


def gpu_devices(request: SlotMap) -> Decimal:
    """Device-equivalents a request holds: whole GPUs plus shares."""
    return request.get("gpu", Decimal(0)) + request.get("gpu.shares", Decimal(0))


def to_text(slots: SlotMap) -> dict[str, str]:
    return {k: format_amount(v) for k, v in sorted(slots.items())}


def from_text(slots: Mapping[str, str]) -> dict[str, Decimal]:
    return {k: Decimal(v) for k, v in slots.items()}
