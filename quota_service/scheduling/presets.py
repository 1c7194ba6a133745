"""Resource presets: the named sizes a session is started with.

As Backend.AI's resource presets (a name and resource slots, managed by
admins), hubgrid's presets are set by the superadmin in the service's
configuration (``c.HubgridService.resource_presets``) and read by everyone
through ``GET resource-presets``: the hub's spawn form and the Lab's
launcher offer the same ones, and both start on the one marked
``default``, which is also what a start through the REST API gets when it
names no ``cpu`` or ``mem`` (the spawner asks the service for it). One
source of defaults: nothing else holds a size.

Pure: parsing and the API's model, no IO.
"""

from __future__ import annotations

from decimal import Decimal

from ..core import slots as slotlib
from ..core.names import check_entity_name, format_amount

#: the slots a preset may set (those the spawn form and the launcher offer)
PRESET_SLOTS = ("cpu", "mem", "gpu", "gpu.shares")

#: the shipped presets (``medium`` is the size sessions got before presets)
DEFAULT_PRESETS = [
    {"name": "small", "slots": {"cpu": "0.5", "mem": "1G"}},
    {"name": "medium", "slots": {"cpu": "1", "mem": "2G"}, "default": True},
    {"name": "large", "slots": {"cpu": "2", "mem": "4G"}},
]


def parse_presets(raw) -> list[dict]:
    """The API models of a configured preset list; ValueError names what is
    wrong (a missing or repeated name, unknown keys or slots, no cpu or mem,
    not exactly one default)."""
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ValueError("give a non-empty list of presets, e.g. "
                         "[{'name': 'small', 'slots': {'cpu': '0.5', 'mem': '1G'}, 'default': True}]")
    out, seen = [], set()
    for i, item in enumerate(raw):
        where = f"preset {i + 1}"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: an object with name, slots and optionally default")
        unknown = sorted(set(item) - {"name", "slots", "default", "description"})
        if unknown:
            raise ValueError(f"{where}: unknown keys {', '.join(unknown)}")
        name = item.get("name")
        try:
            check_entity_name(name)
        except ValueError as e:
            raise ValueError(f"{where}: name: {e}") from None
        where = f"preset {name!r}"
        if name in seen:
            raise ValueError(f"{where}: the name is given twice")
        seen.add(name)
        slots = item.get("slots")
        if not isinstance(slots, dict) or not {"cpu", "mem"} <= set(slots):
            raise ValueError(f"{where}: slots must give cpu and mem")
        other = sorted(set(slots) - set(PRESET_SLOTS))
        if other:
            raise ValueError(f"{where}: slots {', '.join(other)} cannot be preset "
                             f"(only {', '.join(PRESET_SLOTS)})")
        try:
            amounts = slotlib.parse_request(slots)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        if not amounts.get("cpu") or not amounts.get("mem"):
            raise ValueError(f"{where}: cpu and mem must be more than 0")
        default = item.get("default", False)
        if not isinstance(default, bool):
            raise ValueError(f"{where}: default is true or false")
        description = item.get("description", "")
        if not isinstance(description, str) or len(description) > 200:
            raise ValueError(f"{where}: description is text of at most 200 characters")
        out.append({"name": name, "slots": {k: format_amount(v) for k, v in amounts.items()},
                    "default": default, "description": description})
    defaults = [p["name"] for p in out if p["default"]]
    if len(defaults) != 1:
        raise ValueError("mark exactly one preset default (it is what a session gets that "
                         f"names no size), not {len(defaults)}"
                         + (f": {', '.join(defaults)}" if defaults else ""))
    return out


def default_preset(presets: list[dict]) -> dict:
    """The preset marked default (``parse_presets`` made sure there is one)."""
    return next(p for p in presets if p["default"])


def mem_text(amount: str) -> str:
    """Bytes as the spawn form's memory field takes them, exactly: ``2G``,
    ``512M`` when whole, else the bytes."""
    value = Decimal(amount)
    for unit, power in (("T", 4), ("G", 3), ("M", 2), ("K", 1)):
        if value and value % (1024 ** power) == 0:
            return f"{format_amount(value / 1024 ** power)}{unit}"
    return format_amount(value)
