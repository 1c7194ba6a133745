"""Where a session is told the serving gateway is (spawner/gatewayenv.py):
beside the hubgrid API for a session that reaches the hub directly, behind
its relay for an isolated Docker session, never with a credential in
OPENAI_API_KEY, and nothing of it in a replica. Pure: no hub, no engine."""

from __future__ import annotations

from spawner.gatewayenv import gateway_environment, openai_base, relayed_gateway
from spawner.inference import replica_environment
from spawner.isolation import SessionNetwork, gateway_url

API = "http://127.0.0.1:8000/jh/services/hubgrid/api/v1/"
GATEWAY = "http://127.0.0.1:8000/jh/services/hubgrid-gateway/"


def test_a_session_that_reaches_the_hub_gets_the_gateway_beside_the_api():
    env = gateway_environment({"HUBGRID_API_URL": API}, gateway_url(API))
    assert env == {"HUBGRID_API_URL": API, "HUBGRID_GATEWAY_URL": GATEWAY,
                   "OPENAI_BASE_URL": GATEWAY + "v1"}
    assert "OPENAI_API_KEY" not in env  # the hub token goes where the caller names it


def test_an_admins_own_values_win():
    mine = {"OPENAI_BASE_URL": "https://llm.example.org/v1"}
    assert gateway_environment(mine, GATEWAY) == {**mine, "HUBGRID_GATEWAY_URL": GATEWAY}


def test_no_gateway_known_adds_nothing():
    assert gateway_url("https://hub.example.org/custom/api/") == ""
    assert gateway_environment({"A": "1"}, "") == {"A": "1"}


def test_the_root_always_ends_in_one_slash_and_the_openai_base_in_v1():
    env = gateway_environment({}, "https://hub.example.org/services/hubgrid-gateway")
    assert env["HUBGRID_GATEWAY_URL"] == "https://hub.example.org/services/hubgrid-gateway/"
    assert env["OPENAI_BASE_URL"] == "https://hub.example.org/services/hubgrid-gateway/v1"
    assert openai_base("http://h/g/") == openai_base("http://h/g") == "http://h/g/v1"


def test_an_isolated_session_reaches_the_gateway_through_its_relay():
    net = SessionNetwork.of("/run/hubgrid/sessions", "ab-12", 8081)
    env = gateway_environment({"JUPYTERHUB_API_URL": "http://127.0.0.1:8081/jh/hub/api",
                               "HUBGRID_API_URL": API}, gateway_url(API))
    inside = net.environment(env, "http://127.0.0.1:8081/jh/hub/api",
                             "http://127.0.0.1:10101/jh/services/hubgrid/api/v1/")
    # the same path on the session's own loopback: the path its relay carries
    assert inside["HUBGRID_GATEWAY_URL"] == "http://127.0.0.1:8081/jh/services/hubgrid-gateway/"
    assert inside["OPENAI_BASE_URL"] == "http://127.0.0.1:8081/jh/services/hubgrid-gateway/v1"
    assert inside["HUBGRID_API_URL"] == "http://127.0.0.1:8081/jh/services/hubgrid/api/v1/"
    assert not any("8000" in v for v in inside.values())  # the public URL answers nothing there


def test_behind_a_relay_an_admins_openai_base_is_kept():
    env = {"HUBGRID_GATEWAY_URL": GATEWAY, "OPENAI_BASE_URL": "https://llm.example.org/v1"}
    assert relayed_gateway(env, "http://127.0.0.1:9") == {
        "HUBGRID_GATEWAY_URL": "http://127.0.0.1:9/jh/services/hubgrid-gateway/",
        "OPENAI_BASE_URL": "https://llm.example.org/v1"}
    assert relayed_gateway({"A": "1"}, "http://127.0.0.1:9") == {"A": "1"}


def test_a_replica_is_told_nothing_of_the_gateway():
    env = gateway_environment({"KEEP": "1"}, GATEWAY)
    out = replica_environment(env, {"port": 8000, "model": "m", "argv": ["x"]})
    assert "HUBGRID_GATEWAY_URL" not in out and "OPENAI_BASE_URL" not in out
    assert out["KEEP"] == "1"


def test_a_local_session_is_told_the_gateway_beside_its_api_url():
    from types import SimpleNamespace

    from spawner import HubgridLocalProcessSpawner

    hub = SimpleNamespace(base_url="/hub/", api_url="http://127.0.0.1:8081/hub/api", public_host="")
    user = SimpleNamespace(name="alice", escaped_name="alice", url="/user/alice/",
                           settings={"proxy": SimpleNamespace(public_url="http://:8000")})
    env = HubgridLocalProcessSpawner(user=user, hub=hub).get_env()
    assert env["HUBGRID_GATEWAY_URL"] == "http://127.0.0.1:8000/services/hubgrid-gateway/"
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:8000/services/hubgrid-gateway/v1"
    assert "OPENAI_API_KEY" not in env
    # an API URL the gateway cannot be found beside: no gateway variable at all
    env = HubgridLocalProcessSpawner(user=user, hub=hub,
                                     hubgrid_api_url="https://gw.example.org/hg/api/v1/").get_env()
    assert "HUBGRID_GATEWAY_URL" not in env and "OPENAI_BASE_URL" not in env
