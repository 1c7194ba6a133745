"""The notebook widgets as data (pure: no IO, no ipywidgets).

- quota: my limits and use at every level (:func:`~..amounts.compose_quota`)
  as bars; a bar's ``fraction`` is a float for the progress bar only, its
  ``text`` is exact ("0.9 / 2", never 0.8999); every slot is a bar, a
  limit of 0 with nothing used too;
- sessions: one row per session of mine (state, project, group, image,
  cpu/mem/GPU, elapsed, why it waits or how it ended) and how to stop it;
- the launcher: the form, its checks, the dry-run body, the hub's
  ``user_options`` for the same session, and the dry run's verdict.

Mirrors the Lab menus' logic (src/summary/model.ts, src/sessions/model.ts,
src/sessions/launch.ts). Strings that come from users (names, images,
reasons) pass through :func:`~..cli.output.safe` (control characters and
bidirectional overrides shown escaped); the widgets show them as text.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable, Mapping, Sequence

from ..amounts import format_amount, format_bytes, format_slot
from ..cli.output import duration, parse_time, safe
from ..words import state_label

# --- quota as bars -----------------------------------------------------------------

#: what a slot is called on its bar
SLOT_NAMES = {"cpu": "CPU", "mem": "Memory", "gpu": "GPU", "gpu.shares": "GPU shares"}
#: counts named after their number ("1 session", "3 / 5 sessions"); slot
#: amounts carry no unit, as on the Summary panel ("0.9 / 2" on the bar
#: "GPU shares"), and memory and storage carry their own (GiB)
NOUNS = {"sessions": ("session", "sessions"), "folders": ("folder", "folders")}
LEVEL_TITLES = {"user": "User", "keypair": "Keypair", "project": "Project",
                "domain": "Domain"}


@dataclass(frozen=True)
class Bar:
    """One progress bar: a slot (or sessions, folders, storage) at one level."""

    key: str
    #: what is measured ("GPU shares")
    name: str
    #: exact, for people, as the Summary panel: "0.9 / 2", "512 MiB / 8 GiB",
    #: "0.9 (unlimited)", "1 session (unlimited)"
    text: str
    #: the used part of the bar, 0..1 (display only; 0 when unlimited)
    fraction: float
    #: used is over the limit (a limit lowered under running sessions)
    over: bool = False
    unlimited: bool = False

    @property
    def style(self) -> str:
        """ipywidgets' bar_style: danger over the limit, warning when full."""
        if self.over:
            return "danger"
        return "warning" if self.fraction >= 1 else "info"


def _amount(key: str, value: Any) -> str:
    if key in ("mem", "storage"):
        return format_bytes(value)
    return format_amount(value)


def fraction_of(used: Decimal, limit: Decimal | None) -> float:
    """How much of the bar is used, for display: used/limit within 0..1
    (computed exactly, turned into a float only at the end)."""
    if limit is None:
        return 0.0
    if limit <= 0:
        return 1.0 if used > 0 else 0.0
    return float(min(max(used / limit, Decimal(0)), Decimal(1)))


def make_bar(key: str, limit: Any, used: Any, pending: Any = 0, name: str | None = None) -> Bar:
    """A bar from a limit (None: unlimited), the use and what waits on top."""
    used, pending = Decimal(used), Decimal(pending or 0)
    limit = None if limit is None else Decimal(limit)
    last = used if limit is None else limit

    def noun() -> str:  # after the last number: "1 session", "0 / 1 session", "2 sessions"
        if key not in NOUNS:
            return ""
        return " " + NOUNS[key][0 if last == 1 else 1]

    if limit is None:
        text = f"{_amount(key, used)}{noun()} (unlimited)"
    else:
        text = f"{_amount(key, used)} / {_amount(key, limit)}{noun()}"
    if pending > 0:
        text += f" (+{_amount(key, pending)} waiting)"
    return Bar(key, name or SLOT_NAMES.get(key, key), text, fraction_of(used, limit),
               over=limit is not None and used > limit, unlimited=limit is None)


@dataclass(frozen=True)
class LevelView:
    """One level that binds me (my policy, a project, my domain): its bars."""

    level: str
    name: str
    #: "Project ml"
    title: str
    #: where the limits come from, and whether use counts only my sessions
    notes: tuple[str, ...]
    bars: tuple[Bar, ...]


def _storage_bars(entry: Mapping) -> list[Bar]:
    return [make_bar("folders", entry.get("max_folders"), entry.get("folders", 0),
                     name="Folders"),
            make_bar("storage", entry.get("max_bytes"), entry.get("bytes", 0), name="Storage")]


def quota_view(quota: Mapping) -> list[LevelView]:
    """The bars of every level of a :func:`compose_quota` answer: its slots,
    its sessions, and for my own and each project's level the storage."""
    storage = {(s["level"], s["name"]): s for s in quota.get("storage") or []}
    out = []
    for lv in quota.get("levels") or []:
        bars = [make_bar(r["slot"], r["limit"], r["used"], r["pending"])
                for r in lv.get("slots") or []]
        sessions = lv.get("sessions") or {}
        bars.append(make_bar("sessions", sessions.get("limit"), sessions.get("used", 0),
                             sessions.get("pending", 0), name="Sessions"))
        if (lv["level"], lv["name"]) in storage:
            bars.extend(_storage_bars(storage[(lv["level"], lv["name"])]))
        notes = []
        if lv.get("source"):
            notes.append(f"limits from {safe(lv['source'])}")
        if not lv.get("complete", True):
            notes.append("use counts only your own sessions (others' are shown to admins)")
        title = LEVEL_TITLES.get(lv["level"], lv["level"])
        out.append(LevelView(lv["level"], lv["name"], f"{title} {safe(lv['name'])}",
                             tuple(notes), tuple(bars)))
    return out


# --- sessions as rows ----------------------------------------------------------------

ACTIVE = ("pending", "allocated")
#: the table's columns, in order (the stop button comes after them; why a
#: session waits or how it ended is listed under the table, by name)
COLUMNS = ("Name", "State", "Project", "Group", "Image", "CPU", "Memory", "GPU", "Elapsed")


@dataclass(frozen=True)
class StopPlan:
    """How to stop a session: through the hub (its server) or by releasing
    the allocation (one made through the API)."""

    kind: str  # "hub" or "release"
    user: str = ""
    server: str = ""
    allocation: str = ""


@dataclass(frozen=True)
class SessionRow:
    id: str
    name: str
    state: str
    state_label: str
    active: bool
    project: str
    group: str
    image: str
    cpu: str
    mem: str
    gpu: str
    elapsed: str
    #: the scheduler's reasons while it waits, with their numbers
    reasons: tuple[str, ...] = ()
    #: how it ended: exit code and/or the release reason
    ended: str = ""
    stop: StopPlan | None = None
    #: the session this notebook runs in
    this_one: bool = False

    @property
    def cells(self) -> tuple[str, ...]:
        """The text of each column of :data:`COLUMNS`."""
        return (self.name, self.state_label, self.project, self.group, self.image, self.cpu,
                self.mem, self.gpu, self.elapsed)


def gpu_text(slots: Mapping) -> str:
    """"1 GPU", "0.5 GPU share", "1 GPU + 0.5 GPU share", or "-"."""
    parts = []
    if slots.get("gpu") and Decimal(slots["gpu"]) != 0:
        parts.append(f"{format_amount(slots['gpu'])} GPU")
    if slots.get("gpu.shares") and Decimal(slots["gpu.shares"]) != 0:
        parts.append(f"{format_amount(slots['gpu.shares'])} GPU share")
    return " + ".join(parts) or "-"


def elapsed(a: Mapping, now: dt.datetime) -> str:
    """Running: since admission; waiting: since the request; ended: how
    long it ran (or waited)."""
    start = parse_time(a.get("admitted_at")) or parse_time(a.get("created_at"))
    if start is None:
        return "-"
    end = parse_time(a.get("ended_at") or a.get("released_at")) or now
    return duration((end - start).total_seconds())


def ended_text(a: Mapping) -> str:
    if a.get("state") in ACTIVE:
        return ""
    parts = []
    if a.get("exit_code") is not None:
        parts.append(f"exit code {a['exit_code']}")
    if a.get("release_reason"):
        parts.append(safe(a["release_reason"]))
    return "; ".join(parts)


def stop_plan(a: Mapping) -> StopPlan | None:
    if a.get("state") not in ACTIVE:
        return None
    if a.get("origin") == "hub":
        return StopPlan("hub", user=a.get("user") or "", server=a.get("server_name") or "")
    return StopPlan("release", allocation=a["id"])


def session_row(a: Mapping, now: dt.datetime, this_session: tuple[str, str] | None = None
                ) -> SessionRow:
    """A row of the table; ``this_session``: (user, server name) of the
    notebook's own session, marked so that stopping it asks twice."""
    slots = a.get("slots") or {}
    if a.get("server_name"):
        name = safe(a["server_name"])
    else:
        name = "(default)" if a.get("origin") == "hub" else a["id"][:8]
    this_one = (this_session is not None and a.get("origin") == "hub"
                and a.get("state") in ACTIVE
                and (a.get("user"), a.get("server_name") or "") == this_session)
    return SessionRow(
        id=a["id"], name=name + (" (this notebook)" if this_one else ""),
        state=a.get("state", ""),
        state_label=safe(state_label(a.get("state", ""))),
        active=a.get("state") in ACTIVE, project=safe(a.get("project")),
        group=safe(a.get("resource_group")), image=safe(a.get("image")) if a.get("image") else "-",
        cpu=format_slot("cpu", slots.get("cpu", 0)), mem=format_slot("mem", slots.get("mem", 0)),
        gpu=gpu_text(slots), elapsed=elapsed(a, now),
        reasons=tuple(safe(r.get("text")) for r in a.get("reasons") or []
                      if isinstance(r, Mapping)) if a.get("state") == "pending" else (),
        ended=ended_text(a), stop=stop_plan(a), this_one=this_one)


def visible_sessions(allocations: Iterable[Mapping], me: str, ended_limit: int = 0
                     ) -> tuple[list[Mapping], list[Mapping], int]:
    """(my active sessions, oldest first; my newest ended ones, at most
    ``ended_limit``; how many ended ones there are)."""
    mine = [a for a in allocations if a.get("user") == me]
    active = sorted((a for a in mine if a.get("state") in ACTIVE),
                    key=lambda a: a.get("created_at") or "")
    ended = sorted((a for a in mine if a.get("state") not in ACTIVE),
                   key=lambda a: a.get("ended_at") or a.get("released_at")
                   or a.get("created_at") or "", reverse=True)
    return active, ended[:max(ended_limit, 0)], len(ended)


# --- the launcher ----------------------------------------------------------------------

SERVER_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
DECIMAL = re.compile(r"^\d+(\.\d+)?$")
MEMORY = re.compile(r"^\d+(\.\d+)?\s*([KMGTP]i?B?)?$", re.IGNORECASE)
GPU_MODES = ("none", "whole", "shares")
TYPES = ("interactive", "batch")


@dataclass(frozen=True)
class LaunchForm:
    name: str = ""
    project: str = ""
    group: str = ""
    image: str = ""
    cpu: str = "1"
    mem: str = "2G"
    #: none, whole (whole GPUs) or shares (a share of one GPU)
    gpu_mode: str = "none"
    gpu: str = ""
    type: str = "interactive"
    #: what a batch session runs
    command: str = ""
    folders: tuple[str, ...] = field(default=())


def default_group(groups: Sequence[str]) -> str:
    return "default" if "default" in groups else (groups[0] if groups else "")


def suggest_name(random: str, taken: Iterable[str]) -> str:
    """A free server name like "s-3f9a1c" (the random part given)."""
    taken = set(taken)
    name = f"s-{random[:6]}"
    i = 2
    while name in taken:
        name = f"s-{random[:6]}-{i}"
        i += 1
    return name


def _positive(text: str, at_most: Decimal | None = None) -> bool:
    if not DECIMAL.match(text):
        return False
    try:
        value = Decimal(text)
    except InvalidOperation:
        return False
    return value > 0 and (at_most is None or value <= at_most)


def check_form(form: LaunchForm, taken: Iterable[str] = ()) -> dict[str, str]:
    """field -> what is wrong with it (empty: the form may be sent)."""
    errors = {}
    if not SERVER_NAME.match(form.name):
        errors["name"] = ("lowercase letters, digits, '.', '_' and '-', starting with a "
                          "letter or digit, at most 64")
    elif form.name in set(taken):
        errors["name"] = f"you already have a session named {form.name}"
    if not form.project:
        errors["project"] = "choose a project"
    if not form.group:
        errors["group"] = "choose a resource group"
    if not _positive(form.cpu.strip()):
        errors["cpu"] = "a positive number of cores, e.g. 0.5 or 2"
    if not MEMORY.match(form.mem.strip()):
        errors["mem"] = "bytes, or with a unit: 512M, 2G"
    gpu = form.gpu.strip()
    if form.gpu_mode == "whole" and not re.fullmatch(r"[1-9]\d*", gpu):
        errors["gpu"] = "a whole number of GPUs, 1 or more"
    if form.gpu_mode == "shares" and not _positive(gpu, Decimal(1)):
        errors["gpu"] = "a share of one GPU, more than 0 and at most 1 (e.g. 0.5)"
    if form.gpu_mode not in GPU_MODES:
        errors["gpu"] = f"GPUs: one of {', '.join(GPU_MODES)}"
    if form.type not in TYPES:
        errors["type"] = f"one of {', '.join(TYPES)}"
    elif form.type == "batch" and not form.command.strip():
        errors["command"] = "a batch session runs a command"
    return errors


def _slots(form: LaunchForm) -> dict[str, str]:
    slots = {"cpu": form.cpu.strip(), "mem": form.mem.strip()}
    if form.gpu_mode == "whole":
        slots["gpu"] = form.gpu.strip()
    elif form.gpu_mode == "shares":
        slots["gpu.shares"] = form.gpu.strip()
    return slots


def dry_run_body(form: LaunchForm) -> dict:
    """The body of ``POST allocations/dry-run``: the request the spawner makes."""
    body: dict[str, Any] = {"project": form.project, "resource_group": form.group,
                            "slots": _slots(form), "session_type": form.type}
    if form.image:
        body["image"] = form.image
    if form.type == "batch":
        body["command"] = form.command
    return body


def user_options(form: LaunchForm) -> dict:
    """The hub's ``user_options`` that start this session (the spawn form's fields)."""
    opts: dict[str, Any] = {"project": form.project, "resource_group": form.group,
                            "cpu": form.cpu.strip(), "mem": form.mem.strip()}
    if form.image:
        opts["image"] = form.image
    if form.gpu_mode == "whole":
        opts["gpu"] = int(form.gpu.strip())
    elif form.gpu_mode == "shares":
        opts["gpu_shares"] = form.gpu.strip()
    if form.folders:
        opts["vfolders"] = list(form.folders)
    if form.type == "batch":
        opts.update(session_type="batch", command=form.command)
    return opts


@dataclass(frozen=True)
class Verdict:
    #: fits (starts now), waits (would queue) or refused
    kind: str
    headline: str
    reasons: tuple[str, ...] = ()


def verdict(result: Mapping) -> Verdict:
    """The dry run's answer for people."""
    if result.get("fits_now"):
        gpus = ", ".join(f"GPU {g.get('index')} ({format_amount(g.get('share', 0))})"
                         for g in result.get("gpus") or [])
        return Verdict("fits", f"Fits now: node {safe(result.get('node') or '?')}"
                       + (f", {gpus}" if gpus else ""))
    refused = result.get("verdict") == "refuse"
    return Verdict("refused" if refused else "waits",
                   "Would be refused:" if refused else "Would wait in the queue:",
                   tuple(safe(r.get("text")) for r in result.get("reasons") or []
                         if isinstance(r, Mapping)))
