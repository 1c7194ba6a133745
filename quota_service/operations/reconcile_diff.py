"""Reconcile, the decision: what differs between the ledger and what really
runs, as data (pure: no IO, no clock; the world carries its own time).

Four kinds of difference, each with the repair that ends it:

- ``orphan-container``: a container labelled ``hubgrid.allocation`` whose
  allocation is over (or unknown to this ledger): remove the container;
- ``leaked-allocation``: a live allocation of a hub server that no hub
  server holds (``ledger.unheld_check_due``, the rule the hub mirror
  applies): release it;
- ``dead-job``: a live allocation whose Slurm job is gone, ended, or waits
  in the queue again while the hub believes its server runs (requeued):
  release it, and ``scancel`` the job where Slurm still lists it unfinished;
- ``stray-job``: a hubgrid Slurm job still queued or running whose
  allocation is over (or unknown): ``scancel`` it.

What is left alone is said too (``Findings.spared``): young objects (a
session starting while the world was read), servers the hub lists as
pending, containers and jobs a hub server still holds (its spawner removes
them when the hub stops the server), objects of allocations this ledger
never had when ``unknown_are_orphans`` is off, and everything a source that
could not be read would have to confirm.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..scheduling.ledger import unheld_check_due

ORPHAN = "orphan-container"
LEAKED = "leaked-allocation"
DEAD_JOB = "dead-job"
STRAY_JOB = "stray-job"
KINDS = (ORPHAN, LEAKED, DEAD_JOB, STRAY_JOB)

PENDING_SERVER = "the hub lists its server as pending (starting or stopping)"

#: allocation states that hold (or wait for) resources
LIVE = ("pending", "allocated")

#: Slurm job states (squeue's long names) of a job that is over
FINISHED = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT",
})
#: listed and unfinished, but its session is over
ENDING = frozenset({"COMPLETING", "STAGE_OUT"})
#: waiting in the queue (at the start, or again after a requeue)
QUEUED = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})


@dataclass(frozen=True)
class Allocation:
    """A ledger row, as far as reconcile needs it."""

    id: str
    state: str
    origin: str  # hub | api
    user: str
    domain: str
    server_name: str
    created: dt.datetime
    released: dt.datetime | None = None
    release_reason: str = ""

    @property
    def session(self) -> str:
        return f"{self.user}/{self.server_name}" if self.server_name else f"{self.user}/"


@dataclass(frozen=True)
class Container:
    """A container labelled with an allocation, on one engine."""

    engine: str
    id: str
    name: str
    allocation: str
    state: str  # Docker's: created | running | exited | ...
    created: dt.datetime


@dataclass(frozen=True)
class Job:
    """A hubgrid Slurm job (named ``hubgrid-<user>``)."""

    id: str
    name: str
    state: str  # squeue's long state name
    #: the allocation its output file names (``<allocation>.log``), if any
    allocation: str | None
    submitted: dt.datetime | None = None


@dataclass(frozen=True)
class Server:
    """An active server of the hub, from its user model."""

    user: str
    name: str
    allocation: str | None
    pending: bool
    #: the Slurm job of its spawner's state (batchspawner's ``job_id``)
    job_id: str | None = None


@dataclass(frozen=True)
class World:
    """What was read, and when the reading began (the hub first, then the
    engines and Slurm, the ledger last: a session starting meanwhile has its
    allocation in the ledger before its container or job can be seen)."""

    as_of: dt.datetime
    #: seconds an object must have existed before it can be judged
    grace: float
    #: the live allocations, and every allocation a container or job names
    allocations: Mapping[str, Allocation]
    #: the containers of the engines that answered
    containers: Sequence[Container] = ()
    #: hubgrid's Slurm jobs; None when Slurm was not read
    jobs: Sequence[Job] | None = None
    #: the hub's active servers; None when the hub was not read (no hub, or
    #: it did not answer): nothing that needs it is judged
    servers: Sequence[Server] | None = None
    #: whether containers and jobs of allocations this ledger never had are
    #: orphans (one hubgrid per engine and cluster) or someone else's
    unknown_are_orphans: bool = True


@dataclass(frozen=True)
class Difference:
    kind: str
    #: what it is about: a container id, an allocation id, a job id
    key: str
    #: the object, for people
    object: str
    why: str
    repair: str
    allocation: str | None = None
    engine: str | None = None
    job: str | None = None
    #: a dead job Slurm still lists unfinished: cancel it too
    lingering: bool = False
    domain: str | None = None
    user: str | None = None

    @property
    def id(self) -> str:
        """Stable across passes: the repair of a listed difference names it."""
        return f"{self.kind}:{self.key}"

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "object": self.object, "why": self.why,
                "repair": self.repair, "allocation": self.allocation, "engine": self.engine,
                "job": self.job, "domain": self.domain, "user": self.user}


@dataclass(frozen=True)
class Note:
    """Something looked at and left alone, and why."""

    object: str
    why: str

    def as_dict(self) -> dict:
        return {"object": self.object, "why": self.why}


@dataclass(frozen=True)
class Findings:
    differences: tuple[Difference, ...] = ()
    spared: tuple[Note, ...] = ()

    def by_id(self) -> dict[str, Difference]:
        return {d.id: d for d in self.differences}


@dataclass
class _Acc:
    differences: list[Difference] = field(default_factory=list)
    spared: list[Note] = field(default_factory=list)


def _age(world: World, t: dt.datetime) -> float:
    return (world.as_of - t).total_seconds()


def _over(a: Allocation | None, what: str) -> str:
    """Why the allocation ``what`` names is not live."""
    if a is None:
        return f"its allocation {what} is not in the ledger"
    when = f" at {a.released.isoformat()}" if a.released else ""
    reason = f" ({a.release_reason})" if a.release_reason else ""
    return f"its allocation {what} ({a.session}) was {a.state}{when}{reason}"


def _hub_holdings(servers: Sequence[Server]) -> tuple[dict[str, Server], set[tuple[str, str]]]:
    held = {s.allocation: s for s in servers if s.allocation}
    pending = {(s.user, s.name) for s in servers if s.pending}
    return held, pending


def diff(world: World) -> Findings:
    """The differences between the ledger and the world, and what was spared."""
    acc = _Acc()
    held, pending = _hub_holdings(world.servers or ())
    _containers(world, held, acc)
    leaked = _leaked(world, held, pending, acc)
    _dead_jobs(world, held, leaked, acc)
    _stray_jobs(world, held, acc)
    order = {k: i for i, k in enumerate(KINDS)}
    return Findings(tuple(sorted(acc.differences, key=lambda d: (order[d.kind], d.key))),
                    tuple(acc.spared))


def _orphaned(world: World, held: dict[str, Server], allocation: str,
              created: dt.datetime | None, what: str,
              acc: _Acc) -> tuple[bool, Allocation | None]:
    """The rule containers and jobs share: (whether the object is an orphan,
    its allocation: over, or None when the ledger never had it); a spared
    object is noted."""
    a = world.allocations.get(allocation)
    if a is not None and a.state in LIVE:
        return False, a
    if world.servers is None:
        acc.spared.append(Note(what, f"{_over(a, allocation)}, but the hub was not read to "
                                     "tell whether a server still holds it"))
        return False, a
    if allocation in held:
        s = held[allocation]
        acc.spared.append(Note(what, f"{_over(a, allocation)}, but the hub server "
                                     f"{s.user}/{s.name} still holds it: its spawner ends it "
                                     "when the hub stops the server"))
        return False, a
    if a is None and not world.unknown_are_orphans:
        acc.spared.append(Note(what, f"its allocation {allocation} is not in this ledger "
                                     "(another hubgrid's? reconcile_unknown is off)"))
        return False, a
    if created is not None and _age(world, created) < world.grace:
        acc.spared.append(Note(what, f"made {_age(world, created):.0f} s ago, within the "
                                     f"grace of {world.grace:g} s"))
        return False, a
    return True, a


def _containers(world: World, held: dict[str, Server], acc: _Acc) -> None:
    for c in world.containers:
        what = f"container {c.id[:12]} ({c.name}, {c.state}) on {c.engine}"
        orphan, a = _orphaned(world, held, c.allocation, c.created, what, acc)
        if not orphan:
            continue
        acc.differences.append(Difference(
            ORPHAN, c.id, what, _over(a, c.allocation), "remove the container",
            allocation=c.allocation, engine=c.engine,
            domain=a.domain if a else None, user=a.user if a else None))


def _leaked(world: World, held: dict[str, Server], pending: set[tuple[str, str]],
            acc: _Acc) -> set[str]:
    if world.servers is None:
        return set()
    out = set()
    for a in world.allocations.values():
        if a.origin != "hub" or a.state not in LIVE or a.id in held:
            continue
        what = f"allocation {a.id} ({a.session}, {a.state})"
        starting = (a.user, a.server_name) in pending
        if unheld_check_due(a.created, starting, world.as_of, world.grace) is not None:
            why = (PENDING_SERVER if starting else
                   f"made {_age(world, a.created):.0f} s ago, within the grace of "
                   f"{world.grace:g} s")
            acc.spared.append(Note(what, why))
            continue
        out.add(a.id)
        acc.differences.append(Difference(
            LEAKED, a.id, what,
            f"no hub server holds it (made {_age(world, a.created):.0f} s ago)",
            "release the allocation", allocation=a.id, domain=a.domain, user=a.user))
    return out


def _dead_jobs(world: World, held: dict[str, Server], leaked: set[str], acc: _Acc) -> None:
    if world.jobs is None:
        return
    listed = {j.id: j for j in world.jobs}
    for a in world.allocations.values():
        if a.state != "allocated" or a.id in leaked:
            continue
        server = held.get(a.id)
        jobs = [j for j in world.jobs if j.allocation == a.id]
        hub_job = server.job_id if server is not None else None
        if hub_job and hub_job not in {j.id for j in jobs}:
            jobs.append(listed.get(hub_job) or Job(hub_job, "", "", a.id))
        if not jobs:
            continue  # not a Slurm session
        what = f"allocation {a.id} ({a.session})"
        if server is not None and server.pending:
            acc.spared.append(Note(what, PENDING_SERVER))
            continue
        running_server = server is not None and not server.pending
        states = []
        for j in jobs:
            if not j.state:
                states.append((j, f"its Slurm job {j.id} is gone (not in squeue)", False))
            elif j.state in FINISHED:
                states.append((j, f"its Slurm job {j.id} ended ({j.state})", False))
            elif j.state in ENDING:
                states.append((j, f"its Slurm job {j.id} is ending ({j.state})", True))
            elif j.state in QUEUED and running_server:
                states.append((j, f"its Slurm job {j.id} waits in the queue again ({j.state}) "
                                  "while the hub believes its server runs: requeued", True))
            else:
                break  # a job that holds the session: healthy
        else:
            job, why, lingering = next((s for s in states if s[2]), states[0])
            acc.differences.append(Difference(
                DEAD_JOB, a.id, what, why,
                "release the allocation" + (f" and scancel job {job.id}" if lingering else ""),
                allocation=a.id, job=job.id, lingering=lingering, domain=a.domain,
                user=a.user))


def _stray_jobs(world: World, held: dict[str, Server], acc: _Acc) -> None:
    if world.jobs is None:
        return
    by_job = {s.job_id: s.allocation for s in world.servers or () if s.job_id and s.allocation}
    for j in world.jobs:
        if j.state in FINISHED or j.state in ENDING:
            continue
        what = f"Slurm job {j.id} ({j.name}, {j.state})"
        allocation = j.allocation or by_job.get(j.id)
        if allocation is None:
            acc.spared.append(Note(what, "no allocation names it (its output file is not "
                                         "<allocation>.log and no hub server holds it)"))
            continue
        orphan, a = _orphaned(world, held, allocation, j.submitted, what, acc)
        if not orphan:
            continue
        acc.differences.append(Difference(
            STRAY_JOB, j.id, what, _over(a, allocation), f"scancel job {j.id}",
            allocation=allocation, job=j.id, domain=a.domain if a else None,
            user=a.user if a else None))
