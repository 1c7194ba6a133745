"""The service's periodic passes and background work: the queue loop, the
reconciliation with the hub, the log retention rule, the folder usage scan,
the image scan and the release of exited containers.

Every database transaction here runs in a worker thread (``asyncio.to_thread``)
when it is started from the event loop; the blocking functions are also
called as they are by the tests and by worker threads (the mirror runs
``reconcile`` in one)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
import time
from collections.abc import Awaitable, Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ..core import db
from ..core import sharecheck
from ..core.foldermodels import VFolder
from ..core.models import Node
from ..scheduling import ledger
from ..scheduling.waiters import Presence
from ..sessions import dockerevents, dockerscan, registry
from ..sessions import logs as sessionlogs
from ..storage import folders as vfolders
from ..storage import hosts as storage

Clock = Callable[[], dt.datetime]


class Wake:
    """Wakes the queue loop before its interval is over, from any thread,
    saying which resource groups changed (a release frees capacity in its
    group only: the pass it wakes goes over that group's queue alone)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        #: the groups named since the last wait; None: every group
        self._groups: set[str] | None = set()

    def set(self, group: str | None = None) -> None:
        """Wake the loop for ``group``'s queue (None: every queue)."""
        with self._lock:
            if group is None:
                self._groups = None
            elif self._groups is not None:
                self._groups.add(group)
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.event.set)
        else:
            self.event.set()

    async def wait(self, timeout: float) -> frozenset[str] | None:
        """Until woken or ``timeout`` seconds passed; then ready for the next
        wake. The groups the wakes named; None when the interval ran out or
        a wake named none (a pass over every group is due)."""
        woken = True
        try:
            await asyncio.wait_for(self.event.wait(), timeout=timeout)
        except asyncio.TimeoutError:
            woken = False
        groups = self.take()
        return groups if woken else None

    def take(self) -> frozenset[str] | None:
        """The groups named since the last wait or take (empty: no wake;
        None: every group), now ready for the next wake."""
        self.event.clear()
        with self._lock:
            groups, self._groups = self._groups, set()
        return frozenset(groups) if groups is not None else None


def merged(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The groups of two wakes together (None: every group)."""
    return None if a is None or b is None else a | b


async def queue_loop(ready: asyncio.Event, presence: Callable[[], Presence],
                     run_pass: Callable[[Presence, frozenset[str] | None], object], wake: Wake,
                     interval: Callable[[], float], log: logging.Logger,
                     min_interval: Callable[[], float] = lambda: 0.0) -> None:
    """Pass over the pending queues (``run_pass(presence, groups)`` in a
    worker thread; ``groups`` None: every group) every ``interval()`` seconds
    or when woken (over the groups the wake named), but never sooner than
    ``min_interval()`` seconds after the last pass began: the wakes of a
    burst of releases meanwhile make one pass (Slurm's ``sched_min_interval``).
    After a (re)start, nothing is admitted from the queue before ``ready``
    (the ledger was reconciled with the hub's servers)."""
    await ready.wait()
    loop = asyncio.get_running_loop()
    groups: frozenset[str] | None = None
    while True:
        began = loop.time()
        try:
            await asyncio.to_thread(run_pass, presence(), groups)
        except Exception:
            log.exception("scheduling pass failed; will retry")
        groups = await wake.wait(interval())
        rest = began + min_interval() - loop.time()
        if rest > 0:
            await asyncio.sleep(rest)
            groups = merged(groups, wake.take())


async def repeat(what: str, run: Callable[[], object], interval: Callable[[], float],
                 log: logging.Logger) -> None:
    """Run the blocking ``run()`` in a worker thread now, then every
    ``interval()`` seconds; a failing pass is logged and retried."""
    while True:
        try:
            await asyncio.to_thread(run)
        except Exception:
            log.exception("%s failed; will retry", what)
        await asyncio.sleep(interval())


async def repeat_async(what: str, run: Callable[[], Awaitable[object]],
                       interval: Callable[[], float], log: logging.Logger) -> None:
    """Await ``run()`` now, then every ``interval()`` seconds from the start
    of one pass to the start of the next (a pass that took longer is
    followed at once), so a deadline waits at most one interval for its
    pass; an interval of 0 or less: idle, asking again every 10 s. A failing
    pass is logged."""
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        if interval() > 0:
            try:
                await run()
            except Exception:
                log.exception("%s failed; will retry", what)
        every = interval()
        await asyncio.sleep(max(every - (loop.time() - started), 0.0) if every > 0 else 10.0)


def reconcile(factory: sessionmaker[Session], held: frozenset[str], as_of: dt.datetime,
              pending: frozenset[tuple[str, str]], grace: float, now: dt.datetime,
              log: logging.Logger, released: Callable[[], None]) -> ledger.Reconciled:
    """Release what the hub's servers no longer hold, then call ``released``
    if anything was (blocking)."""
    with db.ledger_transaction(factory) as s:
        done = ledger.reconcile(s, held, as_of, grace, now, pending)
    if done.released:
        log.info("reconciled with the hub (%d server(s) hold an allocation, %d "
                 "pending): released %d no server holds: %s", len(held), len(pending),
                 len(done.released), ", ".join(done.released))
        released()
    return done


def check_shares(factory: sessionmaker[Session], node: str, pipe_directory: str, library: str,
                 log: logging.Logger, changed: Callable[[], None]) -> str | None:
    """One share check of the node ``node`` (this machine) in its
    ``sharing_mode``: sets its ``share_check`` to why its GPU shares cannot be
    enforced now, "" when they can (blocking). Returns the reason, None when
    the node is not registered; calls ``changed`` when the reason changed (a
    cleared check lets waiting shares be placed)."""
    with db.transaction(factory) as s:
        mode = s.scalar(select(Node.sharing_mode).where(Node.name == node))
    if mode is None:
        return None
    # observed outside the transaction: mps-control may take seconds
    reason = sharecheck.check(mode, pipe_directory=pipe_directory, library=library)
    with db.ledger_transaction(factory) as s:  # whether the node takes shares: capacity
        n = s.scalar(select(Node).where(Node.name == node))
        if n is None or n.share_check == reason:
            return reason
        n.share_check = reason
    log.info("node %s: GPU shares %s", node,
             f"cannot be enforced now: {reason}" if reason else f"enforced again ({mode})")
    changed()
    return reason


def purge_logs(factory: sessionmaker[Session], store: sessionlogs.LogStore, now: dt.datetime,
               retention_days: int, log: logging.Logger) -> list[str]:
    """One pass of the log retention rule (blocking); returns the purged allocations."""
    with db.transaction(factory) as s:
        purged = sessionlogs.purge(s, store, now, retention_days)
    if purged:
        log.info("purged the logs of %d session(s) released more than %d days ago",
                 len(purged), retention_days)
    return purged


def measure_usage(factory: sessionmaker[Session], hosts: dict[str, storage.Host],
                  clock: Clock) -> int:
    """Scan every folder and cache its usage, a transaction per folder
    (blocking); returns how many were measured."""
    with db.transaction(factory) as s:
        ids = list(s.scalars(select(VFolder.id)))
    done = 0
    for folder_id in ids:
        with db.transaction(factory) as s:
            if vfolders.measure(s, folder_id, hosts, clock()) is not None:
                done += 1
    return done


async def scan_images(urls_of: Callable[[], list[str]], make_client, timeout: float,
                      factory: sessionmaker[Session], clock: Clock,
                      log: logging.Logger) -> registry.ScanReport:
    """Ask every Docker host for its session images and record them; the
    hosts are read and the images recorded in worker threads."""
    urls = await asyncio.to_thread(urls_of)
    found, errors = await dockerscan.scan(urls, make_client, timeout)
    report = await asyncio.to_thread(_record_scan, factory, found, errors, clock())
    for host in report.hosts:
        if not host["ok"]:
            log.warning("image scan: docker host %s: %s", host["url"], host["error"])
    for item in report.skipped:
        log.warning("image scan: skipped %s: %s", item["name"], item["reason"])
    log.info("image scan: %s", report.summary)
    return report


def _record_scan(factory: sessionmaker[Session], found, errors,
                 now: dt.datetime) -> registry.ScanReport:
    with db.transaction(factory) as s:
        return registry.apply_scan(s, found, errors, now)


async def scan_at_start(scan: Callable[[], Awaitable[object]], log: logging.Logger) -> None:
    """The image scan at start: a failure is only logged."""
    try:
        await scan()
    except Exception:
        log.exception("image scan at start failed (scan again with POST images/scan)")


async def container_exited(ex: dockerevents.Exit, delay: float, factory: sessionmaker[Session],
                           clock: Clock, base_url: str, log: logging.Logger,
                           released: Callable[[], None]) -> None:
    """A session container exited: release its allocation after ``delay``
    seconds (unless its spawner did meanwhile), in a worker thread, then
    call ``released``."""
    await asyncio.sleep(delay)
    model = await asyncio.to_thread(dockerevents.release_exited, factory, ex, clock(), base_url)
    if model is not None:
        log.info("container %s of allocation %s (%s/%s) on %s exited (code %s): "
                 "released it %.1f s after the exit", ex.container[:12], ex.allocation,
                 model["user"], model["server_name"], ex.engine, ex.exit_code,
                 max(time.time() - ex.at, 0.0))
        released()
