"""What the running service does, over its settings: the entry points the
handlers, the hub mirror and the tests call (a queue pass, a reconciliation,
a folder's access, an image scan, ...) and the background work of a running
service.

``ServiceRuntime`` is a mixin of ``HubgridService``: each method reads the
service's settings when it is called (tests change them on a live service)
and hands them to the plain functions of ``runtime.passes`` and the domain
packages, where the work is done. Blocking methods say so; the coroutines
run their database work in worker threads."""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ..core import db
from ..core.groupcommit import GroupCommit
from ..core.models import Node
from ..scheduling import batchmemo, ledger, queue as queueing
from ..scheduling.strategies import StrategyProvider
from ..scheduling.waiters import Presence, Waiters
from ..sessions import dockerevents, dockerscan, registry, logs as sessionlogs
from ..storage import hosts as storage, folders as vfolders
from ..tenancy.hubmirror import HubMirror
from ..operations.reclaim import sources
from ..operations.passstats import PassStats, timed, timed_async
from ..operations.reclaim.reclaimpass import PassReport, Reclaimer
from ..serving.health import Reports
from ..serving.replicas import Controller as ServingController
from . import passes


class ServiceRuntime:
    """The running service's entry points (mixed into ``HubgridService``)."""

    # made by HubgridService.initialize; its settings (traits) are read as self.<name>
    log: logging.Logger
    session_factory: sessionmaker[Session]
    waiters: Waiters
    queue_memos: dict[str, queueing.Memo]
    strategies: StrategyProvider
    wake: passes.Wake
    mirror: HubMirror
    log_store: sessionlogs.LogStore
    vfolder_hosts_resolved: dict[str, storage.Host]

    def clock(self) -> dt.datetime:
        """The service's notion of now (tests may replace it)."""
        return dt.datetime.now(dt.timezone.utc)

    _pass_stats: PassStats | None = None
    _batches: dict | None = None

    def _group_commit(self, name: str, **kw) -> GroupCommit:
        """The group commit ``name`` of the service database (made on first use)."""
        if self._batches is None or self._batches.get("factory") is not self.session_factory:
            self._batches = {"factory": self.session_factory}
        if name not in self._batches:
            self._batches[name] = GroupCommit(self.session_factory, **kw)
        return self._batches[name]

    @property
    def ledger_batches(self) -> GroupCommit:
        """Decisions and releases arriving together, in one transaction
        holding the ledger lock (``core.groupcommit``, ``scheduling.batchmemo``)."""
        return self._group_commit("ledger", ledger_lock=True, view=batchmemo.Carry())

    @property
    def write_batches(self) -> GroupCommit:
        """Small writes outside the ledger arriving together (access-log
        entries, a keypair's last use), in one transaction."""
        return self._group_commit("writes")

    @property
    def pass_stats(self) -> PassStats:
        """How the periodic passes ran (the metrics export them)."""
        if self._pass_stats is None:
            self._pass_stats = PassStats()
        return self._pass_stats

    # -- scheduling --------------------------------------------------------

    @property
    def strategy(self):
        """The placement strategy to decide with now (``StrategyProvider``)."""
        return self.strategies.get()

    def schedule_soon(self, resource_group: str | None = None) -> None:
        """Run a queue pass now (from any thread) over ``resource_group``'s
        queue (None: every group's)."""
        self.wake.set(resource_group)

    def schedule_now(self, presence: Presence | None = None,
                     groups: frozenset[str] | None = None) -> list[str]:
        """One pass over the pending queues of ``groups`` (None: every
        resource group; blocking); ``presence``: who waited for what, to
        cancel abandoned requests."""
        results = queueing.schedule_all(self.session_factory, self.clock(), self.strategy,
                                        presence, self.pending_abandon_after, self.log,
                                        self.queue_memos, lambda: self.waiters.generation,
                                        groups, self.ledger_batches.view,
                                        self.waiters.changes.since)
        return [i for r in results for i in r.admitted]

    def reconcile_hub(self, held: frozenset[str], as_of: dt.datetime,
                      pending: frozenset[tuple[str, str]] = frozenset()) -> ledger.Reconciled:
        """Release what the hub's servers no longer hold, then let the queues
        use it (blocking; the mirror runs it in a worker thread)."""
        return passes.reconcile(self.session_factory, held, as_of, pending, self.reconcile_grace,
                                self.clock(), self.log, self.schedule_soon)

    # -- virtual folders ---------------------------------------------------

    @property
    def vfolder_storage(self) -> vfolders.Storage:
        """What creating a folder needs besides the database."""
        return vfolders.Storage(hosts=self.vfolder_hosts_resolved,
                                default_host=self.default_vfolder_host,
                                uid=self.vfolder_uid, gid=self.vfolder_gid,
                                quota=storage.QuotaApplier())

    def folder_access(self, principal, folder_id: str, need: str) -> vfolders.FolderAccess:
        """What ``principal`` may do with a folder and where its files are
        (need: read | write | delete), in a transaction of its own (blocking).
        Raises Hidden (404), Denied (403) or StorageUnavailable (503)."""
        with db.transaction(self.session_factory) as s:
            return vfolders.access(s, principal, folder_id, need, self.vfolder_hosts_resolved)

    def measure_usage(self) -> int:
        """Scan every folder and cache its usage (blocking); returns how many were measured."""
        return passes.measure_usage(self.session_factory, self.vfolder_hosts_resolved, self.clock)

    # -- images and containers ---------------------------------------------

    #: makes the docker-py client of one host (tests put a fake here)
    docker_client = staticmethod(dockerscan.docker_client)

    def docker_host_urls(self) -> list[str]:
        """The Docker engines of the nodes and of ``docker_hosts``, each once (blocking)."""
        with db.transaction(self.session_factory) as s:
            node_urls = list(s.scalars(select(Node.backend_url).where(Node.backend_url != "")
                                       .order_by(Node.name)))
        return dockerscan.docker_hosts(node_urls, self.docker_hosts)

    async def scan_images(self) -> registry.ScanReport:
        """Ask every Docker host for its session images and record them."""
        return await passes.scan_images(self.docker_host_urls, self.docker_client,
                                        self.docker_timeout, self.session_factory, self.clock,
                                        self.log)

    async def _scan_at_start(self) -> None:
        await passes.scan_at_start(self.scan_images, self.log)

    async def container_exited(self, ex: dockerevents.Exit) -> None:
        """A session container exited: release its allocation (after
        ``container_exit_release_delay``, unless its spawner did) and let
        the queues use it."""
        await passes.container_exited(ex, self.container_exit_release_delay,
                                      self.session_factory, self.clock, self.hub_base_url,
                                      self.log, self.schedule_soon)

    # -- session logs ------------------------------------------------------

    def purge_logs(self) -> list[str]:
        """One pass of the log retention rule (blocking); returns the purged allocations."""
        return passes.purge_logs(self.session_factory, self.log_store, self.clock(),
                                 self.session_log_retention_days, self.log)

    # -- idle reclamation -----------------------------------------

    _reclaimer: Reclaimer | None = None

    @property
    def reclaimer(self) -> Reclaimer:
        """The reclaim pass and the utilization readings it keeps."""
        if self._reclaimer is None:
            self._reclaimer = Reclaimer(self.session_factory, self.log)
        return self._reclaimer

    #: the GPU source of the utilization rule (tests put a declared one here)
    gpu_source: sources.GPUSource | None = None

    async def reclaim_now(self) -> PassReport:
        """One pass of idle reclamation: warn, reclaim, record (``reclaim_*`` settings)."""
        if self.gpu_source is None:
            self.gpu_source = (sources.NVMLGPUSource() if self.reclaim_gpu_source == "nvml"
                               else sources.NoGPUSource())
        return await self.reclaimer.run(
            self.clock(), hub=self.mirror.hub, slack=self.reclaim_interval,
            shadow=self.reclaim_shadow_mode, default_warning=self.reclaim_warning,
            docker_hosts=list(self.docker_hosts), make_client=self.docker_client,
            docker_timeout=self.docker_timeout, gpu=self.gpu_source,
            released=self.schedule_soon, save_wait=self.reclaim_save_wait,
            sample_window=self.usage_sample_window)

    def check_shares(self) -> str | None:
        """One share check of this machine's node (``share_check_*`` settings)."""
        return passes.check_shares(self.session_factory, self.share_check_node,
                                   self.mps_pipe_directory, self.hami_library, self.log,
                                   self.schedule_soon)

    # -- model serving -------------------------------------------

    _serving: ServingController | None = None

    @property
    def serving(self) -> ServingController:
        """The serving controller: endpoints' replicas through the hub."""
        if self._serving is None:
            self._serving = ServingController(self.session_factory, self.log)
        return self._serving

    _serving_reports: Reports | None = None

    @property
    def serving_reports(self) -> Reports:
        """What the gateway last reported: replicas' health, calls (serving/health.py)."""
        if self._serving_reports is None:
            self._serving_reports = Reports()
        return self._serving_reports

    async def serve_now(self) -> list:
        """One pass of the serving controller (the hub must be known)."""
        return await self.serving.run(self.mirror.hub, self.clock)

    # -- background --------------------------------------------------------

    def background(self) -> list:
        """The background work of a running service, in start order (coroutines)."""
        stats = self.pass_stats
        work = [
            passes.queue_loop(self.mirror.reconciled,
                              lambda: self.waiters.presence(self.pending_abandon_after),
                              timed(stats, "schedule", self.schedule_now), self.wake,
                              lambda: self.schedule_interval, self.log,
                              lambda: self.schedule_min_interval),
            passes.repeat("log retention pass", timed(stats, "log-retention", self.purge_logs),
                          lambda: self.session_log_purge_interval, self.log),
            passes.repeat("vfolder usage scan", timed(stats, "usage-scan", self.measure_usage),
                          lambda: self.vfolder_usage_interval, self.log),
        ]
        work.append(passes.repeat_async("reclaim pass",
                                        timed_async(stats, "reclaim", self.reclaim_now),
                                        lambda: self.reclaim_interval, self.log))
        if self.serving_interval > 0:
            work.append(self.serving.loop(lambda: self.mirror.hub, self.clock,
                                          lambda: self.serving_interval))
        if self.share_check_interval > 0:
            work.append(passes.repeat("GPU share check", self.check_shares,
                                      lambda: self.share_check_interval, self.log))
        if self.scan_images_at_start:
            work.append(self._scan_at_start())
        if self.follow_docker_events:
            work.append(dockerevents.follow(self.docker_host_urls, self.docker_client,
                                            self.container_exited, self.log,
                                            timeout=self.docker_timeout))
        return work
