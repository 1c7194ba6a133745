"""Idle reclamation's endpoints: a session's activity report (its Lab
extension), "keep it", and the reclaim events."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import Hidden, Invalid
from ..core.schemas import Body, parse
from ..operations.reclaim import rules, store
from .base import APIHandler

Count = Annotated[int, Field(ge=0, le=100_000)]


class SaveReport(Body):
    """How far the Lab's save before an announced reclaim went: ``saving``
    from the moment a Lab took the notice, then ``saved`` (every document
    with unsaved changes was written, in place or as a copy) or ``failed``.
    The stop of a session due now waits while it is ``saving``."""

    #: the notice's ``warned_at``: which announced reclaim this save is for
    warned_at: Annotated[str, Field(max_length=64)]
    state: Literal["saving", "saved", "failed"]
    #: ISO 8601, when the state was reached
    at: Annotated[str, Field(max_length=64)] | None = None
    #: documents with unsaved changes, written in place, written as a copy
    #: (the file had changed on disk), and not written
    documents: Count = 0
    saved: Count = 0
    copies: Count = 0
    unsaved: Count = 0
    error: Annotated[str, Field(max_length=300)] = ""


class ActivityReport(Body):
    """What the session's Lab extension sees: kernels (busy ones count as
    activity even with no browser), terminals, and the last activity; and,
    for the reclaim's save, how many Labs listen and the save's state."""

    kernels: Count = 0
    busy_kernels: Count = 0
    terminals: Count = 0
    connections: Count = 0
    #: ISO 8601, the server's last kernel, terminal or API activity
    last_activity: Annotated[str, Field(max_length=64)] | None = None
    #: Labs listening for this session's reclaim (a stop due waits for them)
    listening: Count = 0
    save: SaveReport | None = None


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

