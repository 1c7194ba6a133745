"""Idle reclamation's endpoints: a session's activity report (its Lab
extension), "keep it", and the reclaim events."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from ..core.errors import Hidden, Invalid
from ..core.schemas import Body, parse
from ..operations.reclaim import rules, store
from .base import APIHandler

Count = Annotated[int, Field(ge=0, le=100_000)]


class ActivityReport(Body):
    """What the session's Lab extension sees: kernels (busy ones count as
    activity even with no browser), terminals, and the last activity."""

    kernels: Count = 0
    busy_kernels: Count = 0
    terminals: Count = 0
    connections: Count = 0
    #: ISO 8601, the server's last kernel, terminal or API activity
    last_activity: Annotated[str, Field(max_length=64)] | None = None


class ActivityHandler(APIHandler):
    """The session's own activity report (its owner's Lab extension)."""

    resource = "allocation-activity"
    bodies = {"post": ActivityReport}
    success = {"post": "200"}

    async def post(self, allocation_id):
        """Report the session's kernel and terminal activity (its owner only)."""
        body = parse(ActivityReport, self.json_body())
        self.audit_target = allocation_id
        now = self.now()
        self.finish_json(await self.db(lambda s: store.report_activity(
            s, self.principal, allocation_id, body.model_dump(), now)))

    def audit_record(self):
        # a report every minute from every session: only a refusal is worth a record
        if self.get_status() in (401, 403) or isinstance(getattr(self, "_api_error", None), Hidden):
            return super().audit_record()
        return None


class KeepHandler(APIHandler):
    """"Keep it": push the session's reclaim deadline (bounded by its policy)."""

    resource = "allocation-keep"
    success = {"post": "200"}

    async def post(self, allocation_id):
        """Keep the session: every reclaim deadline moves by the policy's keep_extension."""
        self.audit_target = allocation_id
        now = self.now()
        # the keep bounds do not depend on the warning lead
        model = await self.db(lambda s: store.keep(s, self.principal, allocation_id, now, 0))
        until = rules.utc_text(dt.datetime.fromisoformat(model["kept_until"]))
        self.audit_detail = f"kept until {until} ({model['keeps']} of {model['max_keeps']})"
        self.finish_json(model)


class ReclaimEventsHandler(APIHandler):
    """Reclaim events: warnings, keeps, reclaims, and shadow mode's reports."""

    resource = "reclaim-events"
    queries = {"get": {"kind": "warning, extended, reclaimed or shadow",
                       "rule": "idle, lifetime or utilization",
                       "allocation": "only this allocation's"}}
    KINDS, RULES = ("warning", "extended", "reclaimed", "shadow"), ("idle", "lifetime", "utilization")
    query_schemas = {"get": {"kind": {"type": "string", "enum": list(KINDS)},
                             "rule": {"type": "string", "enum": list(RULES)}}}

    async def get(self):
        """The reclaim events the caller may see, newest first (shadow: GPU-hours freed)."""
        kind = self._choice("kind", self.KINDS)
        rule = self._choice("rule", self.RULES)
        alloc = self.get_query_argument("allocation", None)
        now = self.now()
        self.finish_json(await self.db(lambda s: store.list_events(
            s, self.principal, kind, rule, alloc, now)))

    def _choice(self, name: str, allowed: tuple[str, ...]) -> str | None:
        value = self.get_query_argument(name, None)
        if value is not None and value not in allowed:
            raise Invalid(f"{name}: one of {', '.join(allowed)}")
        return value

