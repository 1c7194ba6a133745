"""The Prometheus endpoint: ``GET <prefix>api/v1/metrics``.

Authenticated like JupyterHub's ``/hub/metrics`` (``authenticate_prometheus``):
a hub token carrying the scope ``read:metrics`` (a Prometheus service's, or a
user's), or a superadmin with any credential; open to anyone when the
setting is off. The ledger is read at each scrape, in a worker thread
(``operations.metrics``).
"""

from __future__ import annotations

from jupyterhub.services.auth import UserNotAllowed
from prometheus_client import CONTENT_TYPE_LATEST

from ..core import authz
from ..core.errors import Denied
from ..operations.metrics_export import Exporter
from .base import INTERNAL_SCHEME, APIHandler


class MetricsHandler(APIHandler):
    """Prometheus metrics of the cluster: slots, GPU-seconds, the queue, quotas, reclaims."""

    resource = "metrics"
    produces = {"get": CONTENT_TYPE_LATEST}

    @property
    def exporter(self) -> Exporter:
        """The application's exporter (``HubgridService.make_app``)."""
        return self.settings["metrics"]

    async def authenticate(self):
        if not self.exporter.authenticate:
            return  # authenticate_prometheus off: anyone may scrape
        scopes = await self.hub_token_scopes()
        if authz.may_read_metrics(None, scopes):
            return
        await super().authenticate()
        authz.require_read_metrics(self.principal, scopes)

    async def hub_token_scopes(self) -> frozenset[str]:
        """The scopes of the hub token (or OAuth cookie) sent, once the hub
        let it reach this service; empty without one. A hub service (not a
        user) must hold ``read:metrics``: it has no hubgrid role."""
        scheme = self.request.headers.get("Authorization", "").partition(" ")[0].lower()
        if self.hub_auth is None or scheme in ("keypair", INTERNAL_SCHEME):
            return frozenset()
        model = await self.hub_auth.get_user(self, sync=False)
        if not model:
            return frozenset()
        try:
            model = self.check_hub_user(model)
        except UserNotAllowed:
            raise Denied("this token lacks the scope access:services!service=hubgrid") from None
        self._credential = "token"
        scopes = frozenset(model.get("scopes") or ())
        if model.get("kind", "user") != "user":
            authz.require_read_metrics(None, scopes)
        return scopes

    async def get(self):
        """The metrics in Prometheus' text format (OpenMetrics when asked for)."""
        exporter, accept = self.exporter, self.request.headers.get("Accept")
        body, content_type = await self.db(lambda s: exporter.scrape(s, accept))
        self.set_header("Content-Type", content_type)
        self.finish(body)
