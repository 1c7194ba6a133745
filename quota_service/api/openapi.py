"""The OpenAPI 3 document, built from the route table and the body models.

Because the document is generated from the same route table the app serves
(``api.routes``), its path parameters from the routes' named groups, its
summaries from the verbs' docstrings and its bodies from the handlers'
declared ``bodies``, a route cannot be served without being documented;
``tests/test_openapi.py`` checks both directions.
"""

from __future__ import annotations

import re

from pydantic import TypeAdapter

from ..core import names
from . import routes as route_table
from .base import implemented_verbs


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

#: path parameters that are names: the patterns names are checked against
#: (nothing outside them exists, so a request naming one answers 404)
PATH_SCHEMAS = {
    "domain": {"type": "string", "pattern": f"^{names.ENTITY_NAME.pattern}$"},
    "project": {"type": "string", "pattern": f"^{names.ENTITY_NAME.pattern}$"},
    "user": {"type": "string", "pattern": f"^{names.USER_NAME.pattern}$"},
}

SUCCESS = {"get": "200", "post": "201", "put": "200", "patch": "200", "delete": "204",
           "head": "200", "options": "204"}


def _codes(handler, verb: str) -> tuple[str, ...]:
    """The success statuses of a verb: its handler's ``success`` (one code,
    or a tuple when it answers several, e.g. 201 started / 202 queued)."""
    codes = handler.success.get(verb, SUCCESS[verb])
    return (codes,) if isinstance(codes, str) else tuple(codes)


#: a named group of a route: ``(?P<name>pattern)``
_GROUP = re.compile(r"\(\?P<([a-z_]+)>(?:[^()\\]|\\.)*\)")


def openapi_path(route: str) -> tuple[str, list[str]]:
    """``domains/(?P<domain>[^/]+)/projects`` -> (``/domains/{domain}/projects``,
    ``["domain"]``): the path parameters are the route's named groups."""
    names = _GROUP.findall(route)
    path = _GROUP.sub(lambda m: "{" + m.group(1) + "}", route).replace("\\.", ".")
    return "/" + path, names


def summary(handler: type, verb: str) -> str:
    """The first line of the verb's docstring."""
    doc = (getattr(handler, verb).__doc__ or "").strip().splitlines()
    return doc[0].strip() if doc else f"{verb} {handler.resource}"


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
    for route, handler in route_table.API:
        path, params = openapi_path(route)
        item = paths.setdefault(path, {})
        internal_route = getattr(handler, "caller_kind", "user") == "internal"
        for verb in implemented_verbs(handler):
            op = {
                "operationId": f"{verb}_{re.sub(r'[^a-z0-9]+', '_', path.lower()).strip('_')}",
                "summary": summary(handler, verb),
                "tags": ["internal" if internal_route else handler.resource],
                "parameters": [
                    {"name": n, "in": "path", "required": True,
                     "schema": PATH_SCHEMAS.get(n, {"type": "string"})}
                    for n in params
                ] + [
                    {"name": n, "in": "query", "required": False, "description": text,
                     "schema": getattr(handler, "query_schemas", {}).get(verb, {}).get(
                         n, {"type": "string"})}
                    for n, text in getattr(handler, "queries", {}).get(verb, {}).items()
                ] + [
                    {"name": n, "in": "header", **spec}
                    for n, spec in getattr(handler, "header_params", {}).get(verb, {}).items()
                ],
                "responses": {
                    **{code: _success(handler, verb) for code in _codes(handler, verb)},
                    "default": {
                        "description": "error",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                    },
                },
                "security": [{"internal": []}] if internal_route
                else [{"hubToken": []}, {"keypair": []}, {"oauthCookie": []}],
            }
            if verb in handler.creates_when_new:
                op["responses"]["201"] = {"description": "added"}
            model = getattr(handler, "bodies", {}).get(verb)
            if model is not None:
                schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
                for name, sub in schema.pop("$defs", {}).items():
                    schemas[name] = sub
                schemas[model.__name__] = schema
                op["requestBody"] = {
                    # a body whose fields are all optional may be left out
                    # (json_body reads none as {}); one with required fields not
                    "required": bool(schema.get("required")),
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
