"""REST handler for usage accounting: GPU-, core- and GiB-hours
and session counts over a period, as JSON or CSV."""

from __future__ import annotations

from ..operations import usage_query
from .base import APIHandler
from .files import attachment


class UsageHandler(APIHandler):
    """What sessions used over a period, per user, project, domain or resource group."""

    resource = "usage"
    queries = {"get": usage_query.ARGUMENTS}

    async def get(self):
        """Usage over a period as far as the caller may read it (JSON, or CSV with format=csv)."""
        now = self.now()
        q = usage_query.parse(self.query_args(), now)
        p = self.principal
        report = await self.db(lambda s: usage_query.report(s, p, q, now))
        if q.format == "csv":
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", attachment(usage_query.filename(q)))
            self.finish(usage_query.as_csv(report))
            return
        self.finish_json(usage_query.as_json(report, q))
