"""What a black-box security probe of the API found,
each checked through the real tornado app of the service: deep JSON, other
domains' resource group names, sessions with no resources, and the OpenAPI
document against what the service answers."""

from __future__ import annotations

import ast
import inspect
import json
import re

import pytest
from ledger_world import Cluster
from service_app import served  # noqa: F401

from quota_service.api import routes as route_table
from quota_service.api.base import MAX_JSON_DEPTH, implemented_verbs, json_depth
from quota_service.api.openapi import document, oauth_cookie_name, openapi_path


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """None of this depends on the database: SQLite only."""
    return sqlite_db_url


@pytest.fixture
def probe(served):  # noqa: F811
    """Group ``gpu`` granted to acme (alice's), ``theirs`` to globex only."""
    c = Cluster(served.world)
    c.add_group("gpu", {"n1": ()}, cpu="8", domains=("acme",))
    c.add_group("theirs", {"n2": ()}, cpu="8", domains=("globex",))
    served.doc = document(served.svc.api_prefix, oauth_cookie_name(served.svc))
    return served


def nested(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode()


# --- a) deep JSON ------------------------------------------------------------------

def test_depth_is_measured_without_recursion():
    assert json_depth(1) == 0 and json_depth([]) == 1 and json_depth({"a": [{"b": 2}]}) == 3
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert json_depth(deep) > MAX_JSON_DEPTH  # stops early, never recurses


async def test_a_body_nested_too_deep_is_a_400_on_every_json_endpoint(probe):
    """Every documented operation with a JSON body, as its caller kind (ids
    unknown): never a 500; the ones that read the body first say why."""
    answered = {}
    for path, item in probe.doc["paths"].items():
        for verb, op in item.items():
            if "requestBody" not in op:
                continue
            internal = op["security"] == [{"internal": []}]
            url = re.sub(r"\{[^}]+\}", "nosuch", path).lstrip("/")
            for depth in (1000, MAX_JSON_DEPTH + 1):
                resp, body = await probe.call(verb.upper(), url,
                                              "internal" if internal else "root",
                                              body=nested(depth))
                assert resp.code < 500, (verb, path, depth, body)
                answered[(verb, path, depth)] = (resp.code, body)
    assert len(answered) > 20
    for key in (("post", "/vfolders"), ("post", "/allocations"), ("post", "/allocations/dry-run"),
                ("post", "/domains"), ("post", "/internal/allocations"), ("post", "/keypairs")):
        for depth in (1000, MAX_JSON_DEPTH + 1):
            code, body = answered[(*key, depth)]
            assert code == 400 and f"nested deeper than {MAX_JSON_DEPTH} levels" in \
                body["message"], (key, depth, body)
    # as deep as allowed is read (and refused for what it says, not how deep)
    resp, body = await probe.call("POST", "domains", "root", body=nested(MAX_JSON_DEPTH))
    assert resp.code == 422, body


# --- c) another domain's resource group ---------------------------------------------

@pytest.mark.parametrize("tail", ["allocations", "allocations/dry-run"])
async def test_another_domains_group_is_refused_exactly_like_a_missing_one(probe, tail):
    answers = []
    for group in ("theirs", "nosuch"):
        resp, body = await probe.call("POST", tail, "alice", json_body={
            "project": "ml", "resource_group": group, "slots": {"cpu": "1"}})
        answers.append((resp.code, json.dumps(body).replace(group, "<group>")))
    assert answers[0] == answers[1], answers
    assert answers[0][0] == 422 and "is not available to you" in answers[0][1]
    # the group alice may use answers as before
    resp, body = await probe.call("POST", tail, "alice", json_body={
        "project": "ml", "resource_group": "gpu", "slots": {"cpu": "1"}})
    assert resp.code in (200, 201), body


# --- d) a session with no resources ----------------------------------------------

@pytest.mark.parametrize("tail", ["allocations", "allocations/dry-run"])
@pytest.mark.parametrize("slots", [{}, {"cpu": "0"}, {"cpu": 0, "mem": "0"}])
async def test_a_session_asking_for_no_resources_is_refused(probe, tail, slots):
    resp, body = await probe.call("POST", tail, "alice", json_body={
        "project": "ml", "resource_group": "gpu", "slots": slots})
    assert resp.code == 422 and "must ask for resources" in body["message"], body
    resp, body = await probe.call("GET", "allocations", "alice")
    assert body == []


# --- e) the OpenAPI document against the service ------------------------------------

def documented_codes(doc, path: str, verb: str) -> set[int]:
    return {int(c) for c in doc["paths"][path][verb]["responses"] if c != "default"}


async def test_dry_run_start_and_stop_answer_documented_statuses(probe):
    request = {"project": "ml", "resource_group": "gpu", "slots": {"cpu": "1"}}
    resp, _ = await probe.call("POST", "allocations/dry-run", "alice", json_body=request)
    assert resp.code in documented_codes(probe.doc, "/allocations/dry-run", "post") == {200}
    resp, body = await probe.call("POST", "allocations", "alice", json_body=request)
    assert resp.code in documented_codes(probe.doc, "/allocations", "post") == {201, 202}
    resp, _ = await probe.call("POST", f"allocations/{body['id']}/stop", "alice")
    stop = documented_codes(probe.doc, "/allocations/{allocation_id}/stop", "post")
    assert resp.code in stop == {200, 202}


def _answered(handler, verb: str) -> set[int]:
    """The success statuses a verb's source answers with: ``created`` (201),
    ``no_content`` (204), ``finish_json(x)`` (200), ``finish_json(x, N)``,
    ``set_status(N)``; N a literal, ``a if .. else b``, or a name assigned those."""
    tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(getattr(handler, verb))))
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)

    def codes(expr) -> set[int]:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
            return {expr.value}
        if isinstance(expr, ast.IfExp):
            return codes(expr.body) | codes(expr.orelse)
        if isinstance(expr, ast.Name):
            return set().union(*(codes(v) for v in assigned.get(expr.id, [])))
        return set()

    out: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name = node.func.attr
        if name == "created":
            out.add(201)
        elif name == "no_content":
            out.add(204)
        elif name == "finish_json":
            out |= codes(node.args[1]) if len(node.args) > 1 else {200}
        elif name == "set_status" and node.args:
            out |= codes(node.args[0])
    return {c for c in out if c < 300}


def test_every_success_status_a_verb_answers_is_documented(probe):
    missing = []
    for route, handler in route_table.API:
        path, _ = openapi_path(route)
        for verb in implemented_verbs(handler):
            answered = _answered(handler, verb)
            if not answered <= documented_codes(probe.doc, path, verb):
                missing.append((verb, path, sorted(answered)))
    assert missing == []
    assert _answered(route_table.API[0][1], "post") == {200, 204}  # the check sees both


def test_names_enums_and_the_tus_header_are_documented(probe):
    doc = probe.doc
    params = {p["name"]: p for p in doc["paths"]["/domains/{domain}/projects/{project}"]["get"][
        "parameters"]}
    assert params["domain"]["schema"]["pattern"].startswith("^[a-z0-9]")
    assert doc["components"]["schemas"]["DomainCreate"]["properties"]["name"]["pattern"]
    status = {p["name"]: p for p in doc["paths"]["/vfolders"]["get"]["parameters"]}["status"]
    assert status["schema"]["enum"] == ["active", "trashed", "all"]
    query = {p["name"]: p["schema"] for p in doc["paths"]["/users"]["get"]["parameters"]}
    assert query["role"]["enum"] == ["user", "domain-admin", "superadmin"]
    query = {p["name"]: p["schema"] for p in doc["paths"]["/allocations"]["get"]["parameters"]}
    assert re.fullmatch(query["state"]["pattern"], "pending,allocated")
    assert not re.fullmatch(query["state"]["pattern"], "pending,")
    for path, verb in (("/vfolders/{folder_id}/tus", "post"),
                       ("/vfolders/{folder_id}/tus/{upload_id}", "patch"),
                       ("/vfolders/{folder_id}/tus/{upload_id}", "head"),
                       ("/vfolders/{folder_id}/tus/{upload_id}", "delete")):
        header = {p["name"]: p for p in doc["paths"][path][verb]["parameters"]
                  if p["in"] == "header"}
        assert header["Tus-Resumable"]["required"] is True, (path, verb)
        assert header["Tus-Resumable"]["schema"]["enum"] == ["1.0.0"]


async def test_a_body_is_required_exactly_where_the_document_says(probe):
    """Keypairs and reconcile take bodies whose fields are all optional: the
    body may be left out, and the document says so; a body with required
    fields is documented required, and refused when missing."""
    doc = probe.doc
    for path in ("/keypairs", "/reconcile"):
        assert doc["paths"][path]["post"]["requestBody"]["required"] is False, path
    assert doc["paths"]["/domains"]["post"]["requestBody"]["required"] is True
    resp, body = await probe.call("POST", "keypairs", "alice")
    assert resp.code == 201, body
    resp, body = await probe.call("POST", "domains", "root")
    assert resp.code == 422 and "name" in body["message"], body
    for path, item in doc["paths"].items():
        for verb, op in item.items():
            if "requestBody" in op:
                model = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                schema = doc["components"]["schemas"][model.rsplit("/", 1)[1]]
                assert op["requestBody"]["required"] == bool(schema.get("required")), path


@pytest.mark.parametrize("verb, tail, allow", [
    ("PUT", "audit?user=alice", "GET"), ("DELETE", "domains?q=x", "GET, POST"),
    ("PATCH", "allocations?state=pending", "GET, POST"),
])
async def test_a_wrong_method_with_a_query_is_a_405_not_a_422(probe, verb, tail, allow):
    resp, body = await probe.call(verb, tail, "root", body=b"{}" if verb != "DELETE" else None)
    assert resp.code == 405 and resp.headers["Allow"] == allow, body
