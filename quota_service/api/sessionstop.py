"""Stop a session from the admin pages: a hub server's session
through the hub (its spawner then releases the allocation), an API session
released, as the Sessions panel stops one of its owner's."""

from __future__ import annotations

from tornado.httpclient import HTTPClientError

from ..core import authz
from ..core.errors import ApiError
from ..operations.reclaim.reclaimpass import stop_hub_server
from ..scheduling import ledger, sessionaudit
from ..tenancy import audit
from .base import APIHandler


class AllocationStopHandler(APIHandler):
    """Stop a session: a hub server's through the hub (202), else release it (200).

    The access log: ``session.stop`` when the hub was asked (the spawner's
    release then writes ``session.end``, "stopped by" this caller), else the
    release's ``session.end``; a refusal as ``session.stop``."""

    resource = "allocation-stop"
    success = {"post": ("200", "202")}  # released / asked of the hub

    async def post(self, allocation_id):
        """Stop a session: a hub server's through the hub (202, the spawner releases it), else release it (200)."""
        self.audit_target = allocation_id

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
            # recorded before the hub is asked: the spawner's release (which
            # may come before the hub answers) finds who stopped it
            self._asked = True
            await self.log_access(audit.Record(
                action=sessionaudit.STOP, outcome="success", status=202,
                actor=self.principal.name, actor_domain=self.principal.domain,
                domain=model["domain"], credential=self._credential,
                source=self.client_address(), target=allocation_id,
                detail=f"user: {model['user']}; server: {model['server_name'] or '(default)'}; "
                       f"node: {model['node']}; asked the hub to stop the server"))
            try:
                await stop_hub_server(hub, model["user"], model["server_name"] or "")
            except HTTPClientError as e:
                raise ApiError(f"the hub did not stop the server: {e}", status=502) from e
            self.finish_json(model, 202)
            return
        now = self.now()
        via = sessionaudit.Via(self.principal.name, self._credential, self.client_address())
        model = await self.db(lambda s: ledger.release(s, self.principal, allocation_id, now,
                                                       f"stopped by {self.principal.name}",
                                                       via=via),
                              ledger="batched")
        self._asked = True
        self.schedule_soon(model["resource_group"])
        self.finish_json(model)

    #: its success is recorded already (session.stop, or the release's session.end)
    _asked = False

    def audit_action(self, method: str) -> str:
        return sessionaudit.STOP

    def audit_record(self):
        # a release writes its own session.end in the ledger's transaction
        if self._asked and self.get_status() < 400:
            return None
        return super().audit_record()
