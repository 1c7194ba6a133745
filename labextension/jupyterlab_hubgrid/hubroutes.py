"""The server extension's door to JupyterHub: ``<base_url>hubgrid/hub/...``.

A hubgrid session is a JupyterHub server, so the Lab front end starts and
stops sessions through the hub's REST API. This handler forwards exactly
three calls there, with the server's own token (``$JUPYTERHUB_API_TOKEN``,
which holds ``servers!user`` when ``hub_ext.config.configure`` set
``c.Spawner.server_token_scopes``), and nothing else:

- ``GET    hubgrid/hub/users/<owner>``: the owner's model (their servers);
- ``POST   hubgrid/hub/users/<owner>/servers/<name>``: start a named server
  (the body, ``{"user_options": {...}}``, goes as it is);
- ``DELETE hubgrid/hub/users/<owner>/servers/<name>``: stop it.

Like ``routes.py``: only the server's owner may call it (a visitor of a
shared server is refused with 403, and so is any other user's path), every
verb is authenticated and XSRF-checked by the Jupyter server, the hub's
status and JSON pass through, an unreachable hub is a 502 and a server
outside a hub (no hub URL, token or owner) a 503, each with a JSON message.
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import quote

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from traitlets import Float, TraitError, Unicode, default, validate
from traitlets.config import Configurable

#: where the hub forwarder answers, under the server's base_url
PREFIX = "hubgrid/hub/"
#: a named server's name as JupyterHub takes it in a URL (one segment)
SERVER_NAME = re.compile(r"^[^/?#\s]{1,255}$")
#: statuses that carry no body
BODYLESS = (204, 304)


class HubgridHub(Configurable):
    """Which hub the server extension starts and stops its owner's servers with."""

    hub_api_url = Unicode(
        help="""JupyterHub's REST API, e.g. ``http://127.0.0.1:8081/hub/api``.
        Default: ``$JUPYTERHUB_API_URL``, set in every single-user server.
        Example: ``c.HubgridHub.hub_api_url = "https://hub.example.org/hub/api"``.""",
    ).tag(config=True)

    hub_token = Unicode(
        help="""The token sent to the hub (``Authorization: token ...``).
        Default: ``$JUPYTERHUB_API_TOKEN``, the server's own token; it may
        start and stop its owner's servers when ``c.Spawner.server_token_scopes``
        holds ``servers!user`` (``hub_ext.config.configure`` adds it).""",
    ).tag(config=True)

    owner = Unicode(
        help="""The only user who may use this forwarder, and the only user
        whose servers it reaches. Default: ``$JUPYTERHUB_USER``, the server's
        owner. Empty: the forwarder answers 503 (not under a hub).""",
    ).tag(config=True)

    request_timeout = Float(
        60.0,
        help="""Seconds one forwarded call may take, connection included.
        Example: ``c.HubgridHub.request_timeout = 120``.""",
    ).tag(config=True)

    @default("hub_api_url")
    def _default_hub_api_url(self):
        return os.environ.get("JUPYTERHUB_API_URL", "").strip().rstrip("/")

    @default("hub_token")
    def _default_hub_token(self):
        return os.environ.get("JUPYTERHUB_API_TOKEN", "")

    @default("owner")
    def _default_owner(self):
        return os.environ.get("JUPYTERHUB_USER", "")

    @validate("hub_api_url")
    def _check_hub_api_url(self, proposal):
        url = proposal.value.strip()
        if url and not url.startswith(("http://", "https://")):
            raise TraitError(f"HubgridHub.hub_api_url must be an http(s) URL, not {url!r}")
        return url.rstrip("/")

    @validate("request_timeout")
    def _check_timeout(self, proposal):
        if not proposal.value > 0:
            raise TraitError(f"request_timeout must be positive, not {proposal.value}")
        return proposal.value


class HubForwardHandler(APIHandler):
    """Forward the owner's own server calls to the hub (see the module docstring)."""

    def initialize(self, config: HubgridHub):
        self.hubcfg = config

    def target(self, user: str, server: str | None) -> str:
        """The hub URL of ``users/<user>[/servers/<server>]``, after the checks."""
        cfg = self.hubcfg
        if not cfg.owner:
            raise web.HTTPError(503, "hubgrid: this server does not run under JupyterHub "
                                     "(JUPYTERHUB_USER is not set): it cannot start or stop sessions")
        name = self.current_user.username
        if name != cfg.owner:
            raise web.HTTPError(
                403, f"hubgrid: only {cfg.owner}, who owns this server, may start or stop "
                     f"sessions from it (you are {name})")
        if user != cfg.owner:
            raise web.HTTPError(403, f"hubgrid: this server reaches only {cfg.owner}'s own "
                                     f"servers, not {user[:100]!r}'s")
        if server is not None and (not SERVER_NAME.match(server) or server in (".", "..")):
            raise web.HTTPError(400, f"hubgrid: not a server name: {server[:100]!r}")
        if not cfg.hub_api_url or not cfg.hub_token:
            missing = "JUPYTERHUB_API_URL" if not cfg.hub_api_url else "JUPYTERHUB_API_TOKEN"
            raise web.HTTPError(503, f"hubgrid: {missing} is not set: this server cannot reach "
                                     "JupyterHub to start or stop sessions")
        path = f"users/{quote(user, safe='')}"
        if server is not None:
            path += f"/servers/{quote(server, safe='')}"
        return f"{cfg.hub_api_url}/{path}"

    async def forward(self, url: str, body: bytes | None = None) -> None:
        headers = {"Authorization": f"token {self.hubcfg.hub_token}",
                   "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = HTTPRequest(
            url, method=self.request.method, headers=headers, body=body,
            follow_redirects=False, allow_nonstandard_methods=True,
            request_timeout=self.hubcfg.request_timeout,
            connect_timeout=min(10.0, self.hubcfg.request_timeout),
        )
        try:
            response = await AsyncHTTPClient().fetch(request, raise_error=False)
        except (OSError, HTTPClientError) as e:
            raise web.HTTPError(502, f"hubgrid: JupyterHub is unreachable: {e}") from None
        if response.code == 599:  # no HTTP answer (refused, timeout, reset)
            raise web.HTTPError(502, f"hubgrid: JupyterHub is unreachable: {response.error}")
        self.set_status(response.code, response.reason)
        if response.code in BODYLESS:
            self.finish()
            return
        ctype = response.headers.get("Content-Type", "application/json")
        self.finish(response.body or b"", set_content_type=ctype)

    def json_body(self) -> bytes:
        """The start request's body, which must be a JSON object (or empty)."""
        raw = self.request.body or b"{}"
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise web.HTTPError(400, "hubgrid: the body must be JSON, e.g. "
                                     '{"user_options": {...}}') from None
        if not isinstance(parsed, dict):
            raise web.HTTPError(400, "hubgrid: the body must be a JSON object")
        return raw

    @web.authenticated
    async def get(self, user, server=None):
        if server is not None:
            raise web.HTTPError(405, "hubgrid: read a server through users/<owner>")
        await self.forward(self.target(user, None))

    @web.authenticated
    async def post(self, user, server=None):
        if server is None:
            raise web.HTTPError(405, "hubgrid: start a named server: users/<owner>/servers/<name>")
        url = self.target(user, server)
        await self.forward(url, self.json_body())

    @web.authenticated
    async def delete(self, user, server=None):
        if server is None:
            raise web.HTTPError(405, "hubgrid: stop a named server: users/<owner>/servers/<name>")
        await self.forward(self.target(user, server), None)


def setup_hub_route_handlers(web_app, parent=None) -> HubgridHub:
    """Add the hub forwarder to ``web_app``; returns its configuration."""
    config = HubgridHub(parent=parent)
    base = url_path_join(web_app.settings["base_url"], PREFIX)
    web_app.add_handlers(".*$", [
        (base + r"users/([^/]+)/?", HubForwardHandler, {"config": config}),
        (base + r"users/([^/]+)/servers/([^/]+)/?", HubForwardHandler, {"config": config}),
    ])
    return config
