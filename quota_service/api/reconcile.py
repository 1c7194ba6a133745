"""REST handler of reconcile: the ledger against the containers, Slurm jobs
and hub servers (superadmins; quota_service/operations/reconcile.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from ..core import authz
from ..core.schemas import Body, parse
from ..operations.reconcile_repair import Actor
from .base import APIHandler


class ReconcileRepair(Body):
    differences: list[Annotated[str, StringConstraints(min_length=1, max_length=512)]] | None = (
        Field(None, max_length=10_000,
              description="ids of the differences to repair (from a dry run); all when absent"))


class ReconcileHandler(APIHandler):
    resource = "reconcile"
    bodies = {"post": ReconcileRepair}
    success = {"post": "200"}

    async def get(self):
        """Compare the ledger with the containers, Slurm jobs and hub servers: the differences, repairing nothing (superadmins)."""
        authz.require_superadmin(self.principal, "reconcile the ledger")
        self.finish_json(await self.reconcile_pass(None, None, dry_run=True))

    async def post(self):
        """Repair the differences (all, or the listed ones that still hold), each in the access log (superadmins)."""
        self.audit_target = "reconcile"
        authz.require_superadmin(self.principal, "reconcile the ledger")
        body = parse(ReconcileRepair, self.json_body())
        p = self.principal
        actor = Actor(p.name, p.domain, self._credential, self.client_address())
        report = await self.reconcile_pass(actor, body.differences, dry_run=False)
        self.audit_detail = report["summary"]
        self.finish_json(report)

    def audit_action(self, method: str) -> str:
        return "reconcile.repair" if method == "POST" else "reconcile.read"
