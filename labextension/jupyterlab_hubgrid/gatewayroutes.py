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
"""

from __future__ import annotations

from jupyter_server.utils import url_path_join
from tornado import web

from .routes import ForwardHandler, HubgridLab, forwarded_query, upstream_path

#: where the forwarder answers, under the server's base_url
PREFIX = "hubgrid/gateway/"


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


def setup_gateway_handlers(web_app, config: HubgridLab) -> None:
    pattern = url_path_join(web_app.settings["base_url"], PREFIX, "(.*)")
    web_app.add_handlers(".*$", [(pattern, GatewayHandler, {"config": config})])
