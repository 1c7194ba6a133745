"""Exact amounts: JSON read with Decimals, slot maps as Decimals, amounts
formatted for people without rounding, and "my quota at every level"
composed from the service's answers. Pure: no IO.

Three sessions of 0.3 GPU add up to 0.9 here, never 0.8999999: nothing
goes through a float.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable, Mapping

#: the slots hubgrid knows out of the box, in display order
SLOTS = ("cpu", "mem", "gpu", "gpu.shares")
#: a device slot and the slot of its shares: a device limit caps both together
DEVICE_SHARES = {"gpu": "gpu.shares"}
#: keys whose values are slot maps (slot -> amount) in the service's answers
SLOT_MAP_KEYS = frozenset({"slots", "total_resource_slots", "max_pending_resource_slots",
                           "capacity", "min_slots"})
#: amounts inside a pending reason record
REASON_AMOUNTS = ("used", "requested", "limit")
ADMIN_ROLES = ("domain-admin", "superadmin")

# --- exact JSON ----------------------------------------------------------------

def loads(data: bytes | str) -> Any:
    """JSON with every number exact (Decimal for fractions, int otherwise)."""
    return json.loads(data, parse_float=Decimal)


def _plain(value: Decimal) -> str:
    """A Decimal in plain notation, without exponent or trailing zeros."""
    if value == value.to_integral_value():
        return str(value.quantize(Decimal(1)))
    return format(value.normalize(), "f")


def dumps(obj: Any, indent: int | None = 2) -> str:
    """JSON of ``obj``; Decimals become strings as the service writes them ("0.9")."""
    def default(o):
        if isinstance(o, Decimal):
            return _plain(o)
        raise TypeError(f"{type(o).__name__} is not JSON serialisable")

    return json.dumps(obj, indent=indent, default=default, ensure_ascii=False)


def _decimal(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, str, Decimal)):
        try:
            return Decimal(value) if not isinstance(value, Decimal) else value
        except InvalidOperation:
            return value
    return value


def exact(obj: Any) -> Any:
    """``obj`` with its slot maps, GPU shares and reason amounts as Decimals."""
    if isinstance(obj, list):
        return [exact(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for key, value in obj.items():
        if key in SLOT_MAP_KEYS and isinstance(value, dict):
            out[key] = {slot: _decimal(v) for slot, v in value.items()}
        elif key == "gpus" and isinstance(value, list):
            out[key] = [{**g, "share": _decimal(g["share"])} if isinstance(g, dict)
                        and "share" in g else g for g in value]
        elif key == "reasons" and isinstance(value, list):
            out[key] = [{k: _decimal(v) if k in REASON_AMOUNTS else v for k, v in r.items()}
                        if isinstance(r, dict) else r for r in value]
        else:
            out[key] = exact(value)
    return out


# --- formatting amounts ----------------------------------------------------------

def format_amount(value: Decimal | int | str) -> str:
    """An amount exactly, shortest form: 0.9, 2, 0.25."""
    return _plain(Decimal(value))


_BINARY = (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
           ("KiB", 1 << 10))


def _hundredths(h: int, unit: str) -> str:
    whole, frac = divmod(h, 100)
    frac_text = f"{frac:02d}".rstrip("0")
    return f"{whole}{'.' + frac_text if frac_text else ''} {unit}"


def format_bytes(value: Decimal | int | str) -> str:
    """Bytes for people, as the Lab UI shows them (labextension/src/amounts.ts
    ``formatBytes``): in the largest binary unit in which the amount is exact
    with at most two decimals and under 10000 (1610612736 -> "1.5 GiB",
    1074790400 -> "1025 MiB", 1000 -> "1000 B"); an amount exact in no such
    unit is shown rounded half up to two decimals in the largest unit it
    reaches, marked "≈" (200000014 -> "≈ 190.73 MiB"). Sums and comparisons
    always use the exact amount."""
    n = Decimal(value)
    if n != n.to_integral_value() or n <= 0:
        return f"{format_amount(n)} B"
    whole = int(n)
    hundredths = whole * 100
    for unit, size in _BINARY:
        readable = whole // size < 10000 or unit == "PiB"
        if whole >= size and readable and hundredths % size == 0:
            return _hundredths(hundredths // size, unit)
    for unit, size in _BINARY:
        if whole >= size:
            return "≈ " + _hundredths((hundredths + size // 2) // size, unit)
    return f"{whole} B"


#: a size typed by a person: "34359738368", "32G", "32 GiB", "512 MiB",
#: "1.5G", "2048 B" (the grammar of the Lab's ``parseBytes``)
_SIZE = re.compile(r"([0-9]+)(?:\.([0-9]+))?\s*(?:([KMGTP])(?:I?B?)?|B)?", re.ASCII)
_POWERS = {"K": 10, "M": 20, "G": 30, "T": 40, "P": 50}


def parse_bytes(text: str | int) -> int:
    """A memory or folder size as an exact count of bytes. Units are binary
    (K, M, G, T, P with or without ``i``/``B``, any case: "1G" and "1 GiB"
    are 1073741824, as JupyterHub's ByteSpecification reads them); a
    fraction must come to whole bytes ("1.5G" is 1610612736, "0.3K" is
    refused). ValueError with a message a person can act on otherwise."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"a size cannot be negative: {text}")
        return text
    m = _SIZE.fullmatch(str(text).strip().upper())
    if m is None:
        raise ValueError(f"not a size: {text!r} (examples: 32G, 512 MiB, 1073741824)")
    whole, fraction, letter = m.group(1), m.group(2) or "", m.group(3)
    numerator = int(whole + fraction) << (_POWERS[letter] if letter else 0)
    denominator = 10 ** len(fraction)
    if numerator % denominator:
        raise ValueError(f"{text!r} is not a whole number of bytes")
    return numerator // denominator


def format_slot(slot: str, value: Decimal | int | str | None) -> str:
    """One slot's amount for people: memory in binary units, the rest as is;
    None (no limit) as "unlimited"."""
    if value is None:
        return "unlimited"
    return format_bytes(value) if slot == "mem" else format_amount(value)


# --- my quota at every level ---------------------------------------------------------

def _sum(allocations: Iterable[Mapping], state: str) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for a in allocations:
        if a.get("state") == state:
            for slot, amount in (a.get("slots") or {}).items():
                out[slot] = out.get(slot, Decimal(0)) + Decimal(amount)
    return out


def _held(used: Mapping[str, Decimal], slot: str) -> Decimal:
    """What counts against a limit of ``slot``: a device limit counts the
    devices held whole or shared (as the service's admission counts)."""
    held = used.get(slot, Decimal(0))
    if slot in DEVICE_SHARES:
        held += used.get(DEVICE_SHARES[slot], Decimal(0))
    return held


def _level(level: str, name: str, limits: Mapping[str, Any], allocations: list[Mapping], *,
           complete: bool, unspecified_limited: bool = False, max_sessions=None,
           source: str = "") -> dict:
    used, pending = _sum(allocations, "allocated"), _sum(allocations, "pending")
    names = list(SLOTS) + sorted((set(limits) | set(used) | set(pending)) - set(SLOTS))
    rows = []
    for slot in names:
        limit = limits.get(slot)
        if limit is None and unspecified_limited:
            limit = Decimal(0)
        limit = None if limit is None else Decimal(limit)
        held = _held(used, slot)
        rows.append({"slot": slot, "limit": limit, "used": held,
                     "pending": _held(pending, slot),
                     "free": None if limit is None else max(limit - held, Decimal(0))})
    return {
        "level": level, "name": name, "source": source, "complete": complete,
        "slots": rows,
        "sessions": {"limit": max_sessions,
                     "used": sum(1 for a in allocations if a.get("state") == "allocated"),
                     "pending": sum(1 for a in allocations if a.get("state") == "pending")},
    }


def compose_quota(me: Mapping, policy: Mapping | None, allocations: list[Mapping],
                  folders: list[Mapping] | None = None) -> dict:
    """My limits and use at every level that binds me -- my resource policy,
    each of my projects, my domain -- from the answers of ``GET me``, my
    resource policy, and the active allocations I can see.

    A user sees only their own allocations: a project's or domain's ``used``
    then counts only theirs (``complete`` False); admins see them all.
    ``folders``: the folders I see, for the storage limits."""
    role = me.get("role", "user")
    sees_all = role in ADMIN_ROLES
    domain = me.get("domain", "")
    active = [a for a in allocations if a.get("state") in ("allocated", "pending")]
    mine = [a for a in active if a.get("user") == me.get("name")]
    policy = policy or {}
    levels = [_level(
        "user", me.get("name", ""), policy.get("total_resource_slots") or {}, mine,
        complete=True, unspecified_limited=bool(policy.get("unspecified_limited")),
        max_sessions=policy.get("max_concurrent_sessions"),
        source=f"resource policy {policy['name']}" if policy.get("name") else "no resource policy",
    )]
    for p in me.get("projects") or []:
        of_project = [a for a in active if a.get("domain") == p.get("domain")
                      and a.get("project") == p.get("name")]
        levels.append(_level("project", p["name"], p.get("total_resource_slots") or {},
                             of_project, complete=sees_all,
                             max_sessions=p.get("max_concurrent_sessions")))
    detail = me.get("domain_detail") or {}
    levels.append(_level("domain", domain, detail.get("total_resource_slots") or {},
                         [a for a in active if a.get("domain") == domain], complete=sees_all))
    storage = []
    if folders is not None:
        def owned(pred):
            got = [f for f in folders if pred(f.get("owner") or {})]
            return len(got), sum(int(f.get("usage_bytes") or 0) for f in got)

        count, size = owned(lambda o: o.get("kind") == "user" and o.get("user") == me.get("name"))
        storage.append({"level": "user", "name": me.get("name", ""), "folders": count,
                        "max_folders": policy.get("max_vfolder_count"), "bytes": size,
                        "max_bytes": policy.get("max_vfolder_size")})
        for p in me.get("projects") or []:
            count, size = owned(lambda o, p=p: o.get("kind") == "project"
                                and o.get("project") == p["name"]
                                and o.get("domain") == p.get("domain"))
            storage.append({"level": "project", "name": p["name"], "folders": count,
                            "max_folders": p.get("max_vfolder_count"), "bytes": size,
                            "max_bytes": p.get("max_vfolder_size")})
    return {"user": me.get("name"), "domain": domain, "role": role, "levels": levels,
            "storage": storage}
