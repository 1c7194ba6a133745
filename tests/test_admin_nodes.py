"""The node page's endpoint: a node's sessions, each GPU's shares and who
holds them, and how long until it is empty at its sessions' lifetime
limits. ``devicemap`` is tested as data; the endpoint through
the real tornado app."""

from __future__ import annotations

import datetime as dt

import pytest

from ledger_world import T0, Cluster
from quota_service.scheduling import devicemap
from service_app import served  # noqa: F401

H = dt.timedelta(hours=1)


def run(i, domain, gpus, ends):
    return devicemap.Running(i, f"u{i}", domain, "p", {"cpu": "1"}, gpus, T0, ends)


def test_each_gpu_names_the_holders_one_may_see_and_sums_the_others():
    sessions = [run("a", "acme", [{"index": 0, "share": "0.3", "memory": 3 * 2**30}], None),
                run("b", "globex", [{"index": 0, "share": "0.5"}], None),
                run("c", "acme", [{"index": 1, "share": "1"}], None)]
    devs = devicemap.holders([(0, "A100", 80), (1, "A100", 80)], sessions,
                             lambda d: d == "acme")
    assert devs[0]["taken"] == "0.8" and devs[0]["free"] == "0.2"
    assert [h["allocation"] for h in devs[0]["holders"]] == ["a"]
    assert devs[0]["others"] == "0.5"
    assert devs[1]["holders"][0]["share"] == "1" and devs[1]["free"] == "0"
    # the memory each share may use (0: unknown)
    assert [h["memory"] for d in devs for h in d["holders"]] == [3 * 2**30, 0]


def test_until_empty_is_the_last_lifetime_end_and_unknown_when_any_session_has_none():
    now = T0
    assert devicemap.until_empty(now, []) == {"seconds": 0, "at": now.isoformat(),
                                              "sessions": 0, "unlimited": 0}
    two = [run("a", "x", [], T0 + H), run("b", "x", [], T0 + 2 * H)]
    assert devicemap.until_empty(now, two)["seconds"] == 7200
    assert devicemap.until_empty(now, two)["at"] == (T0 + 2 * H).isoformat()
    late = devicemap.until_empty(T0 + 3 * H, two)  # past the limits: due now
    assert late["seconds"] == 0
    unknown = devicemap.until_empty(now, two + [run("c", "x", [], None)])
    assert unknown["seconds"] is None and unknown["unlimited"] == 1


@pytest.fixture
def gpu_node(served):  # noqa: F811
    """n1 (2 GPUs): alice 0.5 of GPU 0 (policy 'short': 2 h lifetime),
    gina 0.25 of GPU 0 (default policy: no lifetime limit)."""
    c = Cluster(served.world)
    c.set_policy("short", max_session_lifetime=7200)
    c.set_user("alice", resource_policy="short")
    c.add_group("gpu", {"n1": ("A100", "A100")}, domains=("acme", "globex"))
    a = c.submit("alice", "ml", "gpu", slots={"cpu": "1", "gpu.shares": "0.5"})
    g = c.submit("gina", "lab", "gpu", slots={"cpu": "1", "gpu.shares": "0.25"})
    assert a["gpus"][0]["index"] == g["gpus"][0]["index"] == 0, (a, g)
    served.svc.clock = lambda: c.now + H
    served.ids = {"alice": a["id"], "gina": g["id"]}
    served.cluster = c
    return served


async def test_admins_see_their_domains_holders_and_others_only_as_taken(gpu_node):
    resp, root = await gpu_node.call("GET", "nodes/n1/sessions", "root")
    assert resp.code == 200, root
    assert {h["user"] for h in root["devices"][0]["holders"]} == {"alice", "gina"}
    assert root["devices"][0]["taken"] == "0.75" and root["other_sessions"] == 0
    assert root["until_empty"]["seconds"] is None  # gina's session has no limit
    resp, ada = await gpu_node.call("GET", "nodes/n1/sessions", "ada")
    dev = ada["devices"][0]
    assert [h["user"] for h in dev["holders"]] == ["alice"]
    assert dev["others"] == "0.25" and dev["taken"] == "0.75"
    assert [x["user"] for x in ada["sessions"]] == ["alice"] and ada["other_sessions"] == 1
    assert ada["sessions"][0]["ends_at"] is not None
    # the session is named (its server, or its origin for the page to name it), not only its id
    assert (dev["holders"][0]["server_name"], dev["holders"][0]["origin"]) == ("", "api")
    assert (ada["sessions"][0]["server_name"], ada["sessions"][0]["origin"]) == ("", "api")
    for who, code in (("alice", 403), ("gina", 403)):
        resp, body = await gpu_node.call("GET", "nodes/n1/sessions", who)
        assert resp.code == code and body["message"], (who, body)
    resp, body = await gpu_node.call("GET", "nodes/nope/sessions", "ada")
    assert resp.code == 404


async def test_a_drained_node_says_when_it_is_empty_at_its_sessions_limits(gpu_node):
    gpu_node.cluster.release("gina", gpu_node.ids["gina"])
    gpu_node.cluster.set_node("n1", schedulable=False)
    resp, body = await gpu_node.call("GET", "nodes/n1/sessions", "root")
    assert body["schedulable"] is False
    # alice's session started at the submit, 2 h lifetime, the clock 1 h later
    assert 3500 <= body["until_empty"]["seconds"] <= 3600, body["until_empty"]
    assert body["until_empty"]["unlimited"] == 0


async def test_the_nodes_own_json_carries_until_empty_for_admins_only(gpu_node):
    gpu_node.cluster.release("gina", gpu_node.ids["gina"])
    resp, body = await gpu_node.call("GET", "nodes/n1", "ada")
    assert resp.code == 200 and body["until_empty"]["sessions"] == 1, body
    resp, body = await gpu_node.call("GET", "nodes/n1", "alice")
    assert resp.code == 200 and "until_empty" not in body


async def test_several_nodes_are_read_in_one_call_each_as_alone(gpu_node):
    gpu_node.cluster.add_group("cpu", {"c1": (), "c2": ()}, domains=("acme",))
    resp, one = await gpu_node.call("GET", "nodes/n1/sessions", "ada")
    resp, many = await gpu_node.call("GET", "node-sessions?names=c2,n1,c2", "ada")
    assert resp.code == 200, many
    assert [n["name"] for n in many] == ["c2", "n1"] and many[1] == one
    assert many[0]["sessions"] == [] and many[0]["other_sessions"] == 0


@pytest.mark.parametrize("who, query, code, message", [
    ("gus", "names=n1,c1", 404, "node 'c1' not found"),  # globex does not see acme's group
    ("alice", "names=n1", 403, ""),
    ("ada", "names=", 400, "names: the nodes to read, comma-separated"),
    ("ada", "names=" + ",".join(f"x{i}" for i in range(201)), 400,
     "names: at most 200 nodes at once, not 201"),
])
async def test_a_read_of_several_nodes_is_refused_whole(gpu_node, who, query, code, message):
    gpu_node.cluster.add_group("cpu", {"c1": ()}, domains=("acme",))
    resp, body = await gpu_node.call("GET", f"node-sessions?{query}", who)
    assert resp.code == code and body["message"].startswith(message), body
    assert "gina" not in str(body) and "alice" not in str(body)
