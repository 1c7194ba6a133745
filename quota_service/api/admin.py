"""REST handlers the admin pages need: the scheduler's queue of
a resource group (read, re-prioritise, move, cancel), a node's sessions and
per-device GPU map with its drain estimate, bulk user import, and the
access log as CSV."""

from __future__ import annotations

from ..core.schemas import QueueChange, UsersBulk, parse
from ..scheduling import nodedesk, queuedesk
from ..tenancy import audit, auditcsv, bulkusers, totals
from ..core.errors import Invalid
from .base import APIHandler
from .files import attachment


class QueueHandler(APIHandler):
    resource = "queue"

    async def get(self, group):
        """The pending queue of a resource group in the scheduler's order (admins)."""
        self.audit_target = group
        p = self.principal
        self.finish_json(await self.db(lambda s: queuedesk.list_queue(s, p, group)))


class QueuedHandler(APIHandler):
    resource = "queue"
    bodies = {"patch": QueueChange}

    async def patch(self, group, allocation_id):
        """Change a pending request's priority or move it in its queue (admins)."""
        self.audit_target = f"{group}/{allocation_id}"
        body = parse(QueueChange, self.json_body())
        p = self.principal
        model, self.audit_detail = await self.db(
            lambda s: queuedesk.change(s, p, group, allocation_id, body), ledger=True)
        self.audit_domain = model["domain"]
        self.finish_json(model)
        self.schedule_soon(group)

    async def delete(self, group, allocation_id):
        """Cancel a pending request (admins)."""
        self.audit_target = f"{group}/{allocation_id}"
        p, now = self.principal, self.now()
        self.audit_domain, self.audit_detail = await self.db(
            lambda s: queuedesk.cancel(s, p, group, allocation_id, now), ledger=True)
        self.no_content()
        self.schedule_soon(group)

    def audit_action(self, method: str) -> str:
        return {"PATCH": "queue.change", "DELETE": "queue.cancel"}.get(
            method, super().audit_action(method))


class NodeSessionsHandler(APIHandler):
    resource = "node"

    async def get(self, node):
        """A node's sessions, per-device GPU map and time until empty (admins)."""
        self.audit_target = node
        p, now = self.principal, self.now()
        self.finish_json(await self.db(lambda s: nodedesk.node_sessions(s, p, node, now)))


class NodesSessionsHandler(APIHandler):
    resource = "node"
    queries = {"get": {"names": "the nodes, comma-separated (at most 200)"}}

    async def get(self):
        """Several nodes' sessions, GPU maps and times until empty in one read (admins)."""
        names = (self.get_query_argument("names", "") or "").split(",")
        self.audit_target = ",".join(names)[:255]
        p, now = self.principal, self.now()
        self.finish_json(await self.db(lambda s: nodedesk.nodes_sessions(s, p, names, now)))


async def audit_csv(handler: APIHandler) -> None:
    """Answer ``GET audit?format=csv``: the log the caller may read, newest
    first, streamed page by page (at most ``auditcsv.MAX_ROWS`` entries)."""
    now = handler.now()
    args = auditcsv.export_args(handler.query_args(), now)
    p = handler.principal
    first = await handler.db(lambda s: audit.query(s, p, {**args, "limit": str(auditcsv.PAGE)}))
    handler.set_header("Content-Type", "text/csv; charset=utf-8")
    handler.set_header("Content-Disposition", attachment(auditcsv.filename(now)))
    handler.write(auditcsv.header())
    page, offset = first, 0
    while True:
        handler.write(auditcsv.rows(page["entries"]))
        offset = page["next_offset"]
        if offset is None or offset >= auditcsv.MAX_ROWS:
            break
        await handler.flush()
        page = await handler.db(lambda s: audit.query(
            s, p, {**args, "limit": str(auditcsv.PAGE), "offset": str(offset)}))
    handler.finish()


class UsersBulkHandler(APIHandler):
    resource = "user"
    bodies = {"post": UsersBulk}
    success = {"post": "200"}

    async def post(self):
        """Add users from a CSV file (text/csv) or JSON rows; each row created or refused alone."""
        ctype = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype == "text/csv":
            try:
                text = self.request.body.decode("utf-8-sig")
            except UnicodeDecodeError:
                raise Invalid("the CSV file is not UTF-8") from None
            rows = bulkusers.rows_from_csv(text)
        else:
            rows = parse(UsersBulk, self.json_body()).users
        p = self.principal
        self.audit_target = "users/bulk"
        self.audit_domain = p.domain
        report = await self.db(lambda s: bulkusers.add_users(s, p, rows))
        created = [r["name"] for r in report["results"] if r["result"] == "created"]
        self.audit_detail = (f"created {report['created']}, refused {report['refused']}: "
                             + ", ".join(created))
        if report["created"]:
            self.mirror.request_sync()
        self.finish_json(report)

    def audit_action(self, method: str) -> str:
        return "user.bulk-create"


class DomainTotalsHandler(APIHandler):
    resource = "domain"

    async def get(self, domain):
        """A domain's and its projects' use per slot against their limits, members, folder limits (admins)."""
        self.audit_target = self.audit_domain = domain
        p = self.principal
        self.finish_json(await self.db(lambda s: totals.domain_totals(s, p, domain)))
