"""Random bodies and path parameters on every operation: never a 500.

Uses the served OpenAPI document to find the operations, so a new endpoint
is fuzzed as soon as it exists.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub_fixtures import hub, world  # noqa: F401

SCALARS = (
    st.none() | st.booleans() | st.integers(-10**30, 10**30)
    | st.text(max_size=40) | st.sampled_from(["acme", "ml", "..", "a/b", "-1", "NaN", "1e999",
                                              "0.005", "default", "acme-gpu", "\x00", "gpu.shares"])
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["name", "slots", "cpu", "gpu", "gpu.shares", "mem",
                                       "project", "resource_group", "domain", "user", "role",
                                       "active", "total_resource_slots", "devices", "capacity",
                                       "expires_at", "priority", "x"]), children, max_size=5),
    max_leaves=12,
)
PARAM = st.sampled_from(["acme", "ml", "alice", "default", "acme-gpu", "acme-node", "x", "%2e%2e",
                         "a%2Fb", "\u00e9", "0" * 300])


def operations(hub):  # noqa: F811
    doc = hub.call("GET", "openapi.json").json()
    for path, item in doc["paths"].items():
        if path.startswith("/internal"):
            continue
        for verb, op in item.items():
            yield verb.upper(), path, [p["name"] for p in op["parameters"] if p["in"] == "path"]


def test_no_operation_answers_500_to_random_input(world):  # noqa: F811
    hub = world.hub
    ops = list(operations(hub))
    assert len(ops) > 30

    @settings(max_examples=300, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(op=st.sampled_from(ops), body=JSON, params=st.lists(PARAM, min_size=3, max_size=3),
           caller=st.sampled_from(["admin", "alice", "ada", "gina"]))
    def check(op, body, params, caller):
        verb, path, names = op
        for name, value in zip(names, params):
            path = path.replace("{" + name + "}", value)
        r = hub.call(verb, path.lstrip("/"), caller, data=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        assert r.status_code < 500, f"{verb} {path} {body!r}: {r.status_code} {r.text[:300]}"
        if r.status_code >= 400 and verb != "HEAD":  # a HEAD answer has no body
            assert r.json()["message"]

    check()
