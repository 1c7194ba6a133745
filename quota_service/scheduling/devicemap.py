"""A node as the admin pages show it: each GPU's shares and who holds them,
and how long until the node is empty at its sessions' limits (drain).
Pure: decisions over values and an injected ``now``, no IO."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable

from ..core.names import format_amount

ZERO = Decimal(0)


@dataclass(frozen=True)
class Running:
    """One session on the node."""

    id: str
    user: str
    domain: str
    project: str
    slots: dict  # as the ledger keeps it (amounts as text)
    gpus: list  # [{"index": 0, "share": "0.5"}]
    started: dt.datetime  # aware
    #: when its binding policy's max_session_lifetime ends it (a keep moves
    #: it later); None: no lifetime limit
    ends: dt.datetime | None
    #: its hub server's name ("" for the default server or an API session)
    server_name: str = ""
    origin: str = "api"


def holders(devices: list[tuple[int, str, int]], sessions: list[Running],
            sees: Callable[[str], bool]) -> list[dict]:
    """Each device (index, model, memory) with the share ``taken`` and its
    ``holders``: the sessions of domains ``sees`` names in full, the rest
    only summed as ``others`` (taken, whose not said). A holder's ``memory``
    is the device memory its share may use (bytes; 0 unknown)."""
    out = []
    for index, model, memory in devices:
        held, others, taken = [], ZERO, ZERO
        for r in sessions:
            for g in r.gpus:
                if g["index"] != index:
                    continue
                share = Decimal(g["share"])
                taken += share
                if sees(r.domain):
                    held.append({"allocation": r.id, "user": r.user, "domain": r.domain,
                                 "project": r.project, "share": format_amount(share),
                                 "server_name": r.server_name, "origin": r.origin,
                                 "memory": int(g.get("memory") or 0)})
                else:
                    others += share
        out.append({"index": index, "model": model, "memory": memory,
                    "taken": format_amount(taken), "free": format_amount(max(1 - taken, ZERO)),
                    "holders": held, "others": format_amount(others)})
    return out


def until_empty(now: dt.datetime, sessions: list[Running]) -> dict:
    """How long until no session runs on the node, if every session ends
    at its lifetime limit: ``seconds`` and ``at`` (None when any session
    has no limit: ``unlimited`` counts those), 0 when none runs."""
    unlimited = sum(1 for r in sessions if r.ends is None)
    if unlimited or not sessions:
        return {"seconds": None if unlimited else 0, "at": None if unlimited else now.isoformat(),
                "sessions": len(sessions), "unlimited": unlimited}
    last = max(r.ends for r in sessions)
    return {"seconds": max(int((last - now).total_seconds() + 0.999999), 0),
            "at": max(last, now).isoformat(), "sessions": len(sessions), "unlimited": 0}
