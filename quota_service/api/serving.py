"""REST handlers of model serving: endpoints and their bearer tokens.

A create, a change and a delete each run a pass of the serving controller
at once (``serving.replicas``: it starts and stops the replicas); routing
and the gateway are not built yet (docs/serving.md).
"""

from __future__ import annotations

from ..core.errors import Hidden
from ..core.schemas import EndpointCreate, EndpointTokenCreate, EndpointUpdate, parse
from ..serving import health, endpoints
from .base import APIHandler


class EndpointsHandler(APIHandler):
    resource = "endpoint"
    bodies = {"post": EndpointCreate}
    queries = {"get": {"project": "only this project's endpoints (a name in your domain)"}}

    async def get(self):
        """The endpoints the caller may see (their projects', their domain's), with health."""
        project = self.get_query_argument("project", None)
        models = await self.db(lambda s: endpoints.list_endpoints(s, self.principal, project))
        now = self.now()
        for model in models:  # each with its health, as GET endpoints/{id} has it
            model["health"] = self.serving_reports.of(model["id"], now, health.STALE_AFTER,
                                                      model["replicas"])
        self.finish_json(models)

    async def post(self):
        """Create an endpoint (project members); 422 with every problem the checks find."""
        body = parse(EndpointCreate, self.json_body())
        self.audit_target = f"{body.project}/{body.name}"
        now, hosts = self.now(), self.vfolder_hosts
        model = await self.db(lambda s: endpoints.create(s, self.principal, body, hosts, now))
        self.audit_target, self.audit_domain = model["id"], model["domain"]
        self.serve_soon()
        self.created(model, self.api_url("endpoints", model["id"]))


class ValidateHandler(APIHandler):
    resource = "endpoint"
    bodies = {"post": EndpointCreate}
    success = {"post": "200"}

    async def post(self):
        """Check an endpoint as a create would, writing nothing: {ok, problems, definition}."""
        body = parse(EndpointCreate, self.json_body())
        now, hosts = self.now(), self.vfolder_hosts
        self.finish_json(await self.db(
            lambda s: endpoints.validate(s, self.principal, body, hosts, now)))

    def audit_record(self):
        # a question, not a write: only a denial is worth a record
        if self.get_status() in (401, 403) or isinstance(getattr(self, "_api_error", None), Hidden):
            return super().audit_record()
        return None

    def audit_action(self, method: str) -> str:
        return "endpoint.validate"


class EndpointHandler(APIHandler):
    resource = "endpoint"
    bodies = {"patch": EndpointUpdate}

    async def get(self, endpoint_id):
        """One endpoint."""
        self.audit_target = endpoint_id
        model = await self.db(lambda s: endpoints.get(s, self.principal, endpoint_id))
        # its health as the gateway's probes see it (serving/health.py)
        model["health"] = self.serving_reports.of(endpoint_id, self.now(), health.STALE_AFTER,
                                                  model["replicas"])
        self.finish_json(model)

    async def patch(self, endpoint_id):
        """Change the desired replicas, or public (admins of its domain)."""
        self.audit_target = endpoint_id
        body = parse(EndpointUpdate, self.json_body())
        model = await self.db(
            lambda s: endpoints.update(s, self.principal, endpoint_id, body))
        self.audit_domain = model["domain"]
        self.serve_soon()
        self.finish_json(model)

    async def delete(self, endpoint_id):
        """Delete an endpoint and its tokens."""
        self.audit_target = endpoint_id
        self.audit_domain = await self.db(
            lambda s: endpoints.delete(s, self.principal, endpoint_id))
        self.serve_soon()  # a terminating one: its replicas stop
        self.no_content()


class TokensHandler(APIHandler):
    resource = "endpoint-token"
    bodies = {"post": EndpointTokenCreate}

    async def get(self, endpoint_id):
        """The endpoint's tokens, with their state; never a secret."""
        now = self.now()
        self.finish_json(await self.db(
            lambda s: endpoints.list_tokens(s, self.principal, endpoint_id, now)))

    async def post(self, endpoint_id):
        """Make a bearer token: its secret is in this answer only."""
        self.audit_target = endpoint_id
        body = parse(EndpointTokenCreate, self.json_body())
        now, max_days = self.now(), self.endpoint_token_max_days
        model, self.audit_domain = await self.db(lambda s: endpoints.create_token(
            s, self.principal, endpoint_id, body, now, max_days))
        self.audit_target = f"{endpoint_id}:{model['id']}"
        self.created(model, self.api_url("endpoints", endpoint_id, "tokens", model["id"]))


class TokenHandler(APIHandler):
    resource = "endpoint-token"

    async def delete(self, endpoint_id, token_id):
        """Revoke a token (it stays listed, as revoked)."""
        self.audit_target = f"{endpoint_id}:{token_id}"
        now = self.now()
        self.audit_domain = await self.db(
            lambda s: endpoints.revoke_token(s, self.principal, endpoint_id, token_id, now))
        self.no_content()

    def audit_action(self, method: str) -> str:
        return "endpoint-token.revoke"
