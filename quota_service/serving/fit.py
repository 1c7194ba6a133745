"""Does an endpoint's replica count fit what its creator may still take?

Pure arithmetic over the admission's ``remaining`` (what one more session
could take of each slot, None: unlimited) and ``sessions_left``: ``replicas``
replicas of ``slots`` each must fit both. Each problem names the field to
change. No IO.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Mapping

from ..core.names import format_slot


def problems(slots: Mapping[str, Decimal], replicas: int,
             remaining: Mapping[str, Decimal | None], sessions_left: int | None,
             ) -> list[dict]:
    """[{field, message}] for each limit ``replicas`` x ``slots`` passes."""
    out = []
    if sessions_left is not None and replicas > sessions_left:
        out.append({"field": "replicas", "message":
                    f"{replicas} replicas are {replicas} sessions: your limits leave "
                    f"room for {sessions_left} more"})
    for name, amount in sorted(slots.items()):
        left = remaining.get(name)
        need = amount * replicas
        if left is not None and need > left:
            out.append({"field": f"slots.{name}", "message":
                        f"{replicas} x {format_slot(name, amount)} = {format_slot(name, need)}"
                        f": your limits leave {format_slot(name, left)}"})
    return out
