"""The OpenAPI 3 document, built from the URL tables and the body models.

Because the document is generated from the same route tables the app
serves and from the handlers' declared ``bodies``, a route cannot be served
without being documented; ``tests/test_openapi.py`` checks both directions.
"""

from __future__ import annotations

import re

from pydantic import TypeAdapter

from . import files, images, internal, scheduling, tenancy, vfolders
from .base import APIHandler, implemented_verbs


ERROR_SCHEMA = {
    "type": "object",
    "required": ["status", "reason", "message"],
    "properties": {
        "status": {"type": "integer"},
        "reason": {"type": "string"},
        "message": {"type": "string"},
        "detail": {},
    },
}

SUCCESS = {"get": "200", "post": "201", "put": "200", "patch": "200", "delete": "204",
           "head": "200", "options": "204"}


def openapi_path(route: str) -> tuple[str, list[str]]:
    """``domains/([^/]+)/projects`` -> ``/domains/{domain}/projects``."""
    names: list[str] = []
    # the group itself holds a '/': mark it before splitting the route
    parts = route.replace("([^/]+)", "\0").replace(images.IMAGE, "\0").split("/")
    out = []
    for i, part in enumerate(parts):
        if part == "\0":
            base = parts[i - 1].rstrip("s") if i else "name"
            name = {"keypair": "access_key", "member": "user", "identity": "user",
                    "resource-policie": "policy", "resource-group": "group",
                    "allocation": "allocation_id", "tu": "upload_id",
                    "share": "user"}.get(base, base)
            names.append(name)
            out.append("{" + name + "}")
        else:
            out.append(part.replace("\\.", "."))
    return "/" + "/".join(out), names


def _success(handler, verb: str) -> dict:
    produces = handler.produces.get(verb)
    if produces is None:
        return {"description": "success"}
    return {"description": "success",
            "content": {produces.split(";")[0]: {"schema": {"type": "string"}}}}


def oauth_cookie_name(service) -> str:
    """The cookie the service's HubOAuth sets after a browser login: its
    OAuth client id, which JupyterHub makes ``service-<name>`` (``<name>``
    as in the service's prefix ``/services/<name>/``), ``__Host-`` prefixed
    when the hub enables that."""
    if service.hub_auth is not None:
        return service.hub_auth.cookie_name
    return "service-" + service.service_prefix.strip("/").rsplit("/", 1)[-1]


def document(prefix: str, cookie_name: str) -> dict:
    """The OpenAPI document of the API at ``prefix``; ``cookie_name``: the
    OAuth cookie browsers authenticate with (``oauth_cookie_name``)."""
    paths: dict[str, dict] = {}
    schemas: dict[str, dict] = {"Error": ERROR_SCHEMA}
    for route, handler in all_routes():
        path, params = openapi_path(route)
        item = paths.setdefault(path, {})
        internal_route = getattr(handler, "caller_kind", "user") == "internal"
        for verb in implemented_verbs(handler):
            doc = (getattr(handler, verb).__doc__ or "").strip().splitlines()
            op = {
                "operationId": f"{verb}_{re.sub(r'[^a-z0-9]+', '_', path.lower()).strip('_')}",
                "summary": doc[0] if doc else f"{verb} {handler.resource}",
                "tags": ["internal" if internal_route else handler.resource],
                "parameters": [
                    {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                    for n in params
                ] + [
                    {"name": n, "in": "query", "required": False, "description": text,
                     "schema": getattr(handler, "query_schemas", {}).get(verb, {}).get(
                         n, {"type": "string"})}
                    for n, text in getattr(handler, "queries", {}).get(verb, {}).items()
                ],
                "responses": {
                    handler.success.get(verb, SUCCESS[verb]): _success(handler, verb),
                    "default": {
                        "description": "error",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                    },
                },
                "security": [{"internal": []}] if internal_route
                else [{"hubToken": []}, {"keypair": []}, {"oauthCookie": []}],
            }
            if verb == "put" and handler is tenancy.MemberHandler:
                op["responses"]["201"] = {"description": "added"}
            model = getattr(handler, "bodies", {}).get(verb)
            if model is not None:
                schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
                for name, sub in schema.pop("$defs", {}).items():
                    schemas[name] = sub
                schemas[model.__name__] = schema
                op["requestBody"] = {
                    "required": True,
                    "content": {"application/json": {
                        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
                }
            item[verb] = op
    return {
        "openapi": "3.1.0",  # pydantic emits JSON Schema 2020-12, as 3.1 uses
        "info": {
            "title": "hubgrid API",
            "version": "1",
            "description": "Tenancy, quotas and scheduling for JupyterHub. "
            "Authenticate with a JupyterHub token ('Authorization: token ...'), "
            "the hub's OAuth cookie, or a keypair ('Authorization: Keypair ACCESS:SECRET').",
        },
        "servers": [{"url": prefix.rstrip("/")}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "hubToken": {"type": "apiKey", "in": "header", "name": "Authorization"},
                "keypair": {"type": "apiKey", "in": "header", "name": "Authorization"},
                "oauthCookie": {"type": "apiKey", "in": "cookie", "name": cookie_name},
                "internal": {"type": "apiKey", "in": "header", "name": "Authorization"},
            },
        },
    }


class OpenAPIHandler(APIHandler):
    """The OpenAPI document (no authentication needed)."""

    resource = "openapi"

    async def prepare(self):
        pass

    def get(self):
        self.finish_json(document(self.service.api_prefix, oauth_cookie_name(self.service)))


routes = [(r"openapi\.json", OpenAPIHandler)]


def all_routes():
    # the hub's internal routes first: tornado tries the routes in order, and
    # pending spawners' long-polls are most of the requests
    return internal.routes + tenancy.routes + scheduling.routes + images.routes + routes \
        + vfolders.routes + files.routes
