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
    # the hub's navbar (Services -> hubgrid): a browser logs in through the
    # hub (OAuth) and lands on a page, not JSON
    page = browser.get(hub.url + "/services/hubgrid/", timeout=30,
                       headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert page.status_code == 200 and page.url.endswith("/services/hubgrid/"), page.url
    assert page.headers["Content-Type"].startswith("text/html")
    assert '<dd id="name">alice</dd>' in page.text and '/user/alice/lab"' in page.text
    r = browser.get(hub.url + "/services/hubgrid/", timeout=30)
    assert r.status_code == 200, r.text[:300]
    assert r.url.endswith("/services/hubgrid/api/v1/me")  # not a browser's Accept: JSON
    assert r.json()["name"] == "alice"
    # the OpenAPI document names the cookie the service really set
    doc = hub.call("GET", "openapi.json").json()
    cookie = doc["components"]["securitySchemes"]["oauthCookie"]["name"]
    assert cookie in {c.name for c in browser.cookies if c.path.startswith("/services/hubgrid")}


def test_unknown_query_parameters_are_refused(world):  # noqa: F811
    r = world.hub.call("GET", "users?domian=acme", "admin")
    assert r.status_code == 422 and "domian" in r.json()["message"]
    assert world.hub.call("GET", "users?domain=acme", "admin").status_code == 200


def test_openapi_documents_query_parameters(world):  # noqa: F811
    doc = world.hub.call("GET", "openapi.json").json()
    audit = {p["name"] for p in doc["paths"]["/audit"]["get"]["parameters"]}
    assert audit == {"user", "action", "outcome", "target", "since", "until", "limit", "offset",
                     "format"}


SESSION = {"project": "ml", "resource_group": "acme-gpu"}


@pytest.mark.parametrize(
    "slots,words",
    [
        ({"cpu": "-1"}, "negative"),
        ({"cpu": "NaN"}, "not a number"),
        ({"cpu": "1e30"}, "out of range"),
        ({"mem": "99999999P"}, "maximum"),
        ({"tpu": 1}, "unknown slot"),
        ({"gpu.shares": "0.005"}, "multiple of 0.01"),
        ({"gpu.shares": "1.5"}, "more than one device"),
        ({"gpu": 1, "gpu.shares": "0.5"}, "not both"),
        ({"gpu": "0.5"}, "multiple of 1"),
        ({"cpu": True}, "integer or a decimal string"),
    ],
)
def test_bad_allocation_requests_are_422_and_write_nothing(world, slots, words):  # noqa: F811
    hub = world.hub
    before = hub.call("GET", "allocations", "admin").json()
    r = hub.call("POST", "allocations", "alice", json={**SESSION, "slots": slots})
    assert r.status_code == 422, r.text
    assert words in r.json()["message"]
    assert hub.call("GET", "allocations", "admin").json() == before


def test_a_resource_group_the_caller_may_not_use_is_refused(world):  # noqa: F811
    hub = world.hub
    before = hub.call("GET", "allocations", "admin").json()
    r = hub.call("POST", "allocations", "alice",
                 json={"project": "ml", "resource_group": "globex-gpu", "slots": {"cpu": "1"}})
    assert r.status_code == 422 and "not available to you" in r.json()["message"]
    assert r.json()["detail"][0]["code"] == "access"
    assert hub.call("GET", "allocations", "admin").json() == before


def test_pending_request_explains_itself_and_starts_after_a_release(world):  # noqa: F811
    hub = world.hub
    name = "q" + uuid.uuid4().hex[:6]
    assert hub.call("POST", "domains/acme/projects", "ada", json={
        "name": name, "total_resource_slots": {"gpu": "1"}}).status_code == 201
    assert hub.call("PUT", f"domains/acme/projects/{name}/members/alice", "ada").status_code == 201
    body = {"project": name, "resource_group": "acme-gpu", "slots": {"cpu": "1", "gpu": "1"}}
    first = hub.call("POST", "allocations", "alice", json=body)
    assert first.status_code == 201 and len(first.json()["gpus"]) == 1
    second = hub.call("POST", "allocations", "alice", json=body)
    assert second.status_code == 202
    why = hub.call("GET", f"allocations/{second.json()['id']}", "alice").json()["reasons"]
    assert why[0]["text"] == f"project {name} gpu: used 1 + requested 1 > limit 1 (over by 1)"
    dry = hub.call("POST", "allocations/dry-run", "alice", json=body).json()
    assert dry["verdict"] == "pending" and not dry["fits_now"]
    assert hub.call("DELETE", f"allocations/{first.json()['id']}", "alice").status_code == 204
    import time

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        state = hub.call("GET", f"allocations/{second.json()['id']}", "alice").json()["state"]
        if state == "allocated":
            break
        time.sleep(0.2)
    assert state == "allocated"
    hub.call("DELETE", f"allocations/{second.json()['id']}", "alice")


def test_domain_admin_cannot_set_limits_above_the_domain_total(world):  # noqa: F811
    hub = world.hub
    assert hub.call("PATCH", "domains/acme", "admin",
                    json={"total_resource_slots": {"gpu": "4"}}).status_code == 200
    try:
        r = hub.call("PATCH", "domains/acme/projects/ml", "ada",
                     json={"total_resource_slots": {"gpu": "5"}})
        assert r.status_code == 403 and "above domain acme's total" in r.json()["message"]
        assert hub.call("PATCH", "domains/acme/projects/ml", "ada",
                        json={"total_resource_slots": {"gpu": "4"}}).status_code == 200
        pol = "big" + uuid.uuid4().hex[:6]
        assert hub.call("POST", "resource-policies", "admin", json={
            "name": pol, "total_resource_slots": {"gpu": "8"}}).status_code == 201
        r = hub.call("PATCH", "users/alice", "ada", json={"resource_policy": pol})
        assert r.status_code == 403
        assert hub.call("GET", "users/alice", "admin").json()["resource_policy"] == "default"
    finally:
        hub.call("PATCH", "domains/acme/projects/ml", "admin", json={"total_resource_slots": {}})
        hub.call("PATCH", "domains/acme", "admin", json={"total_resource_slots": {}})


# --- images and sessions ------------------------------------------------

@pytest.mark.parametrize(
    "body,status,words",
    [
        ({"name": "in/put:1", "labels": {"ai.hubgrid.service-ports": "lab:http:../hub"}}, 400,
         "label ai.hubgrid.service-ports"),
        ({"name": "in/put:1", "labels": {"ai.hubgrid.resource.min.cpu": "-1"}}, 400,
         "label ai.hubgrid.resource.min.cpu"),
        ({"name": "in/put"}, 422, "needs a tag"),
        ({"name": "in/put:1", "domains": ["no-such-domain"]}, 422, "no domain named"),
        ({"name": "in/put:1", "service_ports": [{"name": "x", "path": "/abs"}]}, 422, "relative"),
        ({"name": "in/put:1", "min_slots": {"cpu": "lots"}}, 422, "not a number"),
    ],
)
def test_bad_image_bodies_get_a_clear_error_and_write_nothing(world, body, status, words):  # noqa: F811
    hub = world.hub
    before = hub.call("GET", "images", "admin").json()
    r = hub.call("POST", "images", "admin", json=body)
    assert r.status_code == status, r.text
    assert words in r.json()["message"]
    assert hub.call("GET", "images", "admin").json() == before


@pytest.mark.parametrize(
    "fields,words",
    [
        ({"image": "no/such-image:1"}, "unknown image 'no/such-image:1'"),
        ({"session_type": "batch"}, "a batch session needs a command"),
        ({"command": "ls"}, "only batch sessions take a command"),
        ({"server_name": "a b"}, "server_name"),
    ],
)
def test_bad_session_requests_are_422_and_write_nothing(world, fields, words):  # noqa: F811
    hub = world.hub
    before = hub.call("GET", "allocations", "admin").json()
    r = hub.call("POST", "allocations", "alice", json={**SESSION, "slots": {"cpu": "1"}, **fields})
    assert r.status_code == 422, r.text
    assert words in r.json()["message"]
    assert hub.call("GET", "allocations", "admin").json() == before


def test_an_image_below_its_minimum_is_refused_with_the_numbers(world):  # noqa: F811
    hub = world.hub
    name = f"in/min-{uuid.uuid4().hex[:6]}:1"
    assert hub.call("POST", "images", "admin", json={
        "name": name, "min_slots": {"cpu": "2"}}).status_code == 201
    r = hub.call("POST", "allocations", "alice",
                 json={**SESSION, "slots": {"cpu": "1"}, "image": name})
    assert r.status_code == 422
    assert r.json()["message"] == f"image {name} needs at least cpu 2 (requested 1)"


@pytest.mark.parametrize("query", ["tail=-1", "tail=ten", "tail=1&tail=x", "head=5"])
def test_bad_log_queries_are_refused(world, query):  # noqa: F811
    hub = world.hub
    a = hub.call("POST", "allocations", "alice", json={**SESSION, "slots": {"cpu": "1"}}).json()
    try:
        r = hub.call("GET", f"allocations/{a['id']}/logs?{query}", "alice")
        assert r.status_code in (400, 422), r.text
        assert r.json()["message"]
    finally:
        hub.call("DELETE", f"allocations/{a['id']}", "alice")


def test_a_login_under_a_spoofing_name_is_refused_naming_the_character(world):  # noqa: F811
    """The hub hands the name over; hubgrid refuses it at login, with the
    reason on the page, and the access log shows the control, not its effect."""
    hub = world.hub
    name = "\u202enimda"
    r = hub.login(name)
    assert r.status_code == 403
    assert "U+202E" in r.text and "RIGHT-TO-LEFT OVERRIDE" in r.text
    entries = hub.call("GET", "audit?action=login&outcome=denied&limit=20", "admin").json()
    assert "\\u202enimda" in {e["actor"] for e in entries["entries"]}
    assert not any("\u202e" in (e["actor"] or "") for e in entries["entries"])


@pytest.mark.parametrize("name", ["\u202egnp.txt", "back\\slash", "a\u2066b", "x\uff0fy"],
                         ids=repr)
def test_folder_names_that_spoof_are_refused_naming_the_problem(world, name):  # noqa: F811
    r = world.hub.call("POST", "vfolders", "alice", json={"name": name})
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert "U+" in message or "must not contain '/' or" in message
    names = {f["name"] for f in world.hub.call("GET", "vfolders", "alice").json()}
    assert name not in names


def test_trace_and_other_missing_verbs_answer_405_with_allow(world):  # noqa: F811
    hub = world.hub
    for method, path, allow in (("TRACE", "domains", "GET, POST"),
                                ("PUT", "audit", "GET"),
                                ("TRACE", "users/alice", "GET, PATCH, DELETE")):
        r = hub.call(method, path, "admin")
        assert r.status_code == 405, (method, path, r.text[:200])
        assert r.headers["Allow"] == allow and r.json()["status"] == 405
