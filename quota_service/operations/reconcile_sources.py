"""Reconcile, the reading: the hub's servers, the session containers of
every Docker engine, hubgrid's Slurm jobs and the ledger, as the values
``reconcile_diff`` judges.

A source that cannot be read is reported (``{"read": false, "error": ...}``),
never raised: what only it could confirm is then left alone. The parsers
(``server_rows``, ``container_row``, ``parse_squeue``) are pure; docker-py and
``squeue`` block, so they are asked in worker threads.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import shutil
import subprocess
from typing import Callable, Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.models import Allocation, Domain, User
from ..core.orm import aware
from ..sessions.dockerevents import LABEL
from .reconcile_diff import LIVE
from .reconcile_diff import Allocation as Row
from .reconcile_diff import Container, Job, Server

#: the Slurm spawner names its jobs ``hubgrid-<user>`` (spawner/slurm.py)
JOB_PREFIX = "hubgrid-"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: ... gives them the comment ``hubgrid-allocation=<allocation>``
COMMENT = re.compile(rf"^hubgrid-allocation=({_UUID})$")
#: ... and writes their output to ``<job_log_dir>/<allocation>.log`` (what
#: ties a job submitted before jobs had the comment)
OUTPUT_FILE = re.compile(rf"(?:^|/)({_UUID})\.log$")
#: squeue's fields, ``|`` after each; the output path last (it may hold anything)
SQUEUE_FIELDS = "JobID:|,Name:|,State:|,SubmitTime:|,Comment:|,StdOut:"
SQUEUE_TIMEOUT = 30.0


def _error(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 500 else text[:500] + "..."


# --- the hub ---------------------------------------------------------------------

def server_rows(models: Iterable[dict]) -> list[Server]:
    """The active servers of the hub's user models (their ``servers`` with
    ``state``, as ``hubmirror.holdings`` reads them). Pure."""
    out = []
    for u in models:
        for name, server in (u.get("servers") or {}).items():
            state = server.get("state") or {}
            job = state.get("job_id")
            out.append(Server(u["name"], name, state.get("hubgrid_allocation") or None,
                              bool(server.get("pending")), str(job) if job else None))
    return out


async def read_servers(hub) -> tuple[list[Server] | None, dict]:
    """The hub's active servers (``hub``: a ``hubmirror.HubAPI``; None when
    the service runs without a hub: then nothing the hub must confirm is judged)."""
    if hub is None:
        return None, {"read": False, "skipped": "no hub configured"}
    try:
        servers = server_rows(await hub._paged("users", "state=active"))
    except Exception as e:  # noqa: BLE001 - an unreachable hub is reported
        return None, {"read": False, "error": _error(e)}
    return servers, {"read": True, "servers": len(servers)}


# --- Docker ----------------------------------------------------------------------

def container_row(engine: str, item: dict) -> Container | None:
    """A container as docker-py's low-level ``containers()`` lists it, or
    None without an allocation label. Pure."""
    allocation = (item.get("Labels") or {}).get(LABEL)
    if not allocation:
        return None
    names = item.get("Names") or []
    return Container(engine, item["Id"], names[0].lstrip("/") if names else "",
                     allocation, item.get("State") or "",
                     dt.datetime.fromtimestamp(int(item.get("Created") or 0), dt.timezone.utc))


def list_containers(client, engine: str) -> list[Container]:
    """Every container of the engine carrying the allocation label, running
    or not (blocking)."""
    items = client.containers(all=True, filters={"label": LABEL})
    return [c for c in (container_row(engine, i) for i in items) if c is not None]


def with_client(make_client, url: str, timeout: float, work: Callable):
    """``work(client)`` with a client of the engine at ``url``, closed after (blocking)."""
    client = make_client(url, timeout)
    try:
        return work(client)
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()


async def read_containers(urls: list[str], make_client,
                          timeout: float) -> tuple[list[Container], dict]:
    """The labelled containers of every engine, asked at once; the report
    says per engine how many, or why it could not be read."""

    async def one(url: str):
        try:
            found = await asyncio.to_thread(with_client, make_client, url, timeout,
                                            lambda c: list_containers(c, url))
            return url, found, None
        except Exception as e:  # noqa: BLE001 - one engine's failure is its report
            return url, [], _error(e)

    containers: list[Container] = []
    report: dict[str, dict] = {}
    for url, found, error in await asyncio.gather(*(one(u) for u in urls)):
        containers.extend(found)
        report[url] = ({"read": True, "containers": len(found)} if error is None
                       else {"read": False, "error": error})
    return containers, report


# --- Slurm -----------------------------------------------------------------------

def _local_time(text: str) -> dt.datetime | None:
    try:  # squeue prints the local time, without a zone
        return dt.datetime.fromisoformat(text).astimezone(dt.timezone.utc)
    except ValueError:
        return None


def parse_squeue(text: str) -> list[Job]:
    """hubgrid's jobs in ``squeue -h -O SQUEUE_FIELDS`` output. Pure (but
    for the machine's time zone, which squeue's times are in)."""
    out = []
    for line in text.splitlines():
        parts = line.split("|", 5)
        if len(parts) < 6 or not parts[1].strip().startswith(JOB_PREFIX):
            continue
        job, name, state, submitted, comment, output = (p.strip() for p in parts)
        m = COMMENT.match(comment) or OUTPUT_FILE.search(output)
        # "CANCELLED by 1000" is CANCELLED
        out.append(Job(job, name, state.split()[0] if state else "",
                       m.group(1) if m else None, _local_time(submitted)))
    return out


#: runs a command (argv), returns its standard output; raises on failure
Runner = Callable[[list[str]], str]


def run_command(argv: list[str]) -> str:
    """Run a Slurm command (blocking); its output, or RuntimeError with its message."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=SQUEUE_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} failed ({done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()[:300]}")
    return done.stdout


def squeue_path() -> str | None:
    return shutil.which("squeue")


def squeue_argv(squeue: str, job: str | None = None) -> list[str]:
    argv = [squeue, "-h", "-t", "all", "-O", SQUEUE_FIELDS]
    return argv + ["-j", job] if job else argv


async def read_jobs(squeue: str | None, run: Runner = run_command,
                    ) -> tuple[list[Job] | None, dict]:
    """hubgrid's Slurm jobs (those still listed, finished ones included);
    None when Slurm was not read (no ``squeue``, or it failed)."""
    if squeue is None:
        return None, {"read": False, "skipped": "squeue is not on the service's PATH"}
    try:
        jobs = parse_squeue(await asyncio.to_thread(run, squeue_argv(squeue)))
    except Exception as e:  # noqa: BLE001 - Slurm's failure is its report
        return None, {"read": False, "error": _error(e)}
    return jobs, {"read": True, "jobs": len(jobs)}


def job_now(squeue: str, job: str, run: Runner = run_command) -> Job | None:
    """One job as Slurm lists it now, None when it is no longer listed (blocking)."""
    try:
        found = parse_squeue(run(squeue_argv(squeue, job)))
    except RuntimeError as e:
        if "Invalid job id" in str(e):
            return None
        raise
    return next((j for j in found if j.id == job), None)


# --- the ledger ------------------------------------------------------------------

def read_ledger(s: Session, named: set[str]) -> dict[str, Row]:
    """The live allocations and those ``named`` (by containers, jobs and
    servers), by id."""
    q = (select(Allocation, User.name, Domain.name)
         .join(User, User.id == Allocation.user_id)
         .join(Domain, Domain.id == Allocation.domain_id))
    rows = list(s.execute(q.where(Allocation.state.in_(LIVE))))
    rest = sorted(named)
    for i in range(0, len(rest), 500):
        rows += s.execute(q.where(Allocation.id.in_(rest[i:i + 500]),
                                  Allocation.state.not_in(LIVE)))
    return {a.id: Row(a.id, a.state, a.origin, user, domain, a.server_name,
                      aware(a.created_at), aware(a.released_at), a.release_reason or "")
            for a, user, domain in rows}
