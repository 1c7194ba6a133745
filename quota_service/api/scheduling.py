"""REST handlers for resource policies, resource groups, nodes and allocations."""

from __future__ import annotations

from ..scheduling import ending, inventory, ledger, listing, nodedesk, sessionaudit
from ..tenancy import policies
from ..sessions import logs
from ..core.errors import ApiError, Hidden
from ..core.schemas import (
    AllocationCreate,
    Grant,
    NodeCreate,
    NodeUpdate,
    ResourceGroupCreate,
    ResourceGroupUpdate,
    ResourcePolicyCreate,
    ResourcePolicyUpdate,
    parse,
)
from .base import APIHandler


class PoliciesHandler(APIHandler):
    resource = "resource-policy"
    bodies = {"post": ResourcePolicyCreate}

    async def get(self):
        """The resource policies the caller may read (admins: all; others: their own)."""
        self.finish_json(await self.db(lambda s: policies.list_policies(s, self.principal)))

    async def post(self):
        """Create a resource policy (superadmins)."""
        body = parse(ResourcePolicyCreate, self.json_body())
        self.audit_target = body.name
        model = await self.db(lambda s: policies.create_policy(s, self.principal, body))
        self.created(model, self.api_url("resource-policies", body.name))


class PolicyHandler(APIHandler):
    resource = "resource-policy"
    bodies = {"patch": ResourcePolicyUpdate}

    async def get(self, policy):
        """One resource policy."""
        self.audit_target = policy
        self.finish_json(await self.db(lambda s: policies.get_policy(s, self.principal, policy)))

    async def patch(self, policy):
        """Change a resource policy (superadmins; ``clear`` resets limits to unlimited)."""
        self.audit_target = policy
        body = parse(ResourcePolicyUpdate, self.json_body())
        model = await self.db(lambda s: policies.update_policy(s, self.principal, policy, body))
        self.finish_json(model)

    async def delete(self, policy):
        """Delete a resource policy nobody is assigned (superadmins)."""
        self.audit_target = policy
        await self.db(lambda s: policies.delete_policy(s, self.principal, policy))
        self.no_content()


class PresetsHandler(APIHandler):
    """The resource presets (``c.HubgridService.resource_presets``)."""

    resource = "resource-preset"

    async def get(self):
        """The resource presets every user is offered, the default one marked."""
        self.finish_json(self.resource_presets)


class GroupsHandler(APIHandler):
    resource = "resource-group"
    bodies = {"post": ResourceGroupCreate}

    async def get(self):
        """The resource groups the caller may see."""
        self.finish_json(await self.db(lambda s: inventory.list_groups(s, self.principal)))

    async def post(self):
        """Create a resource group (superadmins)."""
        body = parse(ResourceGroupCreate, self.json_body())
        self.audit_target = body.name
        model = await self.db(lambda s: inventory.create_group(s, self.principal, body))
        self.created(model, self.api_url("resource-groups", body.name))


class GroupHandler(APIHandler):
    resource = "resource-group"
    bodies = {"patch": ResourceGroupUpdate}

    async def get(self, group):
        """One resource group."""
        self.audit_target = group
        self.finish_json(await self.db(lambda s: inventory.get_group(s, self.principal, group)))

    async def patch(self, group):
        """Change a resource group (superadmins; ``clear`` resets its pending timeout)."""
        self.audit_target = group
        body = parse(ResourceGroupUpdate, self.json_body())
        model = await self.db(lambda s: inventory.update_group(s, self.principal, group, body))
        self.finish_json(model)

    async def delete(self, group):
        """Delete a resource group without nodes or history (superadmins)."""
        self.audit_target = group
        await self.db(lambda s: inventory.delete_group(s, self.principal, group))
        self.no_content()


class GrantsHandler(APIHandler):
    """Grant (PUT) or revoke (DELETE) access to a resource group."""

    resource = "resource-group-grant"
    bodies = {"put": Grant, "delete": Grant}
    creates_when_new = ("put",)

    async def put(self, group):
        """Grant a domain, project or user the group (superadmins; 201 when new)."""
        self.audit_target = group
        body = parse(Grant, self.json_body())
        self.audit_detail = grantee(body, "granted to")

        def grant(s):
            added = inventory.grant(s, self.principal, group, body)
            return added, inventory.get_group(s, self.principal, group)

        added, model = await self.db(grant)
        self.finish_json(model, 201 if added else 200)

    async def delete(self, group):
        """Revoke a grant of the group (superadmins)."""
        self.audit_target = group
        body = parse(Grant, self.json_body())
        self.audit_detail = grantee(body, "revoked from")
        await self.db(lambda s: inventory.revoke(s, self.principal, group, body))
        self.no_content()

    def audit_action(self, method: str) -> str:
        return {"PUT": "resource-group.grant", "DELETE": "resource-group.revoke"}.get(
            method, super().audit_action(method))


def grantee(body: Grant, verb: str) -> str:
    """``granted to user bob``: whom a grant names, for the access log."""
    for kind in ("domain", "project", "user"):
        if getattr(body, kind):
            return f"{verb} {kind} {getattr(body, kind)}"
    return f"{verb} nobody (the body names no domain, project or user)"


class NodesHandler(APIHandler):
    resource = "node"
    bodies = {"post": NodeCreate}

    async def get(self):
        """The nodes of the resource groups the caller may see."""
        self.finish_json(await self.db(lambda s: inventory.list_nodes(s, self.principal)))

    async def post(self):
        """Add a node to a resource group (superadmins)."""
        body = parse(NodeCreate, self.json_body())
        self.audit_target = body.name
        model = await self.db(lambda s: inventory.create_node(s, self.principal, body))
        self.created(model, self.api_url("nodes", body.name))


class NodeHandler(APIHandler):
    resource = "node"
    bodies = {"patch": NodeUpdate}

    async def get(self, node):
        """One node (admins: with ``until_empty``, how long a drain takes at its sessions' limits)."""
        self.audit_target = node
        now = self.now()
        self.finish_json(await self.db(lambda s: nodedesk.node_for(s, self.principal, node, now)))

    async def patch(self, node):
        """Change a node (superadmins); the queues are tried again at once."""
        self.audit_target = node
        body = parse(NodeUpdate, self.json_body())
        self._drain = body.schedulable
        self.audit_detail = node_change(node, body)
        model = await self.db(lambda s: inventory.update_node(s, self.principal, node, body))
        self.audit_detail = f"{self.audit_detail}; resource group: {model['resource_group']}"
        self.finish_json(model)
        self.schedule_soon()

    _drain: bool | None = None

    def audit_action(self, method: str) -> str:
        # a drain and an undrain read as what they are (node.update otherwise)
        if method == "PATCH" and self._drain is not None:
            return "node.undrain" if self._drain else "node.drain"
        return super().audit_action(method)

    async def delete(self, node):
        """Remove a node without history (superadmins)."""
        self.audit_target = node
        await self.db(lambda s: inventory.delete_node(s, self.principal, node))
        self.no_content()


def node_change(node: str, body: NodeUpdate) -> str:
    """What a node PATCH changes, for the access log: ``node: n1; drained
    (no new sessions; running ones stay)``, ``capacity: cpu 8, mem 32 GiB``."""
    parts = [f"node: {node}"]
    if body.schedulable is not None:
        parts.append("undrained (takes new sessions again)" if body.schedulable
                     else "drained (no new sessions; running ones stay)")
    if body.capacity is not None:
        parts.append(f"capacity: {sessionaudit.resources(body.capacity)}")
    if body.devices is not None:
        parts.append(f"devices: {len(body.devices)}")
    if body.backend_url is not None:
        parts.append(f"backend url: {body.backend_url or '(none)'}")
    return "; ".join(parts)


class SessionAudit:
    """The access log of a session's verbs: the ledger writes a success
    (``session.start``, ``session.queue``, ``session.end``: scheduling/
    sessionaudit.py) in the transaction that makes it; the request's own
    entry is kept only for a refusal or failure, named alike."""

    def via(self) -> sessionaudit.Via:
        p = self.principal
        return sessionaudit.Via(p.name, self._credential, self.client_address())

    def audit_record(self):
        if self.get_status() < 400:
            return None
        return super().audit_record()


class AllocationsHandler(SessionAudit, APIHandler):
    """Ask for resources: 201 allocated, 202 pending (with reasons), 422 refused."""

    resource = "allocation"
    bodies = {"post": AllocationCreate}
    success = {"post": ("201", "202")}  # allocated / pending
    confirmed_in_batch = frozenset({"post"})
    queries = {"get": {"state": "pending, allocated, released or cancelled (several: "
                                "comma-separated)",
                       "user": "only this user's",
                       "limit": "only the N that began or ended last (X-Total-Count: how "
                                "many in all)"}}
    query_schemas = {"get": {
        "state": {"type": "string", "pattern": "^({0})(,({0}))*$".format("|".join(listing.STATES))},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100_000}}}

    async def get(self):
        """The allocations the caller may see, oldest first (``state``, ``user``, ``limit`` narrow)."""
        states = listing.parse_states(self.get_query_argument("state", None))
        user = self.get_query_argument("user", None)
        limit = self.int_argument("limit", 1, 100_000)
        base_url = self.hub_base_url
        found = await self.db(lambda s: listing.list_allocations(
            s, self.principal, states, user, base_url=base_url, limit=limit))
        self.set_header("X-Total-Count", str(found.total))
        self.finish_json(found.allocations)

    async def post(self):
        """Ask for resources: 201 allocated, 202 pending (with reasons), 422 refused."""
        body = parse(AllocationCreate, self.json_body())
        self.audit_domain = self.principal.domain
        self.audit_target = f"{body.project}@{body.resource_group}"
        now, strategy, base_url = self.now(), self.strategy, self.hub_base_url
        via = self.via()
        model = await self.db(lambda s: ledger.submit(s, self.principal, body, now, strategy,
                                                      base_url=base_url, via=via), ledger="batched")
        self.audit_target = model["id"]
        status = 201 if model["state"] == "allocated" else 202
        self.set_header("Location", self.api_url("allocations", model["id"]))
        self.finish_json(model, status)

    def audit_action(self, method: str) -> str:
        return sessionaudit.START if method == "POST" else super().audit_action(method)


class DryRunHandler(APIHandler):
    """Would this request fit now, and if not, what blocks it? Writes nothing."""

    resource = "allocation"
    bodies = {"post": AllocationCreate}
    success = {"post": "200"}  # the verdict; nothing is created

    async def post(self):
        """Would this request fit now, and if not, what blocks it? Writes nothing."""
        body = parse(AllocationCreate, self.json_body())
        now, strategy = self.now(), self.strategy
        self.finish_json(await self.db(lambda s: ledger.submit(
            s, self.principal, body, now, strategy, dry_run=True)))

    def audit_action(self, method: str) -> str:
        return "session.dry-run"

    def audit_record(self):
        # a question, not a write: only a denial is worth a record
        if self.get_status() in (401, 403) or isinstance(getattr(self, "_api_error", None), Hidden):
            return super().audit_record()
        return None


class AllocationHandler(SessionAudit, APIHandler):
    """One allocation; while pending, ``reasons`` says why."""

    resource = "allocation"
    confirmed_in_batch = frozenset({"delete"})

    async def get(self, allocation_id):
        """One allocation; while pending, ``reasons`` says why."""
        self.audit_target = allocation_id
        base_url = self.hub_base_url
        self.finish_json(await self.db(lambda s: ledger.allocation_model(
            s, ledger.visible_allocation(s, self.principal, allocation_id), base_url)))

    async def delete(self, allocation_id):
        """Release an allocation, or cancel a pending one (not one a hub server holds)."""
        self.audit_target = allocation_id
        now, via = self.now(), self.via()
        ended = await self.db(lambda s: ending.end(
            s, self.principal, allocation_id, now, f"stopped by {self.principal.name}",
            via=via), ledger="batched", before=(ending.read, allocation_id))
        self.audit_domain = ended.domain
        self.schedule_soon(ended.resource_group)
        self.no_content()

    def audit_action(self, method: str) -> str:
        return sessionaudit.END if method == "DELETE" else super().audit_action(method)


class AllocationLogHandler(APIHandler):
    """The output of a session, as the spawner sent it. Every answer says in
    X-Hubgrid-Log-Start where its output begins (past ``offset`` when older
    output was dropped) and in X-Hubgrid-Log-End the position after it:
    a follower asks for ``offset`` = that end, and reads each byte once."""

    resource = "allocation-log"
    queries = {"get": {"tail": "only the last N bytes",
                       "offset": "only the output from this position on (a follower passes "
                                 "the X-Hubgrid-Log-End of its last read)"}}
    produces = {"get": "text/plain; charset=utf-8"}

    async def get(self, allocation_id):
        """The session's log as text (410 once purged by the retention rule)."""
        self.audit_target = allocation_id
        tail = self.int_argument("tail", 0, 2**40)
        offset = self.int_argument("offset", 0, 2**62)
        if tail is not None and offset is not None:
            raise ApiError("tail or offset: not both")
        store, days = self.log_store, self.log_retention_days
        view = await self.db(lambda s: logs.read_log(s, self.principal, store, allocation_id,
                                                     tail, days, offset))
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("X-Hubgrid-Log-Start", str(view.start))
        self.set_header("X-Hubgrid-Log-End", str(view.end))
        data = view.data
        self.finish(data.decode("utf-8", errors="replace"))
