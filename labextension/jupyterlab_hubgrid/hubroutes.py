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

A stop of a server whose start is pending: JupyterHub's
``UserServerAPIHandler.delete`` cancels the start, waits one second and
stops the server, or, when the start has not unwound by then (our spawner
releases its allocation first), fails with ``500`` and no reason
(``RuntimeError: ... pending spawn``); the start request, when still
waiting, dies of the cancellation with the same empty 500. So:

- a stop answered so is not passed on: the forwarder waits (bounded by
  ``request_timeout``) until the hub no longer shows the start pending and
  asks for the stop again (gone already: 204; still starting then: 409);
- a start in flight when its stop was forwarded, answered 5xx, becomes
  ``409`` with reason ``Stopped while starting`` and a message saying so;
  any other start the hub fails without a reason gets a message naming it.

Like ``routes.py``: only the server's owner may call it (a visitor of a
shared server is refused with 403, and so is any other user's path), every
verb is authenticated and XSRF-checked by the Jupyter server, the hub's
status and JSON pass through, an unreachable hub is a 502 and a server
outside a hub (no hub URL, token or owner) a 503, each with a JSON message.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator
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
#: the reason of a start answered 409 because a stop of it came meanwhile
STOPPED_WHILE_STARTING = "Stopped while starting"
#: what JupyterHub says of an exception it has no message for
NO_REASON = ("", "Internal Server Error", "Unhandled error")
#: seconds between two reads of a server whose cancelled start unwinds
UNWIND_POLL = 0.25


@dataclass
class Start:
    """One start request being forwarded; ``stopped`` once a stop of the
    same server was forwarded while it waited."""

    server: str
    stopped: bool = False


class StartsInFlight:
    """The starts this server is forwarding to the hub, by server name."""

    def __init__(self) -> None:
        self._starts: dict[str, list[Start]] = {}

    @contextmanager
    def starting(self, server: str) -> Iterator[Start]:
        """Track a start of ``server`` while the hub answers it."""
        start = Start(server)
        self._starts.setdefault(server, []).append(start)
        try:
            yield start
        finally:
            waiting = self._starts[server]
            waiting.remove(start)
            if not waiting:
                del self._starts[server]

    def stopping(self, server: str) -> None:
        """A stop of ``server`` goes to the hub: its starts in flight end stopped."""
        for start in self._starts.get(server, ()):
            start.stopped = True


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

    def initialize(self, config: HubgridHub, starts: StartsInFlight):
        self.hubcfg = config
        self.starts = starts

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
        self.relay(await self.fetch(url, body))

    async def fetch(self, url: str, body: bytes | None = None, method: str | None = None):
        """The hub's answer to ``method`` (this request's verb) on ``url`` (502 if none)."""
        headers = {"Authorization": f"token {self.hubcfg.hub_token}",
                   "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = HTTPRequest(
            url, method=method or self.request.method, headers=headers, body=body,
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
        return response

    def relay(self, response) -> None:
        """Answer with the hub's status and body."""
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
        body = self.json_body()
        with self.starts.starting(server) as start:
            response = await self.fetch(url, body)
        if response.code >= 500 and start.stopped:
            raise web.HTTPError(
                409, f"hubgrid: session {server} was stopped while it was starting: "
                     "it did not start and is not running", reason=STOPPED_WHILE_STARTING)
        if response.code >= 500 and hub_message(response) in NO_REASON:
            raise web.HTTPError(
                response.code, f"hubgrid: JupyterHub did not start session {server} and gave "
                               f"no reason ({response.code} {response.reason}): the hub's log "
                               "says why (was it stopped while it was starting?)")
        self.relay(response)

    @web.authenticated
    async def delete(self, user, server=None):
        if server is None:
            raise web.HTTPError(405, "hubgrid: stop a named server: users/<owner>/servers/<name>")
        url = self.target(user, server)
        self.starts.stopping(server)
        response = await self.fetch(url)
        if response.code >= 500 and hub_message(response) in NO_REASON:
            response = await self.stop_after_unwind(user, server, url)
            if response is None:
                self.set_status(204)
                self.finish()
                return
        self.relay(response)

    async def stop_after_unwind(self, user: str, server: str, url: str):
        """The hub's answer to a second stop of ``server``, once its cancelled
        start has unwound; None when the server is gone by then."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.hubcfg.request_timeout
        owner_url = self.target(user, None)
        while True:
            read = await self.fetch(owner_url, method="GET")
            if read.code != 200:
                raise web.HTTPError(502, f"hubgrid: JupyterHub failed to stop session {server} "
                                         f"and then to say how it is ({read.code} {read.reason})")
            model = json.loads(read.body or b"{}").get("servers", {}).get(server)
            if model is None:
                return None
            if model.get("pending") != "spawn":
                return await self.fetch(url, method="DELETE")
            if loop.time() > deadline:
                raise web.HTTPError(
                    409, f"hubgrid: session {server} is still starting "
                         f"{self.hubcfg.request_timeout:g} s after JupyterHub was asked to "
                         "stop it: stop it again in a moment", reason="Still starting")
            await asyncio.sleep(UNWIND_POLL)


def hub_message(response) -> str:
    """The ``message`` of a JupyterHub error answer ('' when there is none)."""
    try:
        message = json.loads(response.body or b"{}").get("message", "")
    except (ValueError, AttributeError):
        return ""
    return message.strip() if isinstance(message, str) else ""


def setup_hub_route_handlers(web_app, parent=None) -> HubgridHub:
    """Add the hub forwarder to ``web_app``; returns its configuration."""
    config = HubgridHub(parent=parent)
    args = {"config": config, "starts": StartsInFlight()}
    base = url_path_join(web_app.settings["base_url"], PREFIX)
    web_app.add_handlers(".*$", [
        (base + r"users/([^/]+)/?", HubForwardHandler, args),
        (base + r"users/([^/]+)/servers/([^/]+)/?", HubForwardHandler, args),
    ])
    return config
