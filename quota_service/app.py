"""The hubgrid service: a hub-managed JupyterHub service serving the REST API.

Started by the hub (see ``hub_ext.config.configure``), it reads the hub's
service environment ($JUPYTERHUB_SERVICE_URL, $JUPYTERHUB_SERVICE_PREFIX,
$JUPYTERHUB_API_TOKEN, ...), migrates its database to the newest schema and
serves ``<prefix>api/v1/...``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hmac
import logging
import os
import secrets
import signal
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlparse

from jupyterhub.services.auth import HubOAuth
from jupyterhub.traitlets import ByteSpecification
from sqlalchemy import select
from sqlalchemy.engine import make_url
from tornado import web
from tornado.httpserver import HTTPServer
from traitlets import Bool, Dict, Enum, Float, Integer, List, TraitError, Unicode, default, validate
from traitlets.config import Application

from .core import db, forwarded
from .sessions import dockerscan, registry, logs as sessionlogs
from .scheduling import ledger, inventory as resources
from .runtime import lifecycle
from .sessions import dockerevents
from .scheduling import queue as queueing, waiters
from .storage import hosts as storage, folders as vfolders
from .tenancy import superadmins
from .core import slots as slotlib
from .scheduling.discovery import local_gpus
from .api import browser, openapi
from .api.base import JSONNotFoundHandler
from .tenancy.hubmirror import HubAPI, HubMirror
from .core.models import Domain, Node, Project, ResourceGroup, ResourceGroupGrant, ResourcePolicy
from .scheduling.placement import BestFit, FirstFit, Hubgrid, WorkloadProfile

API_VERSION = "v1"


def _url_dir(path: str) -> str:
    """``prefix`` -> ``/prefix/``; empty -> ``/``."""
    inner = path.strip("/")
    return f"/{inner}/" if inner else "/"


class HubgridService(Application):
    """The hubgrid service: tenancy, policies and the access log, as a hub-managed service.

    Its settings come from the environment ``hub_ext.config.configure`` sets,
    from command-line flags (``--HubgridService.name=value``) and from the
    Python config file named by ``config_file``.
    """

    name = "hubgrid-service"
    description = "hubgrid: tenancy, quotas and scheduling for JupyterHub"

    @default("log_level")
    def _default_log_level(self):
        # reconciliations, admissions from the queue and refusals reach the
        # hub's output (the hub runs the service with its stdout and stderr)
        return logging.INFO

    @default("log_format")
    def _default_log_format(self):
        return "[%(levelname)1.1s %(asctime)s.%(msecs).03d hubgrid %(module)s:%(lineno)d] %(message)s"

    @default("log_datefmt")
    def _default_log_datefmt(self):
        return "%Y-%m-%d %H:%M:%S"

    pid_file = Unicode(
        "hubgrid-service.pid",
        help="""File the running service records its PID in (relative to its
        working directory, the hub's state directory under
        ``hub_ext.config.configure``). A service that finds another live
        hubgrid service recorded there (left running by a hub that was killed)
        ends it before taking the port. Empty: no PID file.""",
    ).tag(config=True)

    exit_with_parent = Bool(
        True,
        help="""Stop when the process that started the service (the hub) dies,
        so that a killed hub leaves no service holding the port. Turn off only
        when a process supervisor, not the hub, runs the service.""",
    ).tag(config=True)

    config_file = Unicode(
        help="""Python config file of the service (``c.HubgridService.x = ...``),
        read at start if set. Also $HUBGRID_CONFIG_FILE.""",
    ).tag(config=True)

    @default("config_file")
    def _default_config_file(self):
        return os.environ.get("HUBGRID_CONFIG_FILE", "")

    db_url = Unicode(
        help="""SQLAlchemy URL of the service database.

        SQLite is the embedded default; use PostgreSQL in production::

            c.HubgridService.db_url = "postgresql+psycopg2://hubgrid:SECRET@db.example.org/hubgrid"

        The schema is migrated to the newest version (Alembic) at start.
        Also settable with $HUBGRID_DB_URL.
        """,
    ).tag(config=True)

    @default("db_url")
    def _default_db_url(self):
        return os.environ.get("HUBGRID_DB_URL", "sqlite:///hubgrid.sqlite")

    default_domain = Unicode(
        "default",
        help="""Domain that users logging in for the first time join, when that
        domain allows it (its ``allow_first_login`` flag). Empty: nobody joins
        by logging in; admins add users through the API.""",
    ).tag(config=True)

    default_project = Unicode(
        "default",
        help="""Project created in the default domain at the first start, so a
        new installation is usable at once. Empty: none.""",
    ).tag(config=True)

    bootstrap_superadmin = Unicode(
        "",
        help="""User made superadmin at start when no superadmin can act
        (none exists yet, or none is active in an active domain), e.g.
        ``"admin"``: created in the default domain if new, re-activated (and
        moved to the default domain if theirs is inactive) if not. The API
        refuses any change that would leave no active superadmin; this
        repairs a database where it happened anyway. Also
        $HUBGRID_BOOTSTRAP_SUPERADMIN.""",
    ).tag(config=True)

    @default("bootstrap_superadmin")
    def _default_bootstrap_superadmin(self):
        return os.environ.get("HUBGRID_BOOTSTRAP_SUPERADMIN", "")

    internal_token = Unicode(
        help="""Secret the hub's authenticator presents on the internal
        endpoints (``Authorization: hubgrid-internal TOKEN``). Set by
        hub_ext.config from a file only root can read; $HUBGRID_INTERNAL_TOKEN.""",
    ).tag(config=True)

    @default("internal_token")
    def _default_internal_token(self):
        return os.environ.get("HUBGRID_INTERNAL_TOKEN", "")

    service_url = Unicode(
        help="URL the service listens on; the hub sets $JUPYTERHUB_SERVICE_URL.",
    ).tag(config=True)

    @default("service_url")
    def _default_service_url(self):
        return os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101")

    service_prefix = Unicode(
        help="URL prefix of the service behind the hub's proxy; $JUPYTERHUB_SERVICE_PREFIX.",
    ).tag(config=True)

    @default("service_prefix")
    def _default_service_prefix(self):
        return os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/hubgrid/")

    trusted_proxies = forwarded.Networks(
        default_value=list(forwarded.LOOPBACK),
        help="""Addresses or networks (CIDR) of the proxies in front of the
        service whose forwarded headers are believed. The access log records
        the address of the client that called the API: the peer address of
        the connection, unless the peer is one of these; then the right-most
        address of ``X-Forwarded-For`` that is not a trusted proxy (each proxy
        appends its peer), or ``X-Real-IP`` if no ``X-Forwarded-For`` was sent.
        The default, the loopback addresses, is where the hub's
        configurable-http-proxy runs when it starts the service on the same
        host. Add the address of every further proxy in front of the hub::

            c.HubgridService.trusted_proxies = ["127.0.0.1", "::1", "10.0.0.0/24"]

        Callers on a trusted address can claim any source address; an empty
        list believes no forwarded header (every entry shows the peer).
        """,
    ).tag(config=True)

    hub_sync_interval = Float(
        60.0,
        help="""Seconds between full mirrors of domains and projects into hub
        groups. Every tenancy write also triggers a mirror at once.""",
    ).tag(config=True)

    nodes = List(
        Dict(),
        help="""Nodes to register at start (added if missing), e.g.::

            c.HubgridService.nodes = [
                {"name": "gpu-01", "resource_group": "default",
                 "capacity": {"cpu": "64", "mem": "512G"},
                 "devices": [{"index": i, "model": "A100", "memory": 80 * 2**30}
                             for i in range(8)],
                 "backend_url": "tcp://gpu-01:2376"},
            ]

        GPU devices come from here on nodes where NVML cannot run (the same
        way Backend.AI's mock accelerator declares them).""",
    ).tag(config=True)

    register_local_node = Bool(
        True,
        help="""Register this machine as a node of the default resource group at
        first start: its CPUs and memory, and its GPUs found with NVML (none
        when NVML is unavailable).""",
    ).tag(config=True)

    placement_strategy = Enum(
        ["hubgrid", "best-fit", "first-fit"],
        "hubgrid",
        help="""How the scheduler picks a node and GPUs: ``hubgrid`` (the
        default: fragmentation-aware packing against the mix of requests this
        cluster has seen, see docs/scheduling.md), ``best-fit`` or ``first-fit``.""",
    ).tag(config=True)

    profile_window = Integer(
        2000,
        help="""How many recent requests describe the expected workload for the
        ``hubgrid`` strategy (re-read every ``profile_refresh`` seconds).""",
    ).tag(config=True)

    profile_refresh = Float(
        600.0, help="Seconds between rebuilds of the workload profile."
    ).tag(config=True)

    reconcile_grace = Float(
        5.0,
        help="""Seconds a hub-held allocation may exist before the service
        checks that a hub server holds it (the spawner records it as soon as
        the service answers; a server the hub lists as pending holds the
        allocations of its name meanwhile). Older ones no server holds are
        released: at start, as soon as the hub answers (the queues wait for
        it), then whenever an allocation leaves its grace without a server
        seen holding it, and with every mirror pass (``hub_sync_interval``).
        After a crash of the hub (which restarts the service) capacity is held
        by nothing for about this long at most.""",
    ).tag(config=True)

    pending_abandon_after = Float(
        10.0,
        help="""Seconds a pending hub request may go without anybody waiting
        for it (the spawner's long-poll of ``GET internal/allocations/{id}?wait=N``,
        or any GET of it) before the queue cancels it as abandoned instead of
        admitting it: its spawner died with its hub. A new request, and every
        request after the service (re)starts, gets this long to be waited for.
        Must be longer than the spawners' pause between two long-polls, e.g.
        ``c.HubgridService.pending_abandon_after = 30``.""",
    ).tag(config=True)

    follow_docker_events = Bool(
        True,
        help="""Follow the container ``die`` events of every Docker engine of a
        node (and of ``docker_hosts``): when a session container exits behind
        the hub's back, its allocation is released within seconds (reason "the
        container exited (code N)") instead of at the hub's next poll.""",
    ).tag(config=True)

    container_exit_release_delay = Float(
        2.0,
        help="""Seconds between a session container's exit event and its release
        by the service: a stop the hub made itself is released by its spawner
        meanwhile, with the spawner's own reason (a second release changes
        nothing).""",
    ).tag(config=True)

    schedule_interval = Float(
        5.0,
        help="""Seconds between passes over the pending queues (pending
        timeouts, head-of-line passes). Releases trigger a pass at once.""",
    ).tag(config=True)

    hub_base_url = Unicode(
        help="""The hub's base URL, under which session apps are served
        (``{hub_base_url}user/{name}/...``); the hub gives it to its services
        as $JUPYTERHUB_BASE_URL.""",
    ).tag(config=True)

    @default("hub_base_url")
    def _default_hub_base_url(self):
        return _url_dir(os.environ.get("JUPYTERHUB_BASE_URL", ""))

    @validate("hub_base_url")
    def _valid_hub_base_url(self, proposal):
        return _url_dir(proposal["value"])

    # -- images ------------------------------------------------------------

    docker_hosts = List(
        Unicode(),
        help="""Docker engines to scan for session images, besides the nodes'
        ``backend_url`` (nodes whose URL is a Docker URL are always scanned), e.g.::

            c.HubgridService.docker_hosts = ["unix:///var/run/docker.sock",
                                             "tcp://127.0.0.1:2375"]

        An image is a session image when it carries the label
        ``ai.hubgrid.session-image``; see docs/admin.md for its other labels.
        Also $HUBGRID_DOCKER_HOSTS (comma-separated).""",
    ).tag(config=True)

    @default("docker_hosts")
    def _default_docker_hosts(self):
        # $HUBGRID_DOCKER_HOSTS: comma-separated (the Docker demo sets it)
        return [u.strip() for u in os.environ.get("HUBGRID_DOCKER_HOSTS", "").split(",")
                if u.strip()]

    docker_timeout = Float(
        10.0,
        help="""Seconds to wait for a Docker engine during a scan; a host that
        does not answer in time is reported in the scan's result.""",
    ).tag(config=True)

    scan_images_at_start = Bool(
        True,
        help="""Scan the Docker hosts for session images once at start, in the
        background (a failure is only logged). Superadmins scan again with
        ``POST images/scan``.""",
    ).tag(config=True)

    # -- session logs ------------------------------------------------------

    session_log_dir = Unicode(
        help="""Directory of the per-session logs (one file per allocation,
        readable by the service's user only). Default: ``session-logs`` next to
        the SQLite database, else in the service's working directory (the hub
        runs it in its state directory).""",
    ).tag(config=True)

    def _state_path(self, name: str) -> str:
        """``name`` next to the SQLite database, else in the working directory
        (the hub runs the service in its state directory)."""
        try:
            url = make_url(self.db_url)
        except Exception:
            url = None
        if url is not None and url.get_backend_name() == "sqlite" and url.database \
                and url.database != ":memory:":
            return str(Path(url.database).resolve().parent / name)
        return str(Path(name).resolve())

    @default("session_log_dir")
    def _default_session_log_dir(self):
        return self._state_path("session-logs")

    session_log_max_bytes = ByteSpecification(
        2**20,
        help="""The most a session's log keeps (e.g. ``"1M"``, at least 4K): past
        it the oldest output is dropped and a line at the top says so.""",
    ).tag(config=True)

    @validate("session_log_max_bytes")
    def _valid_session_log_max_bytes(self, proposal):
        if proposal["value"] < sessionlogs.MIN_BYTES:
            raise TraitError(f"session_log_max_bytes: at least {sessionlogs.MIN_BYTES} bytes")
        return proposal["value"]

    session_log_retention_days = Integer(
        30,
        help="""Days a session's log is kept after the session is released; then
        it is deleted and reading it answers 410. 0: keep logs forever.""",
    ).tag(config=True)

    @validate("session_log_retention_days")
    def _valid_retention(self, proposal):
        if proposal["value"] < 0:
            raise TraitError("session_log_retention_days: 0 (forever) or more")
        return proposal["value"]

    session_log_purge_interval = Float(
        3600.0,
        help="""Seconds between passes of the log retention rule (one also runs
        at start).""",
    ).tag(config=True)

    # -- virtual folders (issue #5) -----------------------------------------

    vfolder_hosts = Dict(
        help="""Storage hosts of virtual folders: name -> ``{"path": DIR}``, e.g.::

            c.HubgridService.vfolder_hosts = {
                "local": {"path": "/srv/hubgrid/vfolders"},
                "nfs": {"path": "/mnt/nfs/hubgrid"},   # mounted at this path on every node
            }

        A folder's files live in ``<path>/<folder id>``; ``<path>/.staging``
        holds partial uploads. Each host's capabilities are detected at start:
        ``usage`` always (measured by scanning), ``quota`` when the path is on
        XFS mounted with ``prjquota`` and ``xfs_quota`` is installed (then the
        owners' ``max_vfolder_size`` is also a kernel-enforced hard limit);
        ``"quota": False`` turns XFS quotas off for a host, ``"xfs_project_base"``
        moves hubgrid's XFS project ids (default 1000000). Which hosts a
        domain, project or user may use is policy (``allowed_vfolder_hosts``;
        see docs/vfolders.md). Default: one host ``local`` at ``vfolders`` next
        to the SQLite database, else in the service's working directory.""",
    ).tag(config=True)

    @default("vfolder_hosts")
    def _default_vfolder_hosts(self):
        return {"local": {"path": self._state_path("vfolders")}}

    @validate("vfolder_hosts")
    def _valid_vfolder_hosts(self, proposal):
        try:
            return storage.check_host_config(proposal["value"])
        except storage.HostConfigError as e:
            raise TraitError(str(e)) from None

    default_vfolder_host = Unicode(
        "local",
        help="""The storage host of a new folder when its creator names none
        (it must be one of ``vfolder_hosts`` the creator may use).""",
    ).tag(config=True)

    vfolder_uid = Integer(
        1000,
        help="""Owner (uid) of new folder directories, the uid sessions run as
        (jovyan is 1000). Applied only when the service runs as root.""",
    ).tag(config=True)

    vfolder_gid = Integer(
        100,
        help="""Group (gid) of new folder directories (mode 2770), the gid
        sessions run as (users is 100). Applied only when the service runs as root.""",
    ).tag(config=True)

    vfolder_usage_interval = Float(
        600.0,
        help="""Seconds between scans measuring every folder's usage (one also
        runs at start). Between scans the files API keeps the cached usage
        right; writes made inside sessions show at the next scan.""",
    ).tag(config=True)

    vfolder_staging_max_age_hours = Float(
        24.0,
        help="""Hours after which a leftover in a host's ``.staging`` directory
        (the file of a plain upload a crash interrupted, half-written tus
        state) is deleted. The sweep runs at the first upload to a host
        after the service starts, then at most hourly with uploads; uploads
        in progress are never swept.""",
    ).tag(config=True)

    vfolder_tus_expiry_hours = Float(
        168.0,
        help="""Hours a resumable (tus) upload may stay idle before the sweep
        deletes its bytes and gives back the quota it holds, e.g.
        ``c.HubgridService.vfolder_tus_expiry_hours = 48``.""",
    ).tag(config=True)

    vfolder_hosts_resolved: dict[str, storage.Host]

    def init_storage(self) -> None:
        """Resolve the storage hosts: make their directories, detect capabilities."""
        self.vfolder_hosts_resolved = storage.resolve_hosts(self.vfolder_hosts)
        for host in self.vfolder_hosts_resolved.values():
            self.log.info("vfolder host %s at %s (%s)", host.name, host.path,
                          ", ".join(host.capabilities))
        if self.default_vfolder_host not in self.vfolder_hosts_resolved:
            self.log.warning("default_vfolder_host %r is not one of vfolder_hosts (%s): "
                             "new folders must name their host", self.default_vfolder_host,
                             ", ".join(sorted(self.vfolder_hosts_resolved)))

    @property
    def vfolder_storage(self) -> vfolders.Storage:
        """What creating a folder needs besides the database."""
        return vfolders.Storage(hosts=self.vfolder_hosts_resolved,
                                default_host=self.default_vfolder_host,
                                uid=self.vfolder_uid, gid=self.vfolder_gid,
                                quota=storage.QuotaApplier())

    def folder_access(self, principal, folder_id: str, need: str) -> vfolders.FolderAccess:
        """What ``principal`` may do with a folder and where its files are
        (need: read | write | delete), in a transaction of its own. Raises
        Hidden (404), Denied (403) or StorageUnavailable (503)."""
        with db.transaction(self.session_factory) as s:
            return vfolders.access(s, principal, folder_id, need, self.vfolder_hosts_resolved)

    def folder_usage_changed(self, folder_id: str, delta: int) -> None:
        """After a write (delta > 0) or delete (delta < 0) in a folder: keep its
        cached usage right, in a transaction of its own."""
        with db.transaction(self.session_factory) as s:
            vfolders.add_usage(s, folder_id, delta)

    def measure_usage(self) -> int:
        """Scan every folder and cache its usage; returns how many were measured."""
        from .core.models import VFolder

        with db.transaction(self.session_factory) as s:
            ids = list(s.scalars(select(VFolder.id)))
        done = 0
        for folder_id in ids:
            with db.transaction(self.session_factory) as s:
                if vfolders.measure(s, folder_id, self.vfolder_hosts_resolved,
                                    self.clock()) is not None:
                    done += 1
        return done


    def clock(self) -> dt.datetime:
        """The service's notion of now (tests may replace it)."""
        return dt.datetime.now(dt.timezone.utc)

    # -- setup -------------------------------------------------------------

    def internal_token_matches(self, token: str) -> bool:
        return bool(self.internal_token) and hmac.compare_digest(
            token.encode(), self.internal_token.encode()
        )

    def api_url(self, *parts: str) -> str:
        return self.api_prefix + "/".join(quote(p, safe="") for p in parts)

    @property
    def api_prefix(self) -> str:
        return f"{self.service_prefix.rstrip('/')}/api/{API_VERSION}/"

    def init_db(self) -> None:
        self.engine = db.make_engine(self.db_url)
        db.upgrade(self.engine)
        self.session_factory = db.session_factory(self.engine)
        self.bootstrap()

    def bootstrap(self) -> None:
        """Default domain and project, and a first superadmin (idempotent)."""
        with db.transaction(self.session_factory) as s:
            domain = None
            if self.default_domain:
                domain = s.scalar(select(Domain).where(Domain.name == self.default_domain))
                if domain is None:
                    domain = Domain(
                        name=self.default_domain,
                        description="Created at first start",
                        allow_first_login=True,
                    )
                    s.add(domain)
                    s.flush()
                    if self.default_project:
                        s.add(Project(domain=domain, name=self.default_project,
                                      description="Created at first start"))
            if s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == "default")) is None:
                s.add(ResourcePolicy(name="default"))
            rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == "default"))
            if rg is None:
                rg = ResourceGroup(name="default", description="Created at first start")
                s.add(rg)
                s.flush()
                if domain is not None:
                    rg.grants.append(ResourceGroupGrant(domain_id=domain.id))
                if self.register_local_node:
                    self._add_node(s, self.local_node_spec())
            for spec in self.nodes:
                if s.scalar(select(Node).where(Node.name == spec["name"])) is None:
                    self._add_node(s, spec)
            if domain is not None:
                done = superadmins.restore(s, self.bootstrap_superadmin, domain,
                                           self.default_project)
                if done:
                    self.log.info("bootstrap_superadmin: %s", done)

    @staticmethod
    def local_node_spec() -> dict:
        import socket

        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return {
            "name": socket.gethostname().lower() or "localhost",
            "resource_group": "default",
            "capacity": {"cpu": str(os.cpu_count() or 1), "mem": str(mem)},
            "devices": local_gpus(),
            "backend_url": "",
        }

    def _add_node(self, s, spec: dict) -> None:
        from .core.schemas import NodeCreate, parse

        body = parse(NodeCreate, spec)
        rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == body.resource_group))
        if rg is None:
            raise ValueError(f"node {body.name}: no resource group {body.resource_group!r}")
        s.add(resources.new_node(rg, body))
        self.log.info("registered node %s in resource group %s", body.name, rg.name)

    _strategy = None
    _strategy_built: float = 0.0

    @property
    def strategy(self):
        """The placement strategy; ``hubgrid``'s workload profile is rebuilt
        from the ledger every ``profile_refresh`` seconds, in a thread of its
        own: callers hold the ledger lock, and on SQLite a second transaction
        of the same thread would wait for it forever."""
        if self.placement_strategy != "hubgrid":
            return {"best-fit": BestFit, "first-fit": FirstFit}[self.placement_strategy]()
        if self._strategy is None:  # at start (initialize), before any transaction
            self.rebuild_strategy()
        elif time.monotonic() - self._strategy_built > self.profile_refresh:
            self._strategy_built = time.monotonic()  # one rebuild at a time
            threading.Thread(target=self.rebuild_strategy, name="workload profile",
                             daemon=True).start()
        return self._strategy

    def rebuild_strategy(self) -> None:
        try:
            self._strategy = Hubgrid(self.workload_profile())
        except Exception:
            self.log.exception("could not rebuild the workload profile; keeping the old one")
            if self._strategy is None:
                self._strategy = Hubgrid(None)
        self._strategy_built = time.monotonic()

    def workload_profile(self) -> WorkloadProfile | None:
        from .core.models import Allocation

        with db.transaction(self.session_factory) as s:
            rows = list(s.scalars(select(Allocation).order_by(Allocation.created_at.desc())
                                  .limit(self.profile_window)))
            requests = [ledger.placement_request(slotlib.from_text(a.slots), a.gpu_models)
                        for a in rows]
        return WorkloadProfile.from_requests(requests, 0.95) if requests else None

    def schedule_soon(self, resource_group: str | None = None) -> None:
        """Run a queue pass now (from any thread)."""
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._schedule_wake.set)
        else:
            self._schedule_wake.set()

    def schedule_now(self, presence: waiters.Presence | None = None) -> list[str]:
        """One pass over every resource group's pending queue (blocking);
        ``presence``: who waited for what, to cancel abandoned requests."""
        results = queueing.schedule_all(self.session_factory, self.clock(), self.strategy,
                                        presence, self.pending_abandon_after, self.log,
                                        self.queue_memos, lambda: self.waiters.generation)
        return [i for r in results for i in r.admitted]

    async def _schedule_loop(self) -> None:
        # after a (re)start, nothing is admitted from the queue before the
        # ledger was reconciled with the hub's servers
        await self.mirror.reconciled.wait()
        while True:
            try:
                presence = self.waiters.presence(self.pending_abandon_after)
                await asyncio.to_thread(self.schedule_now, presence)
            except Exception:
                self.log.exception("scheduling pass failed; will retry")
            try:
                await asyncio.wait_for(self._schedule_wake.wait(), timeout=self.schedule_interval)
            except asyncio.TimeoutError:
                pass
            self._schedule_wake.clear()

    def init_hub(self) -> None:
        """Hub token authentication and the mirror, when run by a hub.

        Without $JUPYTERHUB_API_TOKEN (the service run on its own, e.g. in
        tests) only keypairs authenticate and nothing is mirrored.
        """
        api_url = os.environ.get("JUPYTERHUB_API_URL")
        token = os.environ.get("JUPYTERHUB_API_TOKEN")
        self.hub_auth = HubOAuth(api_token=token, cache_max_age=10, parent=self) if token else None
        hub = HubAPI(api_url, token) if api_url and token else None
        self.mirror = HubMirror(self.session_factory, hub, self.hub_sync_interval, self.log,
                                reconcile=self.reconcile_hub)

    def reconcile_hub(self, held: frozenset[str], as_of: dt.datetime,
                      pending: frozenset[tuple[str, str]] = frozenset()) -> ledger.Reconciled:
        """Release what the hub's servers no longer hold, then let the queues
        use it (blocking; the mirror runs it in a worker thread)."""
        with db.ledger_transaction(self.session_factory) as s:
            done = ledger.reconcile(s, held, as_of, self.reconcile_grace, self.clock(), pending)
        if done.released:
            self.log.info("reconciled with the hub (%d server(s) hold an allocation, %d "
                          "pending): released %d no server holds: %s", len(held), len(pending),
                          len(done.released), ", ".join(done.released))
            self.schedule_soon()
        return done

    def make_app(self) -> web.Application:
        api = self.api_prefix
        prefix = self.service_prefix.rstrip("/") + "/"
        kwargs = {"service": self}
        handlers = [
            (api + path + "/?", handler, kwargs)
            for path, handler in openapi.all_routes()
        ]
        handlers += [
            (prefix + "oauth_callback", browser.OAuthCallbackHandler, kwargs),
            (prefix + "?", browser.HomeHandler, kwargs),
            (api + ".*", JSONNotFoundHandler, kwargs),
        ]
        return web.Application(
            handlers,
            cookie_secret=os.environ.get("JUPYTERHUB_COOKIE_SECRET") or secrets.token_bytes(32),
            xsrf_cookies=False,
        )

    # -- images ------------------------------------------------------------

    #: makes the docker-py client of one host (tests put a fake here)
    docker_client = staticmethod(dockerscan.docker_client)

    def docker_host_urls(self) -> list[str]:
        from .core.models import Node

        with db.transaction(self.session_factory) as s:
            node_urls = list(s.scalars(select(Node.backend_url).where(Node.backend_url != "")
                                       .order_by(Node.name)))
        return dockerscan.docker_hosts(node_urls, self.docker_hosts)

    async def scan_images(self) -> registry.ScanReport:
        """Ask every Docker host for its session images and record them."""
        found, errors = await dockerscan.scan(self.docker_host_urls(), self.docker_client,
                                              self.docker_timeout)
        with db.transaction(self.session_factory) as s:
            report = registry.apply_scan(s, found, errors, self.clock())
        for host in report.hosts:
            if not host["ok"]:
                self.log.warning("image scan: docker host %s: %s", host["url"], host["error"])
        for item in report.skipped:
            self.log.warning("image scan: skipped %s: %s", item["name"], item["reason"])
        self.log.info("image scan: %s", report.summary)
        return report

    async def _scan_at_start(self) -> None:
        try:
            await self.scan_images()
        except Exception:
            self.log.exception("image scan at start failed (scan again with POST images/scan)")

    async def container_exited(self, ex: dockerevents.Exit) -> None:
        """A session container exited: release its allocation (after
        ``container_exit_release_delay``, unless its spawner did) and let
        the queues use it."""
        await asyncio.sleep(self.container_exit_release_delay)
        model = await asyncio.to_thread(dockerevents.release_exited, self.session_factory, ex,
                                        self.clock(), self.hub_base_url)
        if model is not None:
            self.log.info("container %s of allocation %s (%s/%s) on %s exited (code %s): "
                          "released it %.1f s after the exit", ex.container[:12], ex.allocation,
                          model["user"], model["server_name"], ex.engine, ex.exit_code,
                          max(time.time() - ex.at, 0.0))
            self.schedule_soon()

    # -- session logs ------------------------------------------------------

    log_store: sessionlogs.LogStore

    def init_logs(self) -> None:
        root = Path(self.session_log_dir)
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.log_store = sessionlogs.LogStore(root, self.session_log_max_bytes)

    def purge_logs(self) -> list[str]:
        """One pass of the log retention rule; returns the purged allocations."""
        with db.transaction(self.session_factory) as s:
            purged = sessionlogs.purge(s, self.log_store, self.clock(),
                                       self.session_log_retention_days)
        if purged:
            self.log.info("purged the logs of %d session(s) released more than %d days ago",
                          len(purged), self.session_log_retention_days)
        return purged

    async def _repeat(self, what: str, run, interval: str) -> None:
        """Run the blocking ``run()`` in a worker thread now, then every
        ``self.<interval>`` seconds; a failing pass is logged and retried."""
        while True:
            try:
                await asyncio.to_thread(run)
            except Exception:
                self.log.exception("%s failed; will retry", what)
            await asyncio.sleep(getattr(self, interval))

    _schedule_wake: asyncio.Event

    _parent_pid: int

    def initialize(self, argv=None):
        self._parent_pid = os.getppid()
        super().initialize(argv)
        if self.config_file:
            self.load_config_file(self.config_file)
        self._schedule_wake = asyncio.Event()
        self.init_db()
        self.waiters = waiters.Waiters()
        self.waiters.watch(self.session_factory)
        self.queue_memos: dict[str, queueing.Memo] = {}
        self.strategy  # noqa: B018 - built now, outside any transaction
        self.init_logs()
        self.init_storage()
        self.init_hub()

    async def serve(self) -> None:
        url = urlparse(self.service_url)
        pid_file = Path(self.pid_file) if self.pid_file else None
        if pid_file is not None:
            lifecycle.claim_pid_file(pid_file, self.log)
        # no xheaders: the handlers believe forwarded headers only from trusted_proxies
        server = HTTPServer(self.make_app())
        lifecycle.listen(server, url.port or 80, url.hostname or "127.0.0.1", self.log)
        self.log.info("hubgrid service at %s (API %s)", self.service_url, self.api_prefix)
        self._loop = asyncio.get_running_loop()
        self.mirror.start()
        self.mirror.request_sync()
        scheduler = asyncio.ensure_future(self._schedule_loop())
        housekeeping = [
            asyncio.ensure_future(self._repeat("log retention pass", self.purge_logs,
                                               "session_log_purge_interval")),
            asyncio.ensure_future(self._repeat("vfolder usage scan", self.measure_usage,
                                               "vfolder_usage_interval")),
        ]
        if self.scan_images_at_start:
            housekeeping.append(asyncio.ensure_future(self._scan_at_start()))
        if self.follow_docker_events:
            housekeeping.append(asyncio.ensure_future(dockerevents.follow(
                self.docker_host_urls, self.docker_client, self.container_exited, self.log,
                timeout=self.docker_timeout)))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if self.exit_with_parent:
            housekeeping.append(asyncio.ensure_future(
                lifecycle.watch_parent(self._parent_pid, stop, 1.0, self.log)))
        await stop.wait()
        server.stop()
        if pid_file is not None:
            lifecycle.release_pid_file(pid_file)
        scheduler.cancel()
        for task in housekeeping:
            task.cancel()
        await self.mirror.stop()

    def start(self):
        asyncio.run(self.serve())


main = HubgridService.launch_instance

if __name__ == "__main__":
    main()
