"""The Python client of labextension/jupyterlab_hubgrid (``client``, ``amounts``):
exact amounts as data, the settings read from the environment, and calls to
the real service (tests/service_app.py) with a keypair: Decimal answers,
the service's refusals as ClientError with its message, an unreachable
service as ServiceUnreachable.
"""

from __future__ import annotations

import asyncio
import io
from decimal import Decimal

import httpx
import pytest

from jupyterlab_hubgrid import amounts
from jupyterlab_hubgrid.client import (
    ClientError,
    HubgridClient,
    NotConfigured,
    ServiceUnreachable,
    Settings,
    hub_api_from,
)
from service_app import served  # noqa: E402,F401



@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """SQLite only: the client's behaviour does not depend on the service's
    database (the service's own tests run both)."""
    return sqlite_db_url


D = Decimal


# --- amounts, as data -------------------------------------------------------------------

@pytest.mark.parametrize("value,text", [
    (D("0.3") * 3, "0.9"), (D("0.30"), "0.3"), (D("2.000"), "2"), (D("100"), "100"),
    (D("1E+2"), "100"), (D("0.01"), "0.01"), (D("12.500"), "12.5"), (0, "0"), ("7", "7"),
])
def test_amounts_are_written_exactly_in_their_shortest_form(value, text):
    assert amounts.format_amount(value) == text


@pytest.mark.parametrize("value,text", [
    (1 << 30, "1 GiB"), (3 << 29, "1.5 GiB"), (1000, "1000 B"), (0, "0 B"),
    (D("34359738368"), "32 GiB"), (1 << 50, "1 PiB"), (1024, "1 KiB"), ("2147483648", "2 GiB"),
])
def test_bytes_are_shown_in_the_largest_binary_unit_that_divides_them(value, text):
    assert amounts.format_bytes(value) == text


@pytest.mark.parametrize("slot,value,text", [
    ("mem", D(1 << 31), "2 GiB"), ("gpu.shares", D("0.9"), "0.9"), ("cpu", None, "unlimited"),
    ("cpu", D(0), "0"), ("mem", D(0), "0 B"),
])
def test_a_slot_is_formatted_by_its_unit(slot, value, text):
    assert amounts.format_slot(slot, value) == text


def test_json_numbers_are_read_as_decimals_and_written_back_as_the_service_writes_them():
    data = amounts.loads(b'{"a": 0.1, "b": 3, "c": [0.2]}')
    assert data == {"a": D("0.1"), "b": 3, "c": [D("0.2")]}
    assert isinstance(data["b"], int)
    total = data["a"] + data["c"][0]
    assert amounts.dumps({"total": total}, indent=None) == '{"total": "0.3"}'


def test_slot_maps_shares_and_reason_amounts_become_decimals_and_nothing_else_does():
    model = {
        "id": "x", "slots": {"cpu": "1", "gpu.shares": "0.3", "mem": "1073741824"},
        "gpus": [{"index": 0, "share": "0.3"}],
        "reasons": [{"text": "project ml cpu: used 3", "used": "3", "requested": "1",
                     "limit": "4", "slot": "cpu"}],
        "projects": [{"name": "10", "total_resource_slots": {"gpu": 2}}],
    }
    got = amounts.exact(model)
    assert got["slots"] == {"cpu": D(1), "gpu.shares": D("0.3"), "mem": D(1 << 30)}
    assert got["gpus"] == [{"index": 0, "share": D("0.3")}]
    assert got["reasons"][0] == {"text": "project ml cpu: used 3", "used": D(3),
                                 "requested": D(1), "limit": D(4), "slot": "cpu"}
    assert got["projects"] == [{"name": "10", "total_resource_slots": {"gpu": D(2)}}]
    assert got["id"] == "x"


def alloc(user, project, state, domain="acme", **slots):
    return {"user": user, "project": project, "domain": domain, "state": state,
            "slots": {k.replace("_", "."): D(v) for k, v in slots.items()}}


ME = {
    "name": "alice", "domain": "acme", "role": "user", "resource_policy": "default",
    "projects": [{"domain": "acme", "name": "ml", "max_concurrent_sessions": 5,
                  "total_resource_slots": {"cpu": D(4), "gpu.shares": D(1)},
                  "max_vfolder_count": 2, "max_vfolder_size": 1 << 30}],
    "domain_detail": {"total_resource_slots": {"gpu.shares": D(2)}},
}
POLICY = {"name": "default", "total_resource_slots": {"cpu": D(6), "mem": D(0)},
          "unspecified_limited": False, "max_concurrent_sessions": None,
          "max_vfolder_count": 3, "max_vfolder_size": None}


def rows_of(quota: dict, level: str) -> dict:
    lv = next(x for x in quota["levels"] if x["level"] == level)
    return {r["slot"]: (r["limit"], r["used"], r["free"], r["pending"]) for r in lv["slots"]}


def test_my_quota_adds_three_shares_of_point_three_to_point_nine_at_every_level():
    held = [alloc("alice", "ml", "allocated", cpu=1, gpu_shares="0.3") for _ in range(3)]
    held.append(alloc("alice", "ml", "pending", cpu=3))
    q = amounts.compose_quota(ME, POLICY, held)
    user = rows_of(q, "user")
    assert user["gpu.shares"] == (None, D("0.9"), None, D(0))
    assert user["cpu"] == (D(6), D(3), D(3), D(3))
    # a limit of 0 with nothing used stays visible
    assert user["mem"] == (D(0), D(0), D(0), D(0))
    # a device limit counts devices whole or shared (as admission counts)
    assert user["gpu"] == (None, D("0.9"), None, D(0))
    project = rows_of(q, "project")
    assert project["gpu.shares"] == (D(1), D("0.9"), D("0.1"), D(0))
    assert rows_of(q, "domain")["gpu.shares"] == (D(2), D("0.9"), D("1.1"), D(0))
    lv = {x["level"]: x for x in q["levels"]}
    assert lv["user"]["sessions"] == {"limit": None, "used": 3, "pending": 1}
    assert lv["project"]["sessions"] == {"limit": 5, "used": 3, "pending": 1}
    assert amounts.dumps(project["gpu.shares"], indent=None) == '["1", "0.9", "0.1", "0"]'


def test_a_user_sees_their_own_use_of_a_project_an_admin_sees_everybodys():
    held = [alloc("alice", "ml", "allocated", gpu_shares="0.5"),
            alloc("bob", "ml", "allocated", gpu_shares="0.25"),
            alloc("gina", "lab", "allocated", domain="globex", gpu_shares="0.5")]
    as_user = amounts.compose_quota(ME, POLICY, held)
    assert [x["complete"] for x in as_user["levels"]] == [True, False, False]
    admin = {**ME, "name": "ada", "role": "domain-admin"}
    as_admin = amounts.compose_quota(admin, POLICY, held)
    assert [x["complete"] for x in as_admin["levels"]] == [True, True, True]
    assert rows_of(as_admin, "project")["gpu.shares"][1] == D("0.75")
    assert rows_of(as_admin, "domain")["gpu.shares"][1] == D("0.75")  # globex's is not acme's
    assert rows_of(as_admin, "user")["gpu.shares"][1] == D(0)  # ada holds nothing herself


def test_unspecified_limited_policy_makes_unnamed_slots_zero():
    q = amounts.compose_quota(ME, {**POLICY, "unspecified_limited": True}, [])
    assert rows_of(q, "user")["gpu"] == (D(0), D(0), D(0), D(0))
    assert rows_of(q, "project")["gpu"][0] is None  # projects have no such switch


def test_storage_counts_my_folders_and_each_projects_against_their_limits():
    folders = [
        {"owner": {"kind": "user", "user": "alice", "domain": "acme"}, "usage_bytes": 10},
        {"owner": {"kind": "user", "user": "alice", "domain": "acme"}, "usage_bytes": 5},
        {"owner": {"kind": "user", "user": "bob", "domain": "acme"}, "usage_bytes": 100},
        {"owner": {"kind": "project", "project": "ml", "domain": "acme"}, "usage_bytes": 7},
    ]
    q = amounts.compose_quota(ME, POLICY, [], folders)
    assert q["storage"] == [
        {"level": "user", "name": "alice", "folders": 2, "max_folders": 3, "bytes": 15,
         "max_bytes": None},
        {"level": "project", "name": "ml", "folders": 1, "max_folders": 2, "bytes": 7,
         "max_bytes": 1 << 30},
    ]


# --- settings from the environment ---------------------------------------------------------

API = "http://127.0.0.1:8000/services/hubgrid/api/v1"


def test_a_keypair_is_sent_as_the_service_expects():
    s = Settings.from_env({"HUBGRID_API_URL": API + "/", "HUBGRID_ACCESS_KEY": "AK",
                           "HUBGRID_SECRET_KEY": "SK"})
    assert (s.api_url, s.authorization, s.credential, s.access_key) == (
        API, "Keypair AK:SK", "keypair", "AK")
    assert s.hub_api_url == "http://127.0.0.1:8000/hub/api" and s.hub_token is None
    assert "SK" not in repr(s)


def test_inside_a_session_the_sessions_own_token_is_used_for_the_service_and_the_hub():
    s = Settings.from_env({"HUBGRID_API_URL": API, "JUPYTERHUB_API_TOKEN": "s3cr3t-tok",
                           "JUPYTERHUB_API_URL": "http://127.0.0.1:8081/hub/api/"})
    assert (s.authorization, s.credential) == ("token s3cr3t-tok", "token")
    assert (s.hub_api_url, s.hub_token) == ("http://127.0.0.1:8081/hub/api", "s3cr3t-tok")
    assert "s3cr3t" not in repr(s)


def test_an_explicit_keypair_wins_over_the_session_token():
    s = Settings.from_env({"HUBGRID_API_URL": API, "JUPYTERHUB_API_TOKEN": "s3cr3t-tok",
                           "HUBGRID_ACCESS_KEY": "AK", "HUBGRID_SECRET_KEY": "SK"})
    assert s.authorization == "Keypair AK:SK" and s.hub_token == "s3cr3t-tok"


@pytest.mark.parametrize("env,words", [
    ({}, "HUBGRID_API_URL is not set"),
    ({"HUBGRID_API_URL": "ftp://x"}, "http(s) URL"),
    ({"HUBGRID_API_URL": API}, "no credentials"),
    ({"HUBGRID_API_URL": API, "HUBGRID_ACCESS_KEY": "AK"}, "HUBGRID_SECRET_KEY is not set"),
    ({"HUBGRID_API_URL": API, "HUBGRID_SECRET_KEY": "SK"}, "HUBGRID_ACCESS_KEY is not set"),
])
def test_a_missing_setting_is_named(env, words):
    with pytest.raises(NotConfigured) as e:
        Settings.from_env(env)
    assert words in e.value.message and e.value.status is None


@pytest.mark.parametrize("url,hub", [
    (API, "http://127.0.0.1:8000/hub/api"),
    ("https://h.example/base/services/hubgrid/api/v1/", "https://h.example/base/hub/api"),
    ("http://127.0.0.1:10101/api", None),
])
def test_the_hub_api_is_found_next_to_a_service_reached_through_the_proxy(url, hub):
    assert hub_api_from(url) == hub


def test_the_hub_is_needed_only_to_start_and_stop_servers():
    client = HubgridClient(Settings.from_env({"HUBGRID_API_URL": "http://127.0.0.1:1/api",
                                              "HUBGRID_ACCESS_KEY": "A",
                                              "HUBGRID_SECRET_KEY": "S"}))
    with client, pytest.raises(NotConfigured) as e:
        client.start_server("alice", "x", {})
    assert "JUPYTERHUB_API_TOKEN" in e.value.message


class PendingSpawnHub:
    """A double of JupyterHub's users API for the one race a real hub will not
    replay on demand: a stop while the start is pending answers 500 ("pending
    spawn") when the start has not unwound within the hub's second; the start
    stays pending for ``pending_reads`` more reads of the user."""

    def __init__(self, pending_reads: int, gone: bool = False):
        self.pending_reads, self.gone, self.calls = pending_reads, gone, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls.append((request.method, request.url.path))
        if request.method == "DELETE":
            deletes = sum(1 for m, _ in self.calls if m == "DELETE")
            if deletes == 1:
                return httpx.Response(500, json={"status": 500, "message": "Internal Server Error"})
            return httpx.Response(204)
        pending = self.pending_reads > 0
        self.pending_reads -= 1
        servers = {} if self.gone and not pending else {
            "x": {"pending": "spawn" if pending else None, "ready": False}}
        return httpx.Response(200, json={"name": "alice", "servers": servers})


def hub_client(hub: PendingSpawnHub) -> HubgridClient:
    return HubgridClient(Settings.from_env({
        "HUBGRID_API_URL": API, "HUBGRID_ACCESS_KEY": "A", "HUBGRID_SECRET_KEY": "S",
        "JUPYTERHUB_API_TOKEN": "t"}), transport=httpx.MockTransport(hub))


def test_a_stop_while_the_start_unwinds_is_asked_again_once_it_has():
    hub = PendingSpawnHub(pending_reads=2)
    with hub_client(hub) as client:
        assert client.stop_server("alice", "x", poll=0.01) is True
    assert [m for m, _ in hub.calls] == ["DELETE", "GET", "GET", "GET", "DELETE"]


def test_a_stop_while_the_start_unwinds_is_done_when_the_server_is_gone():
    hub = PendingSpawnHub(pending_reads=1, gone=True)
    with hub_client(hub) as client:
        assert client.stop_server("alice", "x", poll=0.01) is True
    assert [m for m, _ in hub.calls] == ["DELETE", "GET", "GET"]


def test_a_start_that_never_unwinds_is_a_409_to_try_again():
    hub = PendingSpawnHub(pending_reads=10**6)
    with hub_client(hub) as client, pytest.raises(ClientError) as e:
        client.stop_server("alice", "x", unwind_timeout=0.05, poll=0.01)
    assert e.value.status == 409 and "still starting" in e.value.message


# --- against the real service ---------------------------------------------------------------

def keypair_env(served, user: str) -> dict:  # noqa: F811
    access, secret = served.auth(user).removeprefix("Keypair ").split(":", 1)
    return {"HUBGRID_API_URL": served.api, "HUBGRID_ACCESS_KEY": access,
            "HUBGRID_SECRET_KEY": secret}


@pytest.fixture
def world(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"n1": ("A100", "A100")}, cpu="8", mem="32G")
    cluster.set_project("acme", "ml", slots={"cpu": "4", "gpu.shares": "1"})
    cluster.set_domain("acme", slots={"gpu.shares": "2"})
    return served


async def call(served, user, fn):  # noqa: F811
    """``fn(client)`` in a worker thread (the service runs on this loop)."""
    def run():
        with HubgridClient.from_env(keypair_env(served, user)) as c:
            return fn(c)
    return await asyncio.to_thread(run)


async def test_allocations_read_back_exactly(world):
    body = {"project": "ml", "resource_group": "gpu", "slots": {"cpu": "1", "gpu.shares": "0.3"}}
    for _ in range(3):
        resp, _ = await world.call("POST", "allocations", "alice", json_body=body)
        assert resp.code == 201
    got = await call(world, "alice", lambda c: c.allocations("allocated"))
    shares = [a["slots"]["gpu.shares"] for a in got]
    assert shares == [D("0.3")] * 3 and sum(shares) == D("0.9")
    assert all(isinstance(g["share"], Decimal) for a in got for g in a["gpus"])
    quota = await call(world, "alice", lambda c: c.quota())
    assert rows_of(quota, "project")["gpu.shares"] == (D(1), D("0.9"), D("0.1"), D(0))


async def test_a_refusal_carries_the_services_status_and_message(world):
    body = {"project": "nope", "resource_group": "gpu", "slots": {"cpu": "1"}}
    with pytest.raises(ClientError) as e:
        await call(world, "alice", lambda c: c.dry_run(body))
    assert (e.value.status, e.value.reason) == (404, "not-found")
    assert e.value.message == "project acme/nope not found"


async def test_a_wrong_secret_is_refused_with_the_services_message(world):
    env = {**keypair_env(world, "alice"), "HUBGRID_SECRET_KEY": "wrong"}

    def me():
        with HubgridClient.from_env(env) as c:
            return c.me()

    with pytest.raises(ClientError) as e:
        await asyncio.to_thread(me)
    assert e.value.status == 401 and e.value.message


async def test_upload_and_download_stream_the_exact_bytes(world):
    folder = await call(world, "alice", lambda c: c.create_folder("data"))
    payload = bytes(range(256)) * 5000

    def roundtrip(c):
        c.upload(folder["id"], "blob.bin", io.BytesIO(payload), len(payload))
        out = io.BytesIO()
        n = c.download(folder["id"], "blob.bin", out)
        return n, out.getvalue()

    n, got = await call(world, "alice", roundtrip)
    assert n == len(payload) and got == payload


def test_an_unreachable_service_is_its_own_error():
    from bench.hubproc import free_port

    url = f"http://127.0.0.1:{free_port()}/services/hubgrid/api/v1"
    with HubgridClient.from_env({"HUBGRID_API_URL": url, "JUPYTERHUB_API_TOKEN": "t"}) as c:
        with pytest.raises(ServiceUnreachable) as e:
            c.me()
    assert e.value.status is None and url in e.value.message
