"""``hubgrid quota``: my limits and use at every level that binds me.

The levels are my resource policy (user), each of my projects and my
domain; per slot the limit, what is in use, what is left and what waits in
the queue, exact (three sessions of 0.3 GPU show 0.9). A slot without a
limit shows "unlimited"; every known slot is shown, also at 0. A device
limit (``gpu``) counts whole devices and shares together, as the scheduler
does. Then the storage limits: folders and bytes against the policy's and
each project's ``max_vfolder_count`` and ``max_vfolder_size``.
"""

from __future__ import annotations

from ..client import format_bytes, format_slot
from .base import command
from .output import table


def level_rows(level: dict) -> list[list[str]]:
    first = [level["level"], level["name"] + ("" if level["complete"] else " *")]
    blank = ["", ""]
    rows = []
    for i, r in enumerate(level["slots"]):
        slot = r["slot"]
        rows.append((first if i == 0 else blank) + [
            slot, format_slot(slot, r["limit"]), format_slot(slot, r["used"]),
            "-" if r["free"] is None else format_slot(slot, r["free"]),
            format_slot(slot, r["pending"])])
    sessions = level["sessions"]
    limit = sessions["limit"]
    rows.append(blank + ["sessions", "unlimited" if limit is None else str(limit),
                         str(sessions["used"]),
                         "-" if limit is None else str(max(limit - sessions["used"], 0)),
                         str(sessions["pending"])])
    return rows


def render(quota: dict) -> str:
    rows = [row for level in quota["levels"] for row in level_rows(level)]
    out = [table(["LEVEL", "NAME", "SLOT", "LIMIT", "USED", "FREE", "PENDING"], rows)]
    partial = [f"{lv['level']} {lv['name']}" for lv in quota["levels"] if not lv["complete"]]
    if partial:
        out.append("* " + ", ".join(partial) + ": USED and PENDING count only your own "
                   "sessions (other members' are shown to admins only)")
    if quota.get("storage"):
        out.append("")
        out.append(table(
            ["STORAGE", "NAME", "FOLDERS", "MAX FOLDERS", "USED", "MAX SIZE"],
            [[s["level"], s["name"], s["folders"],
              "unlimited" if s["max_folders"] is None else s["max_folders"],
              format_bytes(s["bytes"]),
              "unlimited" if s["max_bytes"] is None else format_bytes(s["max_bytes"])]
             for s in quota["storage"]]))
    return "\n".join(out)


def run(ctx, args) -> None:
    ctx.emit(ctx.client.quota(), render)


def register(groups, common) -> None:
    command(groups, "quota", common, run,
            "your limits and use at every level that binds you (policy, projects, domain)",
            description=__doc__.split("\n\n", 1)[1])
