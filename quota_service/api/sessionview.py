"""A session's own face: its scheduling history and its live
use, for whoever may see the session (its owner, its domain's admins,
superadmins)."""

from __future__ import annotations

from ..operations import sessionview
from .base import APIHandler


class HistoryHandler(APIHandler):
    """A session's scheduling history: asked, queued (why), admitted where, warned, kept, ended how."""

    resource = "allocation-history"

    async def get(self, allocation_id):
        """The session's history, oldest first (from its row, its reclaim events and the access log)."""
        self.finish_json(await self.db(
            lambda s: sessionview.history(s, self.principal, allocation_id)))


class UsageHandler(APIHandler):
    """A session's live use: the reclaim pass's readings of its CPU, memory and GPUs."""

    resource = "allocation-usage"

    async def get(self, allocation_id):
        """The session's latest CPU, memory and GPU readings (exact strings; none when not sampled)."""
        readings = self.session_readings(allocation_id)
        self.finish_json(await self.db(lambda s: sessionview.allocation_usage(
            s, self.principal, allocation_id, lambda _id: readings)))
