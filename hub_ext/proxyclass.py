"""The hub's proxy for hubgrid: configurable-http-proxy with no route to an
endpoint's replicas.

JupyterHub routes ``/user/<name>/<server>/`` to every running server, and
its periodic ``check_routes`` adds a route it finds missing (through
``add_user``). A replica (session type ``inference``) runs a model server
with no authentication of its own: a route would let anyone call it. So
``add_user`` skips such servers, at the start and in every check; the
serving gateway reaches replicas by their sockets instead (docs/serving.md).

A server that never got a route is not removed from the proxy either: a
replica, and a start cancelled before its server came up (a queued start's
Cancel), for which the hub would ask the proxy to delete a route it never
added (a 404 and a warning in the hub's log at every such cancel).
"""

from __future__ import annotations

from jupyterhub.proxy import ConfigurableHTTPProxy


def routed(spawner) -> bool:
    """Whether the proxy may route to ``spawner``'s server (not a replica)."""
    return (spawner.user_options or {}).get("session_type") != "inference"


def has_route(spawner) -> bool:
    """Whether ``spawner``'s server may have a route to remove: not a
    replica, nor a start cancelled before its server came up (its
    ``cancelled_message``: the route is added only once a start returns)."""
    return routed(spawner) and not getattr(spawner, "cancelled_message", "")


class HubgridProxy(ConfigurableHTTPProxy):
    """``c.JupyterHub.proxy_class``, set by ``hub_ext.config.configure``."""

    async def add_user(self, user, server_name=""):
        spawner = user.spawners[server_name]
        if not routed(spawner):
            self.log.debug("no proxy route for %s: an inference session", spawner._log_name)
            return
        await super().add_user(user, server_name)

    async def delete_user(self, user, server_name=""):
        spawner = user.spawners.get(server_name)
        if spawner is not None and not has_route(spawner):
            self.log.debug("no proxy route to remove for %s", spawner._log_name)
            return
        await super().delete_user(user, server_name)
