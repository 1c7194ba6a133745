"""Reconcile: compare the ledger with what really runs and, when asked,
repair the differences (``GET``/``POST reconcile``, ``hubgrid-admin
reconcile``; docs/operations.md#reconcile).

One pass reads the world in a fixed order -- the hub's servers first, then
every Docker engine and Slurm, the ledger last (``reconcile_sources``) --,
judges it (``reconcile_diff.diff``, pure) and, for a repair, repairs what
was found (``reconcile_repair``), every difference or those the caller
lists (the ids of a dry run's differences: what no longer holds is reported,
not repaired).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
from dataclasses import dataclass
from typing import Callable

from ..core import db
from . import reconcile_sources as sources
from .reconcile_diff import DEAD_JOB, LEAKED, Findings, World, diff
from .reconcile_repair import Actor, Tools, repair


@dataclass(frozen=True)
class Context:
    """The service's collaborators reconcile uses."""

    tools: Tools
    #: the Docker engines to read (blocking)
    docker_urls: Callable[[], list[str]]
    #: a ``hubmirror.HubAPI``, or None without a hub
    hub: object | None
    grace: float
    unknown_are_orphans: bool
    #: called when allocations were released (the queues may use them)
    released: Callable[[], None]


def slurm_commands() -> tuple[str | None, str | None]:
    """``squeue`` and ``scancel`` on the service's PATH (None if absent)."""
    return sources.squeue_path(), shutil.which("scancel")


def context_of(service) -> Context:
    """Reconcile's view of the running service's settings and collaborators
    (``HubgridService``, read at each call: tests change them live)."""
    squeue, scancel = slurm_commands()
    tools = Tools(service.session_factory, service.clock, service.docker_client,
                  service.docker_timeout, squeue, scancel, base_url=service.hub_base_url)
    return Context(tools, service.docker_host_urls, service.mirror.hub,
                   service.reconcile_grace, service.reconcile_unknown, service.schedule_soon)


async def observe(ctx: Context) -> tuple[World, dict]:
    """Read the world (the hub first, the ledger last) and report each source."""
    as_of = ctx.tools.clock()
    servers, hub = await sources.read_servers(ctx.hub)
    urls = await asyncio.to_thread(ctx.docker_urls)
    (containers, docker), (jobs, slurm) = await asyncio.gather(
        sources.read_containers(urls, ctx.tools.make_client, ctx.tools.docker_timeout),
        sources.read_jobs(ctx.tools.squeue, ctx.tools.run))
    named = {c.allocation for c in containers}
    named |= {j.allocation for j in jobs or () if j.allocation}
    named |= {s.allocation for s in servers or () if s.allocation}

    def ledger():
        with db.transaction(ctx.tools.session_factory) as s:
            return sources.read_ledger(s, named)

    allocations = await asyncio.to_thread(ledger)
    world = World(as_of, ctx.grace, allocations, containers, jobs, servers,
                  ctx.unknown_are_orphans)
    live = sum(1 for a in allocations.values() if a.state in ("pending", "allocated"))
    return world, {"hub": hub, "docker": docker, "slurm": slurm,
                   "ledger": {"read": True, "live": live}}


def complete(report_sources: dict) -> bool:
    """Whether every source that exists was read (skipped ones do not exist here)."""
    parts = [report_sources["hub"], report_sources["slurm"], *report_sources["docker"].values()]
    return all(p.get("read") or "skipped" in p for p in parts)


def summary(report: dict) -> str:
    """One line: what was found and repaired."""
    n = len(report["differences"])
    text = f"{n} difference(s)"
    if report["repairs"] is not None:
        counts = {}
        for r in report["repairs"]:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        text += ": " + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none")
    if not report["complete"]:
        text += "; some sources could not be read"
    return text


async def run(ctx: Context, actor: Actor | None = None, selected: list[str] | None = None,
              dry_run: bool = True) -> dict:
    """One pass; the report (``repairs`` is None for a dry run)."""
    world, read = await observe(ctx)
    findings: Findings = diff(world)
    repairs = None
    if not dry_run:
        found = findings.by_id()
        wanted = list(found) if selected is None else list(dict.fromkeys(selected))
        repairs = await repair(ctx.tools, [found[i] for i in wanted if i in found], actor)
        repairs += [{"id": i, "outcome": "skipped", "detail": "no longer a difference"}
                    for i in wanted if i not in found]
        if any(r["outcome"] == "repaired" and found[r["id"]].kind in (LEAKED, DEAD_JOB)
               for r in repairs):
            ctx.released()
    report = {
        "dry_run": dry_run,
        "as_of": world.as_of.astimezone(dt.timezone.utc).isoformat(),
        "grace": ctx.grace,
        "differences": [d.as_dict() for d in findings.differences],
        "spared": [n.as_dict() for n in findings.spared],
        "repairs": repairs,
        "sources": read,
        "complete": complete(read),
    }
    report["summary"] = summary(report)
    return report
