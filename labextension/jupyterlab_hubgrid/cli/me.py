"""``hubgrid me``: who the service takes me for."""

from __future__ import annotations

from ..client import format_slot
from .base import command
from .output import key_values


def limits_text(slots: dict | None) -> str:
    """{"cpu": 4, "gpu.shares": Decimal("1.5")} -> "cpu 4, gpu.shares 1.5"."""
    if not slots:
        return "none"
    return ", ".join(f"{slot} {format_slot(slot, amount)}" for slot, amount in slots.items())


def render(me: dict) -> str:
    projects = ", ".join(f"{p['name']} ({limits_text(p.get('total_resource_slots'))})"
                         for p in me.get("projects") or []) or "none"
    detail = me.get("domain_detail") or {}
    return key_values([
        ("user", me.get("name")),
        ("domain", f"{me.get('domain')} ({limits_text(detail.get('total_resource_slots'))})"),
        ("role", me.get("role")),
        ("resource policy", me.get("resource_policy") or "none"),
        ("projects", projects),
        ("signed in with", me.get("credential")),
    ])


def run(ctx, args) -> None:
    ctx.emit(ctx.client.me(), render)


def register(groups, common) -> None:
    command(groups, "me", common, run, "who you are: domain, role, projects, resource policy")
