"""HubgridAuthenticator: wraps any JupyterHub authenticator with hubgrid tenancy.

The wrapped authenticator says *who* you are (password, OAuth, LDAP, ...);
the hubgrid service says *what* you are: your domain, projects and role.
On every login and every refresh the wrapper asks the service and keeps
the hub in step: superadmins are hub admins, a domain admin gets a hub role
whose scopes are filtered to their domain's groups (``authenticator.roles``).
Group membership itself is mirrored by the service through the hub API.

Example::

    c.JupyterHub.authenticator_class = "hubgrid"
    c.HubgridAuthenticator.authenticator_class = "github"   # any authenticator
    c.GitHubOAuthenticator.client_id = ...

``hub_ext.config.configure(c)`` sets the service URL and internal token.
"""

from __future__ import annotations

from jupyterhub.auth import Authenticator
from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
from jupyterhub.roles import get_default_roles
from jupyterhub.traitlets import EntryPointType
from tornado import web
from traitlets import Bool, Instance, Integer, Unicode, default

from hub_ext.client import HubgridClient, Refused, ServiceUnavailable
from quota_service.core import forwarded

from .roles import hub_roles

_ALLOW_TRAITS = ("allow_all", "allowed_users", "allow_existing_users")


class HubgridAuthenticator(Authenticator):
    """Wraps any JupyterHub authenticator; hubgrid decides domain, projects and role."""

    authenticator_class = EntryPointType(
        default_value=SharedPasswordAuthenticator,
        klass=Authenticator,
        entry_point_group="jupyterhub.authenticators",
        help="""
        The authenticator that checks credentials (e.g. "shared-password",
        "dummy", "pam", an OAuthenticator). Its own settings are configured
        under its class name as usual. Its allow settings still apply; when it
        has none, everyone it authenticates is let through to hubgrid, which
        then decides (first-login domain, active flags).
        """,
    ).tag(config=True)

    service_api_url = Unicode(
        "http://127.0.0.1:10101/services/hubgrid/api/v1/",
        help="Direct URL of the hubgrid service's API (not through the proxy).",
    ).tag(config=True)

    internal_token = Unicode(
        help="Secret shared with the hubgrid service for its internal endpoints.",
    ).tag(config=True)

    manage_roles = Bool(
        True,
        help="hubgrid manages hub roles (admin, domain-admin roles); leave True.",
    ).tag(config=True)

    @default("allow_all")
    def _allow_all(self):
        # who may log in is decided by the hubgrid service
        return True

    @default("auth_refresh_age")
    def _auth_refresh_age(self):
        # how soon a role change or deactivation reaches an open session
        return 60

    @default("refresh_pre_spawn")
    def _refresh_pre_spawn(self):
        return True

    inner = Instance(Authenticator, allow_none=True)
    service_timeout = Integer(
        20, help="Seconds to wait for the hubgrid service at login and refresh."
    ).tag(config=True)

    @default("inner")
    def _make_inner(self):
        cls = self.authenticator_class
        section = self.config.get(cls.__name__, {})
        kwargs = {}
        if not any(t in section for t in _ALLOW_TRAITS + ("allowed_groups",)):
            kwargs["allow_all"] = True
        return cls(parent=self, **kwargs)

    def __getattr__(self, name):
        # handlers of the wrapped authenticator (e.g. an OAuth callback) look
        # up its settings on the hub's authenticator, which is this wrapper
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def client(self) -> HubgridClient:
        return HubgridClient(self.service_api_url, self.internal_token, self.service_timeout)

    # the login form and handlers of the wrapped authenticator
    def login_url(self, base_url):
        return self.inner.login_url(base_url)

    def logout_url(self, base_url):
        return self.inner.logout_url(base_url)

    def get_handlers(self, app):
        return self.inner.get_handlers(app)

    @property
    def login_service(self):
        return self.inner.login_service

    def check_allow_config(self):
        self.inner.check_allow_config()

    async def load_managed_roles(self):
        # roles are created on demand at login (hub_roles), nothing upfront
        return []

    trusted_proxies = forwarded.Networks(
        default_value=list(forwarded.LOOPBACK),
        help="""Addresses or networks (CIDR) of the proxies in front of the hub
        whose forwarded headers are believed for the source address of a
        login in hubgrid's access log (as ``HubgridService.trusted_proxies``
        for API calls). Default: the loopback addresses, where the hub's
        configurable-http-proxy runs. Anyone else's ``X-Forwarded-For`` and
        ``X-Real-IP`` are ignored::

            c.HubgridAuthenticator.trusted_proxies = ["127.0.0.1", "::1", "10.0.0.0/24"]
        """,
    ).tag(config=True)

    def _source(self, handler) -> str | None:
        """The address a login came from. The hub's server applies forwarded
        headers itself (any client's X-Real-IP): start again from the peer."""
        if handler is None:
            return None
        address = getattr(getattr(handler.request.connection, "context", None), "address", None)
        peer = address[0] if isinstance(address, tuple) and address else handler.request.remote_ip
        trusted = forwarded.parse_networks(tuple(self.trusted_proxies))
        return forwarded.client_address(peer, handler.request.headers, trusted)

    def builtin_roles(self) -> dict[str, dict]:
        """The hub's own ``user`` and ``admin`` roles, as the hub defines them."""
        specs = {r["name"]: dict(r) for r in get_default_roles() if r["name"] in ("user", "admin")}
        extra = list(getattr(self.parent, "extra_user_scopes", None) or [])
        if extra:
            specs["user"]["scopes"] = list(specs["user"]["scopes"]) + extra
        return specs

    def auth_model(self, name: str, identity: dict, inner: dict | None = None) -> dict:
        model = {
            "name": name,
            "admin": identity["admin"],
            "roles": hub_roles(identity, self.builtin_roles()),
        }
        if inner and inner.get("auth_state") is not None:
            model["auth_state"] = inner["auth_state"]
        return model

    async def authenticate(self, handler, data):
        result = await self.inner.get_authenticated_user(handler, data)
        username = (data or {}).get("username", "") if isinstance(data, dict) else ""
        try:
            if result is None:
                await self.client.login(username or "(unknown)", False, self._source(handler),
                                        f"rejected by {type(self.inner).__name__}")
                return None
            identity = await self.client.login(result["name"], True, self._source(handler))
        except Refused as e:
            raise web.HTTPError(403, e.message) from None
        except ServiceUnavailable as e:
            self.log.error("login of %s: %s", result and result["name"], e)
            raise web.HTTPError(503, "The hubgrid service is not available; try again shortly.") from None
        return self.auth_model(result["name"], identity, result)

    async def refresh_user(self, user, handler=None):
        try:
            identity = await self.client.identity(user.name)
        except Refused as e:
            self.log.info("hubgrid refuses %s now (%s): ending the session", user.name, e.message)
            return False
        except ServiceUnavailable as e:
            self.log.warning("could not refresh %s: %s", user.name, e)
            return True
        return self.auth_model(user.name, identity)
