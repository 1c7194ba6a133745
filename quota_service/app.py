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
import os
import secrets
import signal
from urllib.parse import quote, urlparse

from jupyterhub.services.auth import HubOAuth
from sqlalchemy import select
from tornado import web
from tornado.httpserver import HTTPServer
from traitlets import Float, Unicode, default
from traitlets.config import Application

from . import db
from .handlers import browser, openapi
from .handlers.base import JSONNotFoundHandler
from .hubsync import HubAPI, HubMirror
from .models import Domain, Project, Role, User

API_VERSION = "v1"


class HubgridService(Application):
    """The hubgrid service: tenancy, policies and the access log, as a hub-managed service.

    Its settings come from the environment ``hub_ext.config.configure`` sets,
    from command-line flags (``--HubgridService.name=value``) and from the
    Python config file named by ``config_file``.
    """

    name = "hubgrid-service"
    description = "hubgrid: tenancy, quotas and scheduling for JupyterHub"

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
        help="""User made superadmin of the default domain at start if no
        superadmin exists yet (e.g. ``"admin"``). Also $HUBGRID_BOOTSTRAP_SUPERADMIN.""",
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

    hub_sync_interval = Float(
        60.0,
        help="""Seconds between full mirrors of domains and projects into hub
        groups. Every tenancy write also triggers a mirror at once.""",
    ).tag(config=True)

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
            name = self.bootstrap_superadmin
            has_superadmin = s.scalar(select(User).where(User.role == Role.superadmin))
            if name and domain is not None and has_superadmin is None:
                user = s.scalar(select(User).where(User.name == name))
                if user is None:
                    s.add(User(name=name, domain=domain, role=Role.superadmin))
                else:
                    user.role = Role.superadmin
                self.log.info("made %s the first superadmin", name)

    def init_hub(self) -> None:
        """Hub token authentication and the mirror, when run by a hub.

        Without $JUPYTERHUB_API_TOKEN (the service run on its own, e.g. in
        tests) only keypairs authenticate and nothing is mirrored.
        """
        api_url = os.environ.get("JUPYTERHUB_API_URL")
        token = os.environ.get("JUPYTERHUB_API_TOKEN")
        self.hub_auth = HubOAuth(api_token=token, cache_max_age=10, parent=self) if token else None
        hub = HubAPI(api_url, token) if api_url and token else None
        self.mirror = HubMirror(self.session_factory, hub, self.hub_sync_interval, self.log)

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

    def initialize(self, argv=None):
        super().initialize(argv)
        if self.config_file:
            self.load_config_file(self.config_file)
        self.init_db()
        self.init_hub()

    async def serve(self) -> None:
        url = urlparse(self.service_url)
        server = HTTPServer(self.make_app(), xheaders=True)
        server.listen(url.port or 80, url.hostname or "127.0.0.1")
        self.log.info("hubgrid service at %s (API %s)", self.service_url, self.api_prefix)
        self.mirror.start()
        self.mirror.request_sync()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        server.stop()
        await self.mirror.stop()

    def start(self):
        asyncio.run(self.serve())


main = HubgridService.launch_instance

if __name__ == "__main__":
    main()
