"""Bad input over real HTTP: a 4xx with a message, and nothing written."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from hub_fixtures import hub, world  # noqa: F401

BAD_NAMES = ["a/b", "..", "a b", "x" * 300, "tab\tname", "nul\x00", "UPPER", "-lead", "trail-", ""]


def snapshot(hub):  # noqa: F811
    """Everything the admin can list: must not change on a refused write."""
    return (
        hub.call("GET", "domains", "admin").json(),
        hub.call("GET", "projects", "admin").json(),
        hub.call("GET", "users", "admin").json(),
    )


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_bad_names_are_refused_and_nothing_is_written(world, name):  # noqa: F811
    hub = world.hub
    before = snapshot(hub)
    cases = [("domains", {"name": name}), ("domains/acme/projects", {"name": name})]
    if name != "trail-":  # JupyterHub user names may end with '-'
        cases.append(("users", {"name": name, "domain": "acme"}))
    for path, body in cases:
        r = hub.call("POST", path, "admin", json=body)
        assert r.status_code == 422, (path, r.text)
        assert "name" in r.json()["message"]
    assert snapshot(hub) == before


@pytest.mark.parametrize(
    "path,body,status,words",
    [
        ("domains", {"name": "okname", "colour": "red"}, 422, "unknown field"),
        ("domains", {"name": 7}, 422, "string"),
        ("domains", {"name": "okname", "active": "yes"}, 422, "boolean"),
        ("domains", {"name": "okname", "total_resource_slots": {"cpu": -1}}, 422, "negative"),
        ("domains", {"name": "okname", "total_resource_slots": {"cpu": "lots"}}, 422, "not a number"),
        ("domains", {"name": "okname", "total_resource_slots": {"bad slot": 1}}, 422, "unknown slot"),
        ("domains", {"name": "okname", "total_resource_slots": {"tpu": 1}}, 422, "unknown slot"),
        ("domains", {"name": "okname", "total_resource_slots": {"gpu.shares": "0.005"}}, 422, "multiple"),
        ("domains", ["okname"], 422, "object"),
        ("domains/acme/projects", {"name": "okname", "domain": "globex"}, 422, "unknown field"),
        ("users", {"name": "okname", "domain": "acme", "role": "god"}, 422, "role"),
        ("users", {"name": "okname"}, 422, "domain"),
        ("keypairs", {"user": "alice", "expires_at": "2000-01-01T00:00:00Z"}, 422, "future"),
        ("keypairs", {"user": "alice", "expires_at": "someday"}, 422, "expires_at"),
    ],
)
def test_malformed_bodies_get_a_clear_error(world, path, body, status, words):  # noqa: F811
    hub = world.hub
    before = snapshot(hub)
    keys_before = hub.call("GET", "keypairs?user=alice", "admin").json()
    r = hub.call("POST", path, "admin", json=body)
    assert r.status_code == status, r.text
    assert words in r.json()["message"]
    assert snapshot(hub) == before
    assert hub.call("GET", "keypairs?user=alice", "admin").json() == keys_before


def test_invalid_json_is_a_400(world):  # noqa: F811
    hub = world.hub
    r = hub.call("POST", "domains", "admin", data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["message"]


def test_duplicates_are_409(world):  # noqa: F811
    hub = world.hub
    assert hub.call("POST", "domains", "admin", json={"name": "acme"}).status_code == 409
    assert hub.call("POST", "domains/acme/projects", "admin", json={"name": "ml"}).status_code == 409
    assert hub.call("POST", "users", "admin", json={"name": "alice", "domain": "acme"}).status_code == 409
    # the same project name in another domain is fine
    name = "p" + uuid.uuid4().hex[:6]
    assert hub.call("POST", "domains/acme/projects", "admin", json={"name": name}).status_code == 201
    assert hub.call("POST", "domains/globex/projects", "admin", json={"name": name}).status_code == 201


def test_member_of_another_domain_is_refused(world):  # noqa: F811
    hub = world.hub
    r = hub.call("PUT", "domains/acme/projects/ml/members/gina", "admin")
    assert r.status_code == 409 and "globex" in r.json()["message"]
    members = {m["user"] for m in hub.call("GET", "domains/acme/projects/ml/members", "admin").json()}
    assert "gina" not in members


def test_domain_with_users_cannot_be_deleted(world):  # noqa: F811
    hub = world.hub
    r = hub.call("DELETE", "domains/globex", "admin")
    assert r.status_code == 409 and "user" in r.json()["message"]
    assert hub.call("GET", "domains/globex", "admin").status_code == 200


def test_unknown_endpoint_is_a_json_404(world):  # noqa: F811
    r = world.hub.call("GET", "no/such/thing", "admin")
    assert r.status_code == 404 and r.json()["reason"] == "not-found"


def test_racing_creates_of_one_name_give_one_201_and_409s(world):  # noqa: F811
    hub = world.hub
    name = "race" + uuid.uuid4().hex[:6]
    token = hub.token("admin")

    def create(_):
        return requests.post(hub.api + "domains", json={"name": name},
                             headers={"Authorization": f"token {token}"}, timeout=60).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(create, range(8)))
    assert codes == [201] + [409] * 7
    assert [d["name"] for d in hub.call("GET", "domains", "admin").json()].count(name) == 1


def test_keypair_secret_is_shown_once(world):  # noqa: F811
    hub = world.hub
    kp = hub.call("POST", "keypairs", "alice", json={}).json()
    assert kp["secret_key"]
    again = hub.call("GET", f"keypairs/{kp['access_key']}", "alice").json()
    assert "secret_key" not in again and "secret_hash" not in again
    listed = hub.call("GET", "keypairs", "alice").json()
    assert all("secret_key" not in k for k in listed)
    me = hub.call("GET", "me", f"Keypair {kp['access_key']}:{kp['secret_key']}").json()
    assert me["name"] == "alice" and me["credential"] == "keypair"
    assert hub.call("GET", "me", f"Keypair {kp['access_key']}:wrong").status_code == 401


def test_browser_reaches_the_api_through_hub_oauth(world):  # noqa: F811
    hub = world.hub
    browser = hub.login("alice").session
    r = browser.get(hub.url + "/services/hubgrid/", timeout=30)
    assert r.status_code == 200, r.text[:300]
    assert r.url.endswith("/services/hubgrid/api/v1/me")
    assert r.json()["name"] == "alice"


def test_unknown_query_parameters_are_refused(world):  # noqa: F811
    r = world.hub.call("GET", "users?domian=acme", "admin")
    assert r.status_code == 422 and "domian" in r.json()["message"]
    assert world.hub.call("GET", "users?domain=acme", "admin").status_code == 200


def test_openapi_documents_query_parameters(world):  # noqa: F811
    doc = world.hub.call("GET", "openapi.json").json()
    audit = {p["name"] for p in doc["paths"]["/audit"]["get"]["parameters"]}
    assert audit == {"user", "action", "outcome", "since", "until", "limit", "offset"}
