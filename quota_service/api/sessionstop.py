"""Stop a session from the admin pages (issue #13): a hub server's session
through the hub (its spawner then releases the allocation), an API session
released, as the Sessions panel stops one of its owner's."""

from __future__ import annotations

from tornado.httpclient import HTTPClientError

from ..core import authz
from ..core.errors import ApiError
from ..operations.reclaim.reclaimpass import stop_hub_server
from ..scheduling import ledger
from .base import APIHandler


class AllocationStopHandler(APIHandler):
    """Stop a session: a hub server's through the hub (202), else release it (200)."""

    resource = "allocation-stop"

    async def post(self, allocation_id):
        """Stop a session: a hub server's through the hub (202, the spawner releases it), else release it (200)."""
        self.audit_target = allocation_id

    success = {"post": ("200", "202")}  # released / asked of the hub
        base_url = self.hub_base_url

        def read(s):
            a = ledger.visible_allocation(s, self.principal, allocation_id)
            owner = ledger.allocation_model(s, a, base_url)
            authz.require_stop_session(self.principal, owner["user"], owner["domain"])
            return owner

        model = await self.db(read)
        self.audit_domain = model["domain"]
        if model["origin"] == "hub" and model["state"] == "allocated":
            hub = self.mirror.hub
            if hub is None:
                raise ApiError("the service has no hub API to stop the server with", status=503)
            try:
                await stop_hub_server(hub, model["user"], model["server_name"] or "")
            except HTTPClientError as e:
                raise ApiError(f"the hub did not stop the server: {e}", status=502) from e
            self.audit_detail = f"hub server {model['user']}/{model['server_name'] or ''} stopped"
            self.finish_json(model, 202)
            return
        now = self.now()
        model = await self.db(lambda s: ledger.release(s, self.principal, allocation_id, now,
                                                       f"stopped by {self.principal.name}"),
                              ledger=True)
        self.schedule_soon(model["resource_group"])
        self.finish_json(model)
