"""The hubgrid service: a hub-managed JupyterHub service serving the REST API.

Started by the hub (see ``hub_ext.config.configure``), it reads the hub's
service environment ($JUPYTERHUB_SERVICE_URL, $JUPYTERHUB_SERVICE_PREFIX,
$JUPYTERHUB_API_TOKEN, ...), migrates its database to the newest schema and
serves ``<prefix>api/v1/...``.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import secrets
import signal
from pathlib import Path
from urllib.parse import quote, urlparse

from jupyterhub.services.auth import HubOAuth
from tornado import web
from tornado.httpserver import HTTPServer
from traitlets import (Bool, Dict, Enum, Float, Integer, List, TraitError, Unicode, default,
                       validate)
from traitlets.config import Application

from .api import openapi, routes
from .api.uploadbook import FileUploads
from .core import db, forwarded
from .operations import metrics_export
from .runtime import bootstrap, collector, lifecycle, passes
from .runtime.service import ServiceRuntime
from .runtime.settings import OperationsSettings, ServingSettings, StorageSettings
from .scheduling import presets, queue as queueing, waiters
from .scheduling.strategies import StrategyProvider
from .tenancy import warm
from .tenancy.hubmirror import HubAPI, HubMirror

API_VERSION = "v1"


def _url_dir(path: str) -> str:
    """``prefix`` -> ``/prefix/``; empty -> ``/``."""
    inner = path.strip("/")
    return f"/{inner}/" if inner else "/"


class HubgridService(ServiceRuntime, StorageSettings, OperationsSettings, ServingSettings,
                     Application):
    """The hubgrid service: tenancy, policies and the access log, as a hub-managed service.

    Its settings come from the environment ``hub_ext.config.configure`` sets,
    from command-line flags (``--HubgridService.name=value``) and from the
    Python config file named by ``config_file``. What it does while running
    (queue passes, folder access, image scans, ...) is ``ServiceRuntime``'s.
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

    resource_presets = List(
        Dict(),
        help="""The resource presets every user is offered (as Backend.AI's: a
        name and resource slots): the hub's spawn form and the Lab's launcher
        list them and start on the one marked ``default``, which is also what a
        start naming no ``cpu`` or ``mem`` gets. Each: ``name``, ``slots``
        (``cpu`` and ``mem``, optionally ``gpu`` or ``gpu.shares``), optionally
        ``default`` (exactly one) and ``description``. Read with ``GET
        resource-presets``; a wrong list stops the service with the reason.
        Default: small (0.5 CPU, 1 GiB), medium (1 CPU, 2 GiB; the default),
        large (2 CPU, 4 GiB). Example::

            c.HubgridService.resource_presets = [
                {"name": "s", "slots": {"cpu": "1", "mem": "4G"}, "default": True},
                {"name": "gpu-half", "slots": {"cpu": "4", "mem": "32G", "gpu.shares": "0.5"}},
            ]""",
    ).tag(config=True)

    @default("resource_presets")
    def _default_resource_presets(self):
        return presets.parse_presets(presets.DEFAULT_PRESETS)

    @validate("resource_presets")
    def _valid_resource_presets(self, proposal):
        try:
            return presets.parse_presets(proposal["value"])
        except ValueError as e:
            raise TraitError(f"resource_presets: {e}") from None

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

    schedule_min_interval = Float(
        0.05,
        help="""Seconds at least from the start of one pass over the pending
        queues to the start of the next. A release triggers a pass; the
        releases that come within this time share one pass instead of one
        each (under a storm of releases, passes otherwise run back to back
        and take the CPU and the ledger lock from the requests). A waiting
        request is admitted at most this much later. 0: a pass after
        every wake.""",
    ).tag(config=True)

    @validate("schedule_min_interval")
    def _valid_schedule_min_interval(self, proposal):
        if not 0 <= proposal["value"] <= 10:
            raise TraitError(f"schedule_min_interval {proposal['value']}: from 0 to 10 seconds")
        return proposal["value"]

    gc_young_threshold = Integer(
        20000,
        help="""Objects the service allocates (less those freed) between two
        young garbage collections; what it holds when ready to serve is
        frozen, never collected again. Python's own 700 made a busy service
        collect hundreds of times a second and walk everything it keeps on
        every full collection (a sixth of its CPU under a storm of
        requests). 0: Python's defaults.""",
    ).tag(config=True)

    @validate("gc_young_threshold")
    def _valid_gc_young_threshold(self, proposal):
        if not 0 <= proposal["value"] <= 1_000_000:
            raise TraitError(f"gc_young_threshold {proposal['value']}: from 0 to 1000000")
        return proposal["value"]

    warm_accounts = Integer(
        50_000, min=0, max=1_000_000,
        help="""Keypairs (the most recently used first), users and projects read
        into memory when the service starts, in a few bulk queries, so that no
        caller's first request reads their key, user and project with queries
        of their own (a tenth of the service's CPU in the first thousand
        requests after a start with 300 users). The rest are read at their
        first use. 0: none.""",
    ).tag(config=True)

    docs_url = Unicode(
        "",
        help="""Where your hubgrid documentation is published, linked from the
        service's landing page (the hub's Services -> hubgrid), e.g.::

            c.HubgridService.docs_url = "https://docs.example.org/hubgrid/"

        Empty (the default): the page names the guides in hubgrid's ``docs/``
        folder (user.md, cli.md, admin.md) without a link.""",
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

        An image is registered when it carries the label
        ``ai.hubgrid.session-image`` (Jupyter and batch sessions) or
        ``ai.hubgrid.inference-image`` (replicas of model-serving
        endpoints); see docs/admin.md for its other labels.
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

    def bootstrap(self) -> None:
        """Default domain and project, and a first superadmin (idempotent)."""
        bootstrap.bootstrap(self.session_factory, self.log, default_domain=self.default_domain,
                            default_project=self.default_project,
                            bootstrap_superadmin=self.bootstrap_superadmin,
                            register_local_node=self.register_local_node, nodes=self.nodes)

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

    #: the files API's uploads of this process (quota book, staging files,
    #: usage gate): made by the handlers at the first upload (APIHandler.uploads)
    file_uploads: FileUploads | None = None

    def make_app(self) -> web.Application:
        kwargs = {"service": self}
        return web.Application(
            [(pattern, handler, kwargs)
             for pattern, handler in routes.service_routes(self.service_prefix, self.api_prefix)],
            openapi=openapi.document(self.api_prefix, openapi.oauth_cookie_name(self)),
            metrics=metrics_export.Exporter(self),
            cookie_secret=os.environ.get("JUPYTERHUB_COOKIE_SECRET") or secrets.token_bytes(32),
            xsrf_cookies=False,
        )

    # -- start -------------------------------------------------------------

    _parent_pid: int

    def initialize(self, argv=None):
        self._parent_pid = os.getppid()
        super().initialize(argv)
        if self.config_file:
            self.load_config_file(self.config_file)
        self.wake = passes.Wake()
        self.engine = db.make_engine(self.db_url)
        db.upgrade(self.engine)
        self.session_factory = db.session_factory(self.engine)
        self.bootstrap()
        with db.transaction(self.session_factory) as s:
            warmed = warm.warm(s, self.warm_accounts)
        self.log.info("read %d keypairs and %d users and projects into memory",
                      warmed.keys, warmed.people)
        self.waiters = waiters.Waiters()
        self.waiters.watch(self.session_factory)
        self.queue_memos: dict[str, queueing.Memo] = {}
        self.strategies = StrategyProvider(self.placement_strategy, self.session_factory,
                                           self.profile_window, self.profile_refresh, self.log)
        self.strategies.get()  # built now, outside any transaction
        self.log_store = bootstrap.open_log_store(self.session_log_dir, self.session_log_max_bytes)
        self.vfolder_hosts_resolved = bootstrap.resolve_storage(
            self.vfolder_hosts, self.default_vfolder_host, self.log)
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
        loop = self.wake.loop = asyncio.get_running_loop()
        self.mirror.start()
        self.mirror.request_sync()
        tasks = [asyncio.ensure_future(work) for work in self.background()]
        self.log.debug("garbage collection thresholds %s", collector.settle(self.gc_young_threshold))
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if self.exit_with_parent:
            tasks.append(asyncio.ensure_future(
                lifecycle.watch_parent(self._parent_pid, stop, 1.0, self.log)))
        await stop.wait()
        server.stop()
        if pid_file is not None:
            lifecycle.release_pid_file(pid_file)
        for task in tasks:
            task.cancel()
        await self.mirror.stop()

    def start(self):
        asyncio.run(self.serve())


main = HubgridService.launch_instance

if __name__ == "__main__":
    main()
