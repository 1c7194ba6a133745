"""``hubgrid me``: who the service takes me for."""

from __future__ import annotations

from ..client import format_slot
from .base import command
from .output import key_values


def limits_text(slots: dict | None) -> str:
    """A domain's or project's total resource limits for people:
    {"cpu": 4, "mem": 34359738368} -> "limits: cpu 4, mem 32 GiB"; none set
    (nothing capped at that level) -> "no limits"."""
    if not slots:
        return "no limits"
    return "limits: " + ", ".join(f"{slot} {format_slot(slot, amount)}"
                                  for slot, amount in slots.items())


def render(me: dict) -> str:
    projects = ", ".join(f"{p['name']} ({limits_text(p.get('total_resource_slots'))})"
                         for p in me.get("projects") or []) or "none (ask your domain admin)"
    detail = me.get("domain_detail")
    domain = me.get("domain")
    if detail is not None:
        domain = f"{domain} ({limits_text(detail.get('total_resource_slots'))})"
    return key_values([
        ("user", me.get("name")),
        ("domain", domain),
        ("role", me.get("role")),
        ("resource policy", me.get("resource_policy")
         or "none (no personal limits; 'hubgrid quota' shows every level)"),
        ("projects", projects),
        ("signed in with", me.get("credential")),
    ])


def run(ctx, args) -> None:
    ctx.emit(ctx.client.me(), render)


def register(groups, common) -> None:
    command(groups, "me", common, run, "who you are: domain, role, projects, resource policy")
