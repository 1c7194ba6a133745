"""``e/<id>/`` passes on only the paths an endpoint declares: by default the
OpenAI routes and its probe's path, else its definition's ``service.paths``.

The rules (quota_service/core/urlpaths.py) and the definition's field are
pure; the rest runs on the real thing: the gateway's tornado app in front
of real haproxy, a replica that records every path that reaches it, and
requests written byte for byte on a socket, so that no client library
tidies a path before the gateway sees it.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlparse

import pytest
from gateway import table as tablelib
from gateway.access import Refusal, allow_path
from quota_service.core import urlpaths
from quota_service.serving import modeldef
from test_gateway import EP2, EP3, Recorder, gateway, needs_haproxy, serve  # noqa: F401
from test_gateway_edges import doc_with

DEFINITION = """
models:
  - name: m
    model_path: /models
    service:
      start_command: [serve]
      port: 8000
      health_check: {{path: /ping}}
{paths}
"""


def definition(paths: str = "") -> modeldef.ModelDefinition:
    return modeldef.parse(DEFINITION.format(paths=f"      paths: {paths}" if paths else ""))


# ------------------------------------------------------------------ the rules

@pytest.mark.parametrize("raw, normal", [
    ("/v1/models", "/v1/models"),
    ("/v1/%6Dodels", "/v1/models"),  # an escaped letter is that letter
    ("/", "/"),
    ("/v1/models/", "/v1/models/"),
    ("/a%20b", "/a b"),
])
def test_a_path_in_normal_form_is_read_as_the_server_reads_it(raw, normal):
    assert urlpaths.normal(raw) == normal


@pytest.mark.parametrize("raw, why", [
    ("/v1/../admin", "'..' segment"),
    ("/v1/%2e%2e/admin", "'..' segment"),
    ("/v1/%2E%2E/admin", "'..' segment"),
    ("/v1/./models", "'.' segment"),
    ("/v1//models", "empty segment"),
    ("/v1/chat%2Fcompletions", "encoded /"),
    ("/v1/chat%5ccompletions", "encoded /"),
    ("/v1\\models", "\\"),
    ("/v1/models%00", "control"),
    ("/v1/%252e%252e/admin", "twice"),
    ("/v1/%ff", "UTF-8"),
    ("v1/models", "start with /"),
])
def test_a_path_not_in_normal_form_is_refused_before_any_match(raw, why):
    with pytest.raises(urlpaths.BadPath, match=why.replace("\\", "\\\\")):
        urlpaths.normal(raw)


def test_patterns_match_exactly_or_beneath_a_star_prefix():
    pats = ("/predict", "/v2/models/*")
    assert urlpaths.allows(pats, "/predict")
    assert not urlpaths.allows(pats, "/predict/x")
    assert not urlpaths.allows(pats, "/predictx")
    assert urlpaths.allows(pats, "/v2/models/a/infer")
    assert not urlpaths.allows(pats, "/v2/models")  # the prefix itself is not beneath it
    assert not urlpaths.allows(pats, "/v2/modelsx")
    assert not urlpaths.allows((), "/predict")


def test_the_default_is_the_openai_routes_and_the_probes_path():
    d = definition()
    svc = d.models[0].service
    assert svc.paths is None
    assert svc.allowed_paths == urlpaths.DEFAULT_PATHS + ("/ping",)
    assert "/v1/load_lora_adapter" not in svc.allowed_paths
    assert urlpaths.declared(None, "/v1/models") == urlpaths.DEFAULT_PATHS  # not twice


def test_a_definition_lists_its_paths():
    svc = definition("[/predict, '/v2/models/*']").models[0].service
    assert svc.allowed_paths == ("/predict", "/v2/models/*")  # the probe's is not added


@pytest.mark.parametrize("paths, why", [
    ("[]", "at least one path"),
    ("[predict]", "start with /"),
    ("['/v1/*/x']", "last segment"),
    ("['/v1*']", "last segment"),
    ("['/v1/../admin']", "'..' segment"),
    ("['/v1//x']", "empty segment"),
    ("['/a%2fb']", "'%'"),
    ("['/a?b=1']", "'?'"),
    ("['/a b']", "' '"),
    ("[/a, /a]", "twice"),
    ("/a", "list of strings"),
    ("[1]", "must be a string"),
])
def test_a_bad_paths_list_is_refused_with_its_field(paths, why):
    with pytest.raises(modeldef.ModelDefinitionError) as ex:
        definition(paths)
    fields = [p["field"] for p in ex.value.detail()]
    assert fields and all(f.startswith("models[0].service.paths") for f in fields)
    assert why in str(ex.value)


def test_the_table_carries_paths_and_defaults_them_from_the_probe():
    t = tablelib.read({"endpoints": [
        {"id": "a" * 32, "name": "x", "domain": "d", "project": "p", "health": {"path": "/hz"},
         "replicas": [], "tokens": []},
        {"id": "b" * 32, "name": "y", "domain": "d", "project": "p", "paths": ["/p/*"],
         "replicas": [], "tokens": []}]})
    assert t.endpoints["a" * 32].paths == urlpaths.DEFAULT_PATHS + ("/hz",)
    assert t.endpoints["b" * 32].paths == ("/p/*",)
    e = t.endpoints["b" * 32]
    assert allow_path(e, "/p/%71") == "/p/q"
    with pytest.raises(Refusal) as r:
        allow_path(e, "/p/../admin")
    assert (r.value.status, r.value.code) == (400, "invalid_path")
    with pytest.raises(Refusal) as r:
        allow_path(e, "/q")
    assert (r.value.status, r.value.code) == (404, "path_not_allowed")


# ------------------------------------------------------------- on the wire

async def raw_call(base: str, method: str, path: str, headers: str = "") -> tuple[int, bytes]:
    """``method path`` sent as written (no client normalises it): status, body."""
    u = urlparse(base)
    reader, writer = await asyncio.open_connection(u.hostname, u.port)
    try:
        writer.write(f"{method} {u.path}{path} HTTP/1.1\r\nHost: x\r\n{headers}"
                     "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


@needs_haproxy
async def test_an_endpoints_own_url_passes_only_the_paths_it_declares(gateway):  # noqa: F811
    state, balancer, replicas, base = gateway
    rec = Recorder(replicas.root / "paths.sock")
    target = [{"name": "rec", "target": rec.target}]
    token = "Authorization: Bearer secret-two\r\n"
    try:
        await serve(state, balancer, doc_with(**{
            EP3: {"replicas": target, "health": {"path": "/health"}},
            EP2: {"replicas": target, "paths": ["/predict", "/v2/models/*"]}})())
        base = base.rstrip("/")
        # the defaults: the OpenAI routes and the probe's path, as sent or escaped
        for method, path in (("GET", "/v1/models"), ("POST", "/v1/chat/completions"),
                             ("POST", "/v1/embeddings"), ("GET", "/health"),
                             ("GET", "/v1/%6dodels")):
            status, body = await raw_call(base, method, f"/e/{EP3}{path}")
            assert status == 200, (path, body)
        # what the model server has besides, and every spelling that would reach it
        for path in ("/v1/load_lora_adapter", "/metrics", "/", "", "/v1/models/",
                     "/V1/models"):
            status, body = await raw_call(base, "POST", f"/e/{EP3}{path}")
            assert status == 404 and b'"path_not_allowed"' in body, (path, body)
        for path in ("/v1/models/../load_lora_adapter", "/v1/models/%2e%2e/load_lora_adapter", "/v1/%2E%2E/load_lora_adapter",
                     "/v1//models", "/v1/chat%2fcompletions", "/v1/models/..%2fx",
                     "/v1/models%00", "/v1/%252e%252e/load_lora_adapter", "/health/."):
            status, body = await raw_call(base, "POST", f"/e/{EP3}{path}")
            assert status == 400 and b'"invalid_path"' in body, (path, body)
        # a definition's own list, and nothing else, not even the OpenAI routes
        for path, want in (("/predict", 200), ("/v2/models/m/infer", 200),
                           ("/v1/models", 404), ("/predict/x", 404), ("/v2/models", 404)):
            status, body = await raw_call(base, "POST", f"/e/{EP2}{path}", token)
            assert status == want, (path, body)
        # who may not call a private endpoint learns nothing of its paths
        status, body = await raw_call(base, "POST", f"/e/{EP2}/admin")
        assert status == 401 and b"predict" not in body
        status, body = await raw_call(base, "GET", f"/e/{EP2}/v1/models/q?x=1", token)
        assert status == 404 and b"/predict" in body  # the caller may: told what it takes
        # the replica saw only the allowed paths, each in its normal form
        assert [(m, p) for m, p, _ in rec.seen] == [
            ("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/v1/embeddings"),
            ("GET", "/v1/models"), ("POST", "/predict"), ("POST", "/v2/models/m/infer")]
    finally:
        rec.close()
