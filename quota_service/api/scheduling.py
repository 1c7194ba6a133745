"""REST handlers for resource policies, resource groups, nodes and allocations."""

from __future__ import annotations

from ..scheduling import inventory, ledger
from ..tenancy import policies
from ..sessions import logs
from ..core.db import ledger_transaction
from ..core.errors import Hidden
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

    def get(self):
        with self.transaction() as s:
            self.finish_json(policies.list_policies(s, self.principal))

    def post(self):
        body = parse(ResourcePolicyCreate, self.json_body())
        self.audit_target = body.name
        with self.transaction() as s:
            model = policies.create_policy(s, self.principal, body)
        self.created(model, self.service.api_url("resource-policies", body.name))


class PolicyHandler(APIHandler):
    resource = "resource-policy"
    bodies = {"patch": ResourcePolicyUpdate}

    def get(self, name):
        self.audit_target = name
        with self.transaction() as s:
            self.finish_json(policies.get_policy(s, self.principal, name))

    def patch(self, name):
        self.audit_target = name
        body = parse(ResourcePolicyUpdate, self.json_body())
        with self.transaction() as s:
            model = policies.update_policy(s, self.principal, name, body)
        self.finish_json(model)

    def delete(self, name):
        self.audit_target = name
        with self.transaction() as s:
            policies.delete_policy(s, self.principal, name)
        self.no_content()


class GroupsHandler(APIHandler):
    resource = "resource-group"
    bodies = {"post": ResourceGroupCreate}

    def get(self):
        with self.transaction() as s:
            self.finish_json(inventory.list_groups(s, self.principal))

    def post(self):
        body = parse(ResourceGroupCreate, self.json_body())
        self.audit_target = body.name
        with self.transaction() as s:
            model = inventory.create_group(s, self.principal, body)
        self.created(model, self.service.api_url("resource-groups", body.name))


class GroupHandler(APIHandler):
    resource = "resource-group"
    bodies = {"patch": ResourceGroupUpdate}

    def get(self, name):
        self.audit_target = name
        with self.transaction() as s:
            self.finish_json(inventory.get_group(s, self.principal, name))

    def patch(self, name):
        self.audit_target = name
        body = parse(ResourceGroupUpdate, self.json_body())
        with self.transaction() as s:
            model = inventory.update_group(s, self.principal, name, body)
        self.finish_json(model)

    def delete(self, name):
        self.audit_target = name
        with self.transaction() as s:
            inventory.delete_group(s, self.principal, name)
        self.no_content()


class GrantsHandler(APIHandler):
    """Grant (PUT) or revoke (DELETE) access to a resource group."""

    resource = "resource-group-grant"
    bodies = {"put": Grant, "delete": Grant}

    def put(self, name):
        self.audit_target = name
        body = parse(Grant, self.json_body())
        with self.transaction() as s:
            added = inventory.grant(s, self.principal, name, body)
            model = inventory.get_group(s, self.principal, name)
        self.finish_json(model, 201 if added else 200)

    def delete(self, name):
        self.audit_target = name
        body = parse(Grant, self.json_body())
        with self.transaction() as s:
            inventory.revoke(s, self.principal, name, body)
        self.no_content()


class NodesHandler(APIHandler):
    resource = "node"
    bodies = {"post": NodeCreate}

    def get(self):
        with self.transaction() as s:
            self.finish_json(inventory.list_nodes(s, self.principal))

    def post(self):
        body = parse(NodeCreate, self.json_body())
        self.audit_target = body.name
        with self.transaction() as s:
            model = inventory.create_node(s, self.principal, body)
        self.created(model, self.service.api_url("nodes", body.name))


class NodeHandler(APIHandler):
    resource = "node"
    bodies = {"patch": NodeUpdate}

    def get(self, name):
        self.audit_target = name
        with self.transaction() as s:
            self.finish_json(inventory.get_node(s, self.principal, name))

    def patch(self, name):
        self.audit_target = name
        body = parse(NodeUpdate, self.json_body())
        with self.transaction() as s:
            model = inventory.update_node(s, self.principal, name, body)
        self.finish_json(model)
        self.service.schedule_soon()

    def delete(self, name):
        self.audit_target = name
        with self.transaction() as s:
            inventory.delete_node(s, self.principal, name)
        self.no_content()


class AllocationsHandler(APIHandler):
    """Ask for resources: 201 allocated, 202 pending (with reasons), 422 refused."""

    resource = "allocation"
    bodies = {"post": AllocationCreate}
    queries = {"get": {"state": "pending, allocated, released or cancelled",
                       "user": "only this user's"}}

    def get(self):
        with self.transaction() as s:
            self.finish_json(ledger.list_allocations(
                s, self.principal, self.get_query_argument("state", None),
                self.get_query_argument("user", None), base_url=self.service.hub_base_url))

    def post(self):
        body = parse(AllocationCreate, self.json_body())
        self.audit_domain = self.principal.domain
        self.audit_target = f"{body.project}@{body.resource_group}"
        with ledger_transaction(self.service.session_factory) as s:
            model = ledger.submit(s, self.principal, body, self.now(), self.service.strategy,
                                  base_url=self.service.hub_base_url)
        self.audit_target = model["id"]
        status = 201 if model["state"] == "allocated" else 202
        self.set_header("Location", self.service.api_url("allocations", model["id"]))
        self.finish_json(model, status)


class DryRunHandler(APIHandler):
    """Would this request fit now, and if not, what blocks it? Writes nothing."""

    resource = "allocation"
    bodies = {"post": AllocationCreate}

    def post(self):
        body = parse(AllocationCreate, self.json_body())
        with self.transaction() as s:
            self.finish_json(ledger.submit(s, self.principal, body, self.now(),
                                           self.service.strategy, dry_run=True))

    def on_finish(self):
        # a question, not a write: only a denial is worth a record
        if self.get_status() in (401, 403) or isinstance(getattr(self, "_api_error", None), Hidden):
            super().on_finish()


class AllocationHandler(APIHandler):
    """One allocation; while pending, ``reasons`` says why."""

    resource = "allocation"

    def get(self, alloc_id):
        self.audit_target = alloc_id
        with self.transaction() as s:
            self.finish_json(ledger.allocation_model(
                s, ledger.visible_allocation(s, self.principal, alloc_id),
                self.service.hub_base_url))

    def delete(self, alloc_id):
        self.audit_target = alloc_id
        with ledger_transaction(self.service.session_factory) as s:
            model = ledger.release(s, self.principal, alloc_id, self.now(), "released by API")
        self.audit_domain = model["domain"]
        self.service.schedule_soon(model["resource_group"])
        self.no_content()


class AllocationLogHandler(APIHandler):
    """The output of a session, as the spawner sent it."""

    resource = "allocation-log"
    queries = {"get": {"tail": "only the last N bytes"}}
    produces = {"get": "text/plain; charset=utf-8"}

    def get(self, alloc_id):
        """The session's log as text (410 once purged by the retention rule)."""
        self.audit_target = alloc_id
        tail = self.int_argument("tail", 0, 2**40)
        with self.transaction() as s:
            data = logs.read_log(s, self.principal, self.service.log_store, alloc_id,
                                        tail, self.service.session_log_retention_days)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(data.decode("utf-8", errors="replace"))


NAME = r"([^/]+)"

routes = [
    (r"resource-policies", PoliciesHandler),
    (rf"resource-policies/{NAME}", PolicyHandler),
    (r"resource-groups", GroupsHandler),
    (rf"resource-groups/{NAME}", GroupHandler),
    (rf"resource-groups/{NAME}/grants", GrantsHandler),
    (r"nodes", NodesHandler),
    (rf"nodes/{NAME}", NodeHandler),
    (r"allocations", AllocationsHandler),
    (r"allocations/dry-run", DryRunHandler),
    (rf"allocations/{NAME}", AllocationHandler),
    (rf"allocations/{NAME}/logs", AllocationLogHandler),
]
