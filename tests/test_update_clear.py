"""A PATCH leaves a null field unchanged; ``clear`` sets limits back to unlimited."""

from __future__ import annotations

import pytest

from quota_service.core import schemas
from quota_service.core.errors import Invalid
from service_app import served  # noqa: F401

# (path, limit, a value, who may change it)
LIMITS = [
    ("resource-policies/tight", "max_concurrent_sessions", 3, "root"),
    ("resource-policies/tight", "max_session_lifetime", 3600, "root"),
    ("resource-policies/tight", "idle_timeout", 600, "root"),
    ("resource-policies/tight", "max_pending_sessions", 2, "root"),
    ("resource-policies/tight", "max_gpus_per_session", "1.5", "root"),
    ("resource-policies/tight", "max_vfolder_count", 4, "root"),
    ("resource-policies/tight", "max_vfolder_size", 2**30, "root"),
    ("domains/acme/projects/ml", "max_concurrent_sessions", 2, "ada"),
    ("domains/acme/projects/ml", "max_vfolder_count", 5, "ada"),
    ("domains/acme/projects/ml", "max_vfolder_size", 2**20, "ada"),
    ("resource-groups/queue", "pending_timeout", 60, "root"),
]


@pytest.fixture
async def api(served):  # noqa: F811
    for path, body in (("resource-policies", {"name": "tight"}),
                       ("resource-groups", {"name": "queue"})):
        resp, data = await served.call("POST", path, "root", json_body=body)
        assert resp.code == 201, data
    return served


@pytest.mark.parametrize("path, limit, value, admin", LIMITS,
                         ids=[f"{p.split('/')[0]}-{f}" for p, f, *_ in LIMITS])
async def test_a_limit_set_can_be_cleared_and_null_leaves_it(api, path, limit, value, admin):
    resp, data = await api.call("PATCH", path, admin, json_body={limit: value})
    assert resp.code == 200 and data[limit] == value, data
    # null: unchanged
    resp, data = await api.call("PATCH", path, admin, json_body={limit: None})
    assert resp.code == 200 and data[limit] == value, data
    # clear: unlimited again, and only that
    resp, data = await api.call("PATCH", path, admin, json_body={"clear": [limit]})
    assert resp.code == 200 and data[limit] is None, data
    resp, again = await api.call("GET", path, admin)
    assert again == data


async def test_clear_goes_with_other_changes(api):
    await api.call("PATCH", "resource-policies/tight", "root",
                   json_body={"max_vfolder_count": 4, "idle_timeout": 60})
    resp, data = await api.call("PATCH", "resource-policies/tight", "root",
                                json_body={"clear": ["max_vfolder_count"], "idle_timeout": 90})
    assert resp.code == 200, data
    assert (data["max_vfolder_count"], data["idle_timeout"]) == (None, 90)


@pytest.mark.parametrize("body, words", [
    ({"clear": ["idle_timeout"], "idle_timeout": 5}, "idle_timeout: both given and cleared"),
    ({"clear": ["total_resource_slots"]}, "clear.0: Input should be"),
    ({"clear": ["idle_timeout", "idle_timeout"]}, "clear: Value error, names a field twice"),
    ({"clear": "idle_timeout"}, "clear: Input should be a valid list"),
])
async def test_a_bad_clear_is_refused_and_changes_nothing(api, body, words):
    await api.call("PATCH", "resource-policies/tight", "root", json_body={"idle_timeout": 60})
    resp, data = await api.call("PATCH", "resource-policies/tight", "root", json_body=body)
    assert resp.code == 422 and words in data["message"], data
    resp, data = await api.call("GET", "resource-policies/tight", "root")
    assert data["idle_timeout"] == 60


async def test_clearing_is_for_those_who_may_change_the_limit(api):
    resp, data = await api.call("PATCH", "resource-policies/tight", "ada",
                                json_body={"clear": ["idle_timeout"]})
    assert resp.code == 403, data
    resp, data = await api.call("PATCH", "domains/acme/projects/ml", "alice",
                                json_body={"clear": ["max_vfolder_count"]})
    assert resp.code == 403, data


@pytest.mark.parametrize("model, fields", [
    ("ProjectUpdate", ["max_concurrent_sessions", "max_vfolder_count", "max_vfolder_size"]),
    ("ResourceGroupUpdate", ["pending_timeout"]),
    ("ResourcePolicyUpdate", ["idle_timeout", "keep_extension", "max_concurrent_sessions",
                              "max_gpus_per_session", "max_keeps",
                              "max_pending_sessions", "max_session_lifetime",
                              "max_vfolder_count", "max_vfolder_size", "reclaim_warning",
                              "utilization_grace", "utilization_thresholds",
                              "utilization_window"]),
])
def test_the_openapi_document_lists_what_can_be_cleared(model, fields):
    from quota_service.api.openapi import document

    prop = document("/", "cookie")["components"]["schemas"][model]["properties"]["clear"]
    items = prop["items"]
    assert sorted(items.get("enum") or [items.get("const")]) == fields
    assert "unlimited" in prop["description"] and prop["uniqueItems"] is True


def test_only_update_bodies_of_nullable_limits_take_clear():
    for model in (schemas.DomainUpdate, schemas.UserUpdate, schemas.KeypairUpdate,
                  schemas.NodeUpdate, schemas.ImageUpdate):
        with pytest.raises(Invalid, match="clear: unknown field"):
            schemas.parse(model, {"clear": []})
