"""``<base_url>hubgrid/gateway/<path>``: the serving gateway, for the Chat page.

The Lab front end calls its own Jupyter server; this handler repeats the
call to the serving gateway (``HubgridLab.gateway_url``: ``$HUBGRID_GATEWAY_URL``,
else the gateway beside ``$HUBGRID_API_URL``) with the server's own hub
token (``Authorization: token $JUPYTERHUB_API_TOKEN``): the gateway asks the
service which endpoints the server's owner may use, and the browser never
holds a credential. It is ``routes.ForwardHandler`` with another target, so
the same guarantees hold: authenticated by Jupyter and XSRF-checked, the
server's owner only (a visitor 403), bodies streamed on, a refusal given
after the body is drained. Every answer is **streamed** to the browser as
the gateway writes it (a streamed chat's server-sent events arrive chunk by
chunk); an unreachable gateway is a 502, a missing configuration a 503.
The console's Chat has its own copy of this forward in the service
(quota_service/api/consolegateway.py, which says why the two stay apart).

``<base_url>hubgrid/gateway-info`` says where this server reaches the
gateway (``gateway_info``): the Serving page shows the OpenAI base URL that
works from this Lab's notebooks and terminals (its kernels and shells run
beside this server, with its environment), which the browser's own origin
is not for a session with a network of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from .routes import ForwardHandler, HubgridLab, forwarded_query, owner_only, upstream_path

#: where the forwarder answers, under the server's base_url
PREFIX = "hubgrid/gateway/"
#: where this server says where it reaches the gateway
INFO = "hubgrid/gateway-info"
#: the hub token every session has, which the gateway takes as an api_key
TOKEN_VARIABLE = "JUPYTERHUB_API_TOKEN"


def gateway_info(gateway_url: str, environ: Mapping[str, str]) -> dict:
    """Where a notebook or terminal of this server calls the gateway
    (``gateway_url``, its root: "" when unknown) and the environment variable
    holding a hub token it may call it with (None without one: an endpoint
    token is needed then). Never a token itself."""
    root = gateway_url.rstrip("/") + "/" if gateway_url else ""
    return {"gateway_url": root or None,
            "openai_base_url": root + "v1" if root else None,
            "token_variable": TOKEN_VARIABLE if environ.get(TOKEN_VARIABLE) else None}


class GatewayHandler(ForwardHandler):
    """Forward one call under ``hubgrid/gateway/`` to the serving gateway."""

    def streams(self, path: str) -> bool:
        return True

    def upstream(self, path: str) -> str:
        cfg = self.hubgrid
        if not cfg.gateway_url:
            raise web.HTTPError(503, "hubgrid: the serving gateway is not configured on this "
                                     "server: HUBGRID_GATEWAY_URL (c.HubgridLab.gateway_url)")
        if cfg.keypair or not cfg.api_token:
            raise web.HTTPError(503, "hubgrid: the serving gateway takes this server's hub "
                                     "token, and there is none (JUPYTERHUB_API_TOKEN)")
        gw_path = upstream_path(path)
        if gw_path is None:
            raise web.HTTPError(400, f"hubgrid: not a gateway path: {path[:200]!r}")
        query = forwarded_query(self.request.query)
        return cfg.gateway_url + gw_path + (f"?{query}" if query else "")

    def upstream_header(self, line: str) -> None:
        super().upstream_header(line)
        if self._streaming and not line.strip():
            self.set_header("Cache-Control", "no-cache")  # an event stream is never cached
            self.set_header("X-Accel-Buffering", "no")
            self.flush()  # the status and headers now: the first token may take a while


class GatewayInfoHandler(APIHandler):
    """``GET``: :func:`gateway_info` of this server, for its owner."""

    def initialize(self, config: HubgridLab):
        self.hubgrid = config

    @web.authenticated
    def get(self):
        owner_only(self.hubgrid, self.current_user.username)
        self.finish(gateway_info(self.hubgrid.gateway_url, os.environ))


def setup_gateway_handlers(web_app, config: HubgridLab) -> None:
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [
        (url_path_join(base, PREFIX, "(.*)"), GatewayHandler, {"config": config}),
        (url_path_join(base, INFO), GatewayInfoHandler, {"config": config})])
