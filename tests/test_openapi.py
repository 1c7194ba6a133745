"""The OpenAPI document and the routes the service serves agree, both ways.

The app is the real tornado application of ``HubgridService`` on SQLite,
served on a free loopback port without a hub (no $JUPYTERHUB_API_TOKEN):
callers authenticate with a keypair, the hub's endpoints with the internal
token.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import threading
from pathlib import Path

import pytest
from openapi_spec_validator import validate
from sqlalchemy import event
from tornado import web
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port

from quota_service.tenancy import accounts as manager
from quota_service.app import HubgridService
from quota_service.core.db import ledger_transaction, transaction
from quota_service.api import routes as route_table
from quota_service.api.base import APIHandler, JSONNotFoundHandler, implemented_verbs
from quota_service.api.openapi import document, oauth_cookie_name
from quota_service.core.schemas import KeypairCreate

HTTP_VERBS = ("get", "head", "post", "put", "patch", "delete", "options")
INTERNAL_TOKEN = "internal-test-token"
HUB_ENV = (
    "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "JUPYTERHUB_SERVICE_PREFIX",
    "JUPYTERHUB_SERVICE_URL", "JUPYTERHUB_COOKIE_SECRET", "HUBGRID_DB_URL",
    "HUBGRID_CONFIG_FILE", "HUBGRID_INTERNAL_TOKEN", "HUBGRID_BOOTSTRAP_SUPERADMIN",
)


@pytest.fixture
def service(tmp_path, monkeypatch):
    """The service, initialised on SQLite, and the socket it will serve on."""
    for name in HUB_ENV:
        monkeypatch.delenv(name, raising=False)
    sock, port = bind_unused_port()
    svc = HubgridService(
        db_url=f"sqlite:///{tmp_path / 'service.sqlite'}",
        service_url=f"http://127.0.0.1:{port}",
        bootstrap_superadmin="root",
        internal_token=INTERNAL_TOKEN,
    )
    try:
        svc.initialize([])
        assert svc.hub_auth is None, "a hub token leaked into the test"
        yield svc, sock
    finally:
        sock.close()
        if hasattr(svc, "engine"):
            svc.engine.dispose()


@pytest.fixture
def app(service):
    return service[0].make_app()


@pytest.fixture
def doc(service) -> dict:
    return document(service[0].api_prefix, oauth_cookie_name(service[0]))


@pytest.fixture
async def served(service, app):
    """Base URL of the app served in this test's event loop, and a client."""
    svc, sock = service
    server = HTTPServer(app)
    server.add_sockets([sock])
    client = AsyncHTTPClient(force_instance=True)
    try:
        yield svc.service_url.rstrip("/"), client
    finally:
        client.close()
        server.stop()
        await server.close_all_connections()


def api_routes(app, api_prefix: str) -> dict[str, type]:
    """``/path/{}/...`` -> handler, for every route under the API prefix."""
    routes = {}
    for rule in app.wildcard_router.rules:
        pattern = rule.matcher.regex.pattern
        if not pattern.startswith(api_prefix) or rule.target is JSONNotFoundHandler:
            continue
        path = pattern[len(api_prefix) - 1:]
        path = re.sub(r"/\?\$$", "", path)
        # one path segment, or an image name (its '/'s raw or URL-encoded)
        path = re.sub(r"\(\?P<[a-z_]+>(\[\^/\]\+|\.\+)\)", "{}", path)
        path = path.replace("openapi\\.json", "openapi.json")
        assert "(" not in path and "$" not in path, f"unexpected route pattern {pattern}"
        assert path not in routes, f"{path} is routed twice"
        routes[path] = rule.target
    return routes


def implemented(handler: type) -> set[str]:
    return {v for v in HTTP_VERBS if getattr(handler, v) is not getattr(web.RequestHandler, v)}


def documented(doc: dict) -> dict[str, set[str]]:
    return {
        re.sub(r"\{[^}]+\}", "{}", path): set(item) for path, item in doc["paths"].items()
    }


def test_every_api_route_is_documented_with_exactly_the_verbs_it_implements(service, app, doc):
    routes = api_routes(app, service[0].api_prefix)
    assert len(routes) >= 15
    served_ops = {path: implemented(handler) for path, handler in routes.items()}
    assert documented(doc) == served_ops


def test_the_document_names_the_api_prefix_and_every_path_parameter(service, doc):
    assert doc["servers"] == [{"url": "/services/hubgrid/api/v1"}]
    for path, item in doc["paths"].items():
        in_path = re.findall(r"\{([^}]+)\}", path)
        assert len(set(in_path)) == len(in_path), f"{path} repeats a parameter name"
        for verb, op in item.items():
            declared = [p["name"] for p in op["parameters"] if p["in"] == "path"]
            assert declared == in_path, f"{verb} {path}"


def test_operation_ids_are_unique(doc):
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def test_the_document_is_valid_openapi_3(doc):
    assert doc["openapi"].startswith("3.")
    validate(doc)


def test_every_body_a_handler_parses_is_documented(doc):
    bodies = {
        (path, verb): op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        for path, item in doc["paths"].items()
        for verb, op in item.items()
        if "requestBody" in op
    }
    assert bodies[("/domains", "post")] == "#/components/schemas/DomainCreate"
    assert bodies[("/users/{user}", "patch")] == "#/components/schemas/UserUpdate"
    assert bodies[("/internal/login", "post")] == "#/components/schemas/LoginEvent"
    schemas = doc["components"]["schemas"]
    for ref in bodies.values():
        schema = schemas[ref.rsplit("/", 1)[1]]
        assert schema["additionalProperties"] is False, ref


# --- over real HTTP ----------------------------------------------------------------

async def fetch(client, url, method="GET", auth=None, body=None):
    headers = {"Authorization": auth} if auth else {}
    if body is None and method in ("POST", "PUT", "PATCH"):
        body = "{}"
    resp = await client.fetch(url, method=method, headers=headers, body=body, raise_error=False,
                              allow_nonstandard_methods=True)
    # JSON answers only: the metrics are text
    is_json = resp.headers.get("Content-Type", "").startswith("application/json")
    data = json.loads(resp.body) if resp.body and is_json else None
    return resp, data


async def test_openapi_json_is_served_without_authentication(served, service):
    base, client = served
    api = base + service[0].api_prefix
    resp, data = await fetch(client, api + "openapi.json")
    assert resp.code == 200
    assert resp.headers["Content-Type"].startswith("application/json")
    assert data == document(service[0].api_prefix, oauth_cookie_name(service[0]))
    # while the API itself wants a caller
    resp, data = await fetch(client, api + "me")
    assert resp.code == 401
    assert data["reason"] == "unauthenticated"


async def sweep(svc, served, doc, before_each=None) -> list[str]:
    """Every verb on every documented path (unknown ids), as root or the hub:
    what is not answered as documented. ``before_each(what)`` is called
    before each request."""
    with transaction(svc.session_factory) as s:
        root = manager.principal_for_hub_user(s, "root")
        kp = manager.create_keypair(s, root, KeypairCreate(), svc.clock())
    user_auth = f"Keypair {kp['access_key']}:{kp['secret_key']}"
    internal_auth = f"hubgrid-internal {INTERNAL_TOKEN}"
    base, client = served
    api = base + svc.api_prefix.rstrip("/")
    problems = []
    for path, item in sorted(doc["paths"].items()):
        url = api + re.sub(r"\{[^}]+\}", "nosuch", path)
        # delete last, so a path's other verbs still find what they read
        verbs = sorted({"get", "post", "put", "patch", "delete"}, key=lambda v: v == "delete")
        for verb in verbs:
            op = item.get(verb)
            internal = op is not None and op["security"] == [{"internal": []}]
            if op is None:
                internal = any(o["security"] == [{"internal": []}] for o in item.values())
            if before_each is not None:
                before_each(f"{verb.upper()} {path}")
            resp, data = await fetch(client, url, verb.upper(),
                                     internal_auth if internal else user_auth)
            what = f"{verb.upper()} {path} -> {resp.code} {data}"
            if op is None:
                if resp.code != 405:
                    problems.append(f"undocumented but served: {what}")
                elif set(resp.headers.get("Allow", "").split(", ")) != {v.upper() for v in item}:
                    problems.append(f"405 whose Allow is not the documented verbs: {what} "
                                    f"Allow: {resp.headers.get('Allow')!r}")
            elif resp.code in (401, 405) or resp.code >= 500 or (
                resp.code == 404 and "no such API endpoint" in (data or {}).get("message", "")
            ):
                problems.append(f"documented but not served: {what}")
    return problems


async def test_every_documented_operation_is_served_and_no_other(served, service, doc):
    """Each documented path+verb reaches its handler (not 404/405/500);
    each other verb on a documented path is a 405."""
    assert await sweep(service[0], served, doc) == []


@pytest.mark.parametrize("verb", ["TRACE", "PROPFIND", "HEAD", "PUT"])
@pytest.mark.parametrize("path, allow", [
    ("domains", "GET, POST"), ("domains/default", "GET, PATCH, DELETE"), ("audit", "GET"),
    ("openapi.json", "GET"), ("keypairs", "GET, POST"),
])
async def test_a_405_says_which_verbs_the_route_has(served, service, verb, path, allow):
    svc = service[0]
    with transaction(svc.session_factory) as s:
        root = manager.principal_for_hub_user(s, "root")
        kp = manager.create_keypair(s, root, KeypairCreate(), svc.clock())
    base, client = served
    resp, data = await fetch(client, base + svc.api_prefix + path, verb,
                             f"Keypair {kp['access_key']}:{kp['secret_key']}")
    assert resp.code == 405
    assert resp.headers["Allow"] == allow
    if verb != "HEAD":
        assert data["status"] == 405


@pytest.mark.parametrize("verb", ["TRACE", "GET", "PROPFIND"])
async def test_any_verb_on_an_unknown_api_path_is_a_json_404(served, service, verb):
    base, client = served
    resp, data = await fetch(client, base + service[0].api_prefix + "no/such/thing", verb)
    assert resp.code == 404 and "no such API endpoint" in data["message"]


def test_the_documented_cookie_is_the_one_hub_oauth_sets(service, monkeypatch):
    """What a HubOAuth of this service, as the hub would start it, calls its cookie."""
    from jupyterhub.services.auth import HubOAuth
    from jupyterhub.services.service import Service

    svc = service[0]
    name = svc.service_prefix.strip("/").rsplit("/", 1)[-1]
    monkeypatch.setenv("JUPYTERHUB_CLIENT_ID", Service(name=name).oauth_client_id)
    hub_auth = HubOAuth(api_token="t", api_url="http://127.0.0.1:1/hub/api")
    doc = document(svc.api_prefix, oauth_cookie_name(svc))
    assert doc["components"]["securitySchemes"]["oauthCookie"]["name"] == hub_auth.cookie_name
    # under a hub: whatever the service's own HubOAuth says (a __Host- prefix too)
    monkeypatch.setenv("JUPYTERHUB_COOKIE_HOST_PREFIX_ENABLED", "1")
    svc.hub_auth = HubOAuth(api_token="t", api_url="http://127.0.0.1:1/hub/api")
    assert oauth_cookie_name(svc) == svc.hub_auth.cookie_name != hub_auth.cookie_name


# --- the route table, summaries and path parameters ----------------------------------

def test_every_route_parameter_is_a_named_group_its_verbs_take_by_name():
    for route, handler in route_table.API:
        pattern = re.compile(route)
        assert pattern.groups == len(pattern.groupindex), f"{route}: an unnamed group"
        names = sorted(pattern.groupindex, key=pattern.groupindex.get)
        for verb in implemented_verbs(handler):
            taken = list(inspect.signature(getattr(handler, verb)).parameters)[1:]
            assert taken[:len(names)] == names, f"{verb} {route}: takes {taken}"
            assert all(inspect.signature(getattr(handler, verb)).parameters[p].default
                       is not inspect.Parameter.empty for p in taken[len(names):]), \
                f"{verb} {route}: needs arguments the route does not give"


def test_every_operation_is_summed_up_by_its_verbs_one_line_docstring(doc):
    seen = 0
    for route, handler in route_table.API:
        path = "/" + re.sub(r"\(\?P<([a-z_]+)>[^()]*\)", r"{\1}", route).replace("\\.", ".")
        for verb in implemented_verbs(handler):
            docstring = getattr(handler, verb).__doc__
            assert docstring and "\n" not in docstring.strip(), f"{verb} {route}: {docstring!r}"
            assert doc["paths"][path][verb]["summary"] == docstring.strip()
            seen += 1
    assert seen == sum(len(item) for item in doc["paths"].values())


def test_the_path_parameters_of_every_operation_are_its_routes_named_groups(doc):
    for route, handler in route_table.API:
        pattern = re.compile(route)
        names = sorted(pattern.groupindex, key=pattern.groupindex.get)
        path = "/" + re.sub(r"\(\?P<([a-z_]+)>[^()]*\)", r"{\1}", route).replace("\\.", ".")
        for verb, op in doc["paths"][path].items():
            assert [p["name"] for p in op["parameters"] if p["in"] == "path"] == names


def test_only_the_base_handler_reaches_the_service_or_opens_transactions():
    """Handlers use the base's typed accessors and its ``db`` helper."""
    api = Path(route_table.__file__).parent
    wrong = []
    for path in sorted(api.glob("*.py")):
        if path.name in ("base.py", "browser.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "service" and \
                    isinstance(node.value, ast.Name) and node.value.id == "self":
                wrong.append(f"{path.name}:{node.lineno}: self.service")
            if isinstance(node, ast.Name) and node.id in ("transaction", "ledger_transaction"):
                wrong.append(f"{path.name}:{node.lineno}: {node.id}")
            if isinstance(node, ast.Attribute) and node.attr in ("to_thread", "session_factory"):
                wrong.append(f"{path.name}:{node.lineno}: {node.attr}")
    assert wrong == []


# --- the database off the event loop ---------------------------------------------

@pytest.fixture
def statements(service):
    """(thread id, what was being asked) of every SQL statement the service's
    engine runs while a test asks (``ask``: set what is being asked)."""
    svc = service[0]
    asking: list[str] = []
    seen: list[tuple[int, str]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if asking:
            seen.append((threading.get_ident(), asking[-1]))

    event.listen(svc.engine, "before_cursor_execute", record)
    try:
        yield seen, asking.append
    finally:
        event.remove(svc.engine, "before_cursor_execute", record)


async def test_no_handler_touches_the_database_on_the_event_loop(served, service, doc,
                                                                  statements):
    """Every operation, authentication and the access log included: each SQL
    statement runs in a worker thread, none on the loop's."""
    seen, ask = statements
    assert await sweep(service[0], served, doc, before_each=ask) == []
    loop = threading.get_ident()
    assert {what for thread, what in seen} >= {"GET /me", "POST /domains",
                                                "DELETE /vfolders/{folder_id}"}
    assert sorted({what for thread, what in seen if thread == loop}) == []


async def test_the_check_above_sees_database_work_done_on_the_loop(served, service, statements,
                                                                    monkeypatch):
    """The same check, with a ``db`` helper that runs the work inline: caught."""

    async def inline(self, work, *, ledger=False):
        with (ledger_transaction if ledger else transaction)(self.session_factory) as s:
            return work(s)

    monkeypatch.setattr(APIHandler, "db", inline)
    seen, ask = statements
    svc = service[0]
    with transaction(svc.session_factory) as s:
        root = manager.principal_for_hub_user(s, "root")
        kp = manager.create_keypair(s, root, KeypairCreate(), svc.clock())
    base, client = served
    ask("GET /me")
    resp, data = await fetch(client, base + svc.api_prefix + "me",
                             auth=f"Keypair {kp['access_key']}:{kp['secret_key']}")
    assert resp.code == 200 and data["name"] == "root"
    assert threading.get_ident() in {thread for thread, _ in seen}



def _verbs_answering_201_or_200():
    """Handler verbs whose source answers ``201 if ... else 200``."""
    found = set()
    for handler in {h for _, h in route_table.API}:
        for verb in implemented_verbs(handler):
            source = inspect.getsource(getattr(handler, verb))
            if re.search(r"201 if .* else 200", source):
                found.add((handler.__name__, verb))
    return found


def test_verbs_that_add_or_keep_document_both_statuses(doc):
    """PUT of a member or a grant answers 201 when new, 200 when it was there."""
    both = _verbs_answering_201_or_200()
    assert {("MemberHandler", "put"), ("GrantsHandler", "put")} <= both
    for handler in {h for _, h in route_table.API}:
        for verb in implemented_verbs(handler):
            assert ((handler.__name__, verb) in both) == (verb in handler.creates_when_new), (
                handler.__name__, verb)
    adding = [p for p, ops in doc["paths"].items()
              if p.endswith(("/members/{user}", "/grants")) and "put" in ops]
    assert len(adding) == 2, adding
    for path in adding:
        assert {"200", "201"} <= set(doc["paths"][path]["put"]["responses"]), path
