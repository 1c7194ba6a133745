"""The hub's proxy for hubgrid: configurable-http-proxy with no route to an
endpoint's replicas.

JupyterHub routes ``/user/<name>/<server>/`` to every running server, and
its periodic ``check_routes`` adds a route it finds missing (through
``add_user``). A replica (session type ``inference``) runs a model server
with no authentication of its own: a route would let anyone call it. So
``add_user`` skips such servers, at the start and in every check; the
serving gateway reaches replicas by their sockets instead (docs/serving.md).
"""

from __future__ import annotations

from jupyterhub.proxy import ConfigurableHTTPProxy


def routed(spawner) -> bool:
    """Whether the proxy may route to ``spawner``'s server (not a replica)."""
    return (spawner.user_options or {}).get("session_type") != "inference"


class HubgridProxy(ConfigurableHTTPProxy):
    """``c.JupyterHub.proxy_class``, set by ``hub_ext.config.configure``."""

    async def add_user(self, user, server_name=""):
        spawner = user.spawners[server_name]
        if not routed(spawner):
            self.log.debug("no proxy route for %s: an inference session", spawner._log_name)
            return
        await super().add_user(user, server_name)
