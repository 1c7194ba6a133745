"""Reconcile, the repairs: each difference ended by one act, after checking
again that it still holds, and written to the access log.

Before each act the object is looked at once more: the allocation in the
ledger (a session starting or restarted meanwhile makes it live again), the
container on its engine, the job in ``squeue``. What no longer holds is
``skipped`` with the reason; a failing act is ``failed`` (and logged in the
access log as an error); the others are ``repaired``. Releases go through
``ledger.release_allocation`` (exactly once) with a reason naming reconcile.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from typing import Callable

from sqlalchemy.orm import Session, sessionmaker

from ..core import db
from ..core.models import Allocation
from ..scheduling import ledger
from ..tenancy import audit
from . import reconcile_sources as sources
from .reconcile_diff import DEAD_JOB, ENDING, FINISHED, LEAKED, LIVE, ORPHAN, QUEUED, STRAY_JOB
from .reconcile_diff import Difference

#: the access log's action of each repair
ACTIONS = {ORPHAN: "reconcile.remove-container", LEAKED: "reconcile.release-allocation",
           DEAD_JOB: "reconcile.close-job", STRAY_JOB: "reconcile.cancel-job"}


@dataclass(frozen=True)
class Actor:
    """Who asked for the repair, for the access log."""

    name: str
    domain: str | None
    credential: str
    source: str | None


@dataclass(frozen=True)
class Tools:
    """What repairing needs besides the differences."""

    session_factory: sessionmaker[Session]
    clock: Callable[[], dt.datetime]
    make_client: Callable  # docker-py client of an engine URL
    docker_timeout: float
    squeue: str | None
    scancel: str | None
    run: sources.Runner = sources.run_command
    base_url: str = "/"


class Skip(Exception):
    """The difference no longer holds: nothing to do."""


def _still_over(tools: Tools, allocation: str | None) -> None:
    """Skip when the allocation is live (again)."""
    if allocation is None:
        return
    with db.transaction(tools.session_factory) as s:
        a = s.get(Allocation, allocation)
        if a is not None and a.state in LIVE:
            raise Skip(f"its allocation {allocation} is {a.state} now")


def _release(tools: Tools, d: Difference, reason: str) -> str:
    with db.ledger_transaction(tools.session_factory) as s:
        a = s.get(Allocation, d.allocation)
        if a is None or a.state not in LIVE:
            raise Skip(f"allocation {d.allocation} is {a.state if a else 'gone'} already")
        ledger.release_allocation(s, a, tools.clock(), reason, base_url=tools.base_url)
    return f"released allocation {d.allocation}"


def _scancel(tools: Tools, job: str) -> None:
    if tools.scancel is None:
        raise RuntimeError("scancel is not on the service's PATH")
    tools.run([tools.scancel, job])


def _job_now(tools: Tools, job: str):
    if tools.squeue is None:
        raise RuntimeError("squeue is not on the service's PATH")
    return sources.job_now(tools.squeue, job, tools.run)


def remove_container(tools: Tools, d: Difference) -> str:
    _still_over(tools, d.allocation)

    def work(client):
        import docker.errors

        try:
            labels = (client.inspect_container(d.key).get("Config") or {}).get("Labels") or {}
        except docker.errors.NotFound:
            raise Skip("the container is gone already") from None
        if labels.get(sources.LABEL) != d.allocation:
            raise Skip("the container no longer names that allocation")
        try:
            client.remove_container(d.key, force=True)
        except docker.errors.NotFound:
            raise Skip("the container is gone already") from None
        return f"removed container {d.key[:12]} from {d.engine}"

    return sources.with_client(tools.make_client, d.engine, tools.docker_timeout, work)


def release_leaked(tools: Tools, d: Difference) -> str:
    return _release(tools, d, f"reconcile: {d.why}")


def close_dead_job(tools: Tools, d: Difference) -> str:
    job = _job_now(tools, d.job)
    if job is not None and job.state not in FINISHED | ENDING and not (
            d.lingering and job.state in QUEUED):
        raise Skip(f"its Slurm job {d.job} is {job.state} now")
    done = _release(tools, d, f"reconcile: {d.why}")
    if job is not None and job.state not in FINISHED:
        _scancel(tools, d.job)
        done += f", cancelled Slurm job {d.job}"
    return done


def cancel_stray_job(tools: Tools, d: Difference) -> str:
    _still_over(tools, d.allocation)
    job = _job_now(tools, d.job)
    if job is None or job.state in FINISHED | ENDING:
        raise Skip(f"the Slurm job {d.job} ended already")
    _scancel(tools, d.job)
    return f"cancelled Slurm job {d.job}"


REPAIRS = {ORPHAN: remove_container, LEAKED: release_leaked, DEAD_JOB: close_dead_job,
           STRAY_JOB: cancel_stray_job}


def repair_one(tools: Tools, d: Difference, actor: Actor) -> dict:
    """Repair one difference (blocking); its outcome, written to the access log."""
    try:
        detail, outcome = REPAIRS[d.kind](tools, d), "repaired"
    except Skip as e:
        return {"id": d.id, "outcome": "skipped", "detail": str(e)}
    except Exception as e:  # noqa: BLE001 - one failure does not stop the others
        detail, outcome = f"{type(e).__name__}: {e}"[:500], "failed"
    audit.record(tools.session_factory, audit.Record(
        action=ACTIONS[d.kind], outcome="success" if outcome == "repaired" else "error",
        status=200 if outcome == "repaired" else 500, actor=actor.name,
        actor_domain=actor.domain, domain=d.domain, credential=actor.credential,
        source=actor.source, target=d.id,
        detail=f"{d.object}: {d.why}; {detail}"), tools.clock())
    return {"id": d.id, "outcome": outcome, "detail": detail}


async def repair(tools: Tools, differences: list[Difference], actor: Actor) -> list[dict]:
    """Repair each difference in turn, in worker threads."""
    out = []
    for d in differences:
        out.append(await asyncio.to_thread(repair_one, tools, d, actor))
    return out
