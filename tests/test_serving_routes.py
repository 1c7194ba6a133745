"""The gateway's side of the service: the route table it serves
(``GET internal/serving/routes``) and the reports it sends back (``POST
internal/serving/report``), through the service's real app on SQLite and
PostgreSQL; and the health rules (serving/health.py) with plain data."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
import sqlalchemy as sa

from quota_service.core.models import Allocation, Project, User
from quota_service.core.servingmodels import Endpoint, EndpointToken
from quota_service.serving import health, routes
from service_app import served  # noqa: F401
from test_endpoints import CHAT, IMAGE, env  # noqa: F401

T = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)


async def replica(env, ep, n):  # noqa: F811
    """A replica's allocation, asked for as the serving controller's spawns ask."""
    return await env.ok("POST", "internal/allocations", "internal", 201, {
        "user": "alice", "endpoint": ep["id"], "project": "ml", "resource_group": "infer",
        "image": IMAGE, "slots": ep["slots"], "session_type": "inference",
        "server_name": f"ep-{ep['name']}-{n}"})


def serve(env, alloc_id, target):  # noqa: F811
    """What the controller writes once it sees a replica serve."""
    with env.world.tx() as s:
        a = s.get(Allocation, alloc_id)
        a.service = {**a.service, "target": target}
        a.serving_at = dt.datetime.now(dt.timezone.utc)


async def test_the_table_routes_serving_replicas_with_active_tokens_only(env):  # noqa: F811
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=2))
    first = await env.ok("POST", f"endpoints/{ep['id']}/tokens", "alice", 201,
                         {"expires_in_days": 30})
    second = await env.ok("POST", f"endpoints/{ep['id']}/tokens", "alice", 201,
                          {"expires_in_days": 30})
    await env.ok("DELETE", f"endpoints/{ep['id']}/tokens/{second['id']}", "alice", 204)
    r1, r2 = await replica(env, ep, 1), await replica(env, ep, 2)
    serve(env, r1["id"], "unix:/run/hubgrid/sessions/a/jupyter.sock")

    table = await env.ok("GET", "internal/serving/routes", "internal", 200)
    [row] = [e for e in table["endpoints"] if e["id"] == ep["id"]]
    assert row["name"] == ep["name"] and (row["domain"], row["project"]) == ("acme", "ml")
    assert row["public"] is False and row["models"] == ["echo-chat"]
    # the echo-chat definition's probe: /health every 5 s, 3 tries
    assert row["health"] == {"path": "/health", "interval": 5, "max_retries": 3,
                             "expected_status": 200}
    # only the replica seen serving, at its socket
    assert row["replicas"] == [{"name": f"ep-{ep['name']}-1",
                                "target": "unix:/run/hubgrid/sessions/a/jupyter.sock"}]
    # the active token's hash, never a secret; the revoked one is gone
    assert [t["id"] for t in row["tokens"]] == [first["id"]]
    assert row["tokens"][0]["sha256"] == hashlib.sha256(first["token"].encode()).hexdigest()
    assert first["token"] not in str(table)

    serve(env, r2["id"], "unix:/run/hubgrid/sessions/b/jupyter.sock")
    with env.world.tx() as s:  # an expired token leaves the table too
        s.get(EndpointToken, first["id"]).expires_at = T.replace(year=2020)
    table = await env.ok("GET", "internal/serving/routes", "internal", 200)
    [row] = [e for e in table["endpoints"] if e["id"] == ep["id"]]
    assert len(row["replicas"]) == 2 and row["tokens"] == []

    # a released replica leaves the rotation; a deleted endpoint the table
    await env.ok("DELETE", f"internal/allocations/{r1['id']}?reason=test", "internal", 200)
    table = await env.ok("GET", "internal/serving/routes", "internal", 200)
    [row] = [e for e in table["endpoints"] if e["id"] == ep["id"]]
    assert [r["name"] for r in row["replicas"]] == [f"ep-{ep['name']}-2"]
    await env.ok("DELETE", f"endpoints/{ep['id']}", "alice", 204)
    table = await env.ok("GET", "internal/serving/routes", "internal", 200)
    assert ep["id"] not in [e["id"] for e in table["endpoints"]]


async def test_only_the_internal_token_reads_the_table_or_reports(env):  # noqa: F811
    for user in ("alice", "root", None):
        await env.ok("GET", "internal/serving/routes", user, 401)
        await env.ok("POST", "internal/serving/report", user, 401, {"replicas": []})


async def test_a_report_gives_the_endpoint_its_health_and_bad_ones_are_refused(env):  # noqa: F811
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=2))
    report = {"replicas": [
        {"endpoint": ep["id"], "name": "r1", "up": True, "status": "UP", "check": "L7OK"},
        {"endpoint": ep["id"], "name": "r2", "up": False, "status": "DOWN", "check": "L4CON",
         "detail": "Connection refused"}],
        "calls": [{"endpoint": ep["id"], "code": "2xx", "calls": 7, "seconds": 0.25}]}
    await env.ok("POST", "internal/serving/report", "internal", 204, report)
    got = await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200)
    assert got["health"]["status"] == "degraded" and got["health"]["reachable"] is True
    assert [r["name"] for r in got["health"]["replicas"]] == ["r1", "r2"]
    assert got["health"]["calls"] == {"2xx": 7}
    # the calls in the service's Prometheus metrics
    await env.ok("POST", "internal/serving/report", "internal", 204, {"calls": [
        {"endpoint": ep["id"], "code": "2xx", "calls": 3, "seconds": 0.5}]})
    r, text = await env.call("GET", "metrics", "root")
    assert r.code == 200
    assert f'hubgrid_endpoint_calls_total{{code="2xx",endpoint="{ep["id"]}"}} 10.0' in text
    assert (f'hubgrid_endpoint_call_seconds_total{{code="2xx",endpoint="{ep["id"]}"}} 0.75'
            in text)
    for bad in ({"replicas": [{"endpoint": ep["id"], "name": "r1"}]},
                {"calls": [{"endpoint": ep["id"], "code": "200", "calls": 1, "seconds": 0}]},
                {"replicas": [], "extra": 1}):
        await env.ok("POST", "internal/serving/report", "internal", 422, bad)


# ----------------------------------------------------------- health, pure

def rep(name, up, check="L7OK", ep="e1"):
    return {"endpoint": ep, "name": name, "up": up, "status": "UP" if up else "DOWN",
            "check": check}


def test_health_is_healthy_degraded_down_or_unknown():
    r = health.Reports()
    assert r.of("e1", T, 30)["status"] == "unknown"  # never reported
    r.record({"replicas": [rep("a", True), rep("b", True)]}, T)
    assert (r.of("e1", T, 30)["status"], r.of("e1", T, 30)["reachable"]) == ("healthy", True)
    r.record({"replicas": [rep("a", True), rep("b", False, "L4CON")]}, T)
    assert (r.of("e1", T, 30)["status"], r.of("e1", T, 30)["replicas_up"]) == ("degraded", 1)
    r.record({"replicas": [rep("a", False, "L4CON"), rep("b", False, "L4CON")]}, T)
    assert (r.of("e1", T, 30)["status"], r.of("e1", T, 30)["reachable"]) == ("down", False)
    assert r.of("e2", T, 30)["status"] == "unknown"  # no replica routed
    # fewer up than the endpoint asks for: degraded, though every routed one passes
    # (a dead replica already out of the table while it is replaced)
    r.record({"replicas": [rep("a", True)]}, T)
    assert (r.of("e1", T, 30, 2)["status"], r.of("e1", T, 30, 2)["replicas_wanted"]) == (
        "degraded", 2)
    assert r.of("e1", T, 30, 1)["status"] == "healthy"
    assert r.of("e2", T, 30, 1)["status"] == "down"  # asked for, none routed
    r.record({"replicas": [rep("a", False, "L4CON"), rep("b", False, "L4CON")]}, T)
    later = T + dt.timedelta(seconds=31)
    assert (r.of("e1", later, 30)["status"], r.of("e1", later, 30)["reachable"]) == (
        "unknown", None)  # a silent gateway is not trusted


def test_history_keeps_changes_only_and_forgets_unrouted_replicas():
    r = health.Reports(history=3)
    for i, up in enumerate([True, True, False, False, True, False, True]):
        r.record({"replicas": [rep("a", up, "L7OK" if up else "L4CON"), rep("b", True)]},
                 T + dt.timedelta(seconds=i))
    [a, b] = r.of("e1", T + dt.timedelta(seconds=6), 30)["replicas"]
    assert [h["up"] for h in a["history"]] == [True, False, True]  # the last 3 changes
    assert [h["up"] for h in b["history"]] == [True]
    r.record({"replicas": [rep("b", True)]}, T + dt.timedelta(seconds=7))
    assert ("e1", "a") not in r.history
    # a reload's new worker says INI (not probed yet): no change; a first INI is kept
    r.record({"replicas": [rep("b", True, "INI"), rep("c", True, "INI")]},
             T + dt.timedelta(seconds=8))
    [b, c] = r.of("e1", T + dt.timedelta(seconds=8), 30)["replicas"]
    assert [h["check"] for h in b["history"]] == ["L7OK"]
    assert [h["check"] for h in c["history"]] == ["INI"]


def test_calls_add_up_across_reports():
    r = health.Reports()
    r.record({"calls": [{"endpoint": "e1", "code": "2xx", "calls": 3, "seconds": 0.1}]}, T)
    r.record({"calls": [{"endpoint": "e1", "code": "2xx", "calls": 2, "seconds": 0.2},
                        {"endpoint": "e1", "code": "5xx", "calls": 1, "seconds": 0.0}]}, T)
    assert r.of("e1", T, 30)["calls"] == {"2xx": 5, "5xx": 1}
    assert str(r.seconds[("e1", "2xx")]) == "0.3"  # exact, not 0.30000000000000004


def test_the_probe_comes_from_the_definition_with_defaults():
    assert routes.health_of({}) == routes.DEFAULT_HEALTH
    assert routes.health_of({"health_path": "/ready", "health_interval": "0.5",
                             "health_max_retries": 5, "health_expected_status": 204}) == {
        "path": "/ready", "interval": 1, "max_retries": 5, "expected_status": 204}
    assert routes.health_of({"health_interval": "2.5"})["interval"] == 3


# ------------------------------------------------------------- autoscaling

RULE_OUT = {"metric": "requests_per_second", "comparator": "gt", "threshold": "5", "step": 2,
            "cooldown": 0, "min_replicas": 1, "max_replicas": 3}


async def report_calls(env, eid, calls, up=1):  # noqa: F811
    await env.ok("POST", "internal/serving/report", "internal", 204, {
        "replicas": [{"endpoint": eid, "name": f"r{i}", "up": True, "status": "UP",
                      "in_flight": 1} for i in range(up)],
        "calls": [{"endpoint": eid, "code": "2xx", "calls": calls, "seconds": 0.1}]})


async def test_rules_are_set_shown_and_refused_with_their_field(env):  # noqa: F811
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=1))
    got = await env.ok("PATCH", f"endpoints/{ep['id']}", "alice", 200,
                       {"autoscaling": [RULE_OUT]})
    assert got["autoscaling"] == [RULE_OUT] and got["scaling_events"] == []
    for bad, words in [({**RULE_OUT, "step": 0}, "autoscaling[0].step"),
                       ({**RULE_OUT, "min_replicas": 4}, "autoscaling[0].min_replicas"),
                       ({**RULE_OUT, "metric": "cpu"}, "metric"),
                       ({**RULE_OUT, "threshold": "1e9"}, "threshold")]:
        r, data = await env.call("PATCH", f"endpoints/{ep['id']}", "alice",
                                 json_body={"autoscaling": [bad]})
        assert r.code == 422 and words in str(data), (bad, data)
    assert (await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200))["autoscaling"] == [
        RULE_OUT]
    # another member of the project may not change them (bob is none; ada admins acme)
    await env.ok("PATCH", f"endpoints/{ep['id']}", "ada", 200, {"autoscaling": []})
    assert (await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200))["autoscaling"] == []


async def test_load_scales_out_clamped_to_the_bound_then_refused_there(env):  # noqa: F811
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=2))
    await env.ok("PATCH", f"endpoints/{ep['id']}", "alice", 200, {"autoscaling": [RULE_OUT]})
    await report_calls(env, ep["id"], 0)     # the first report: no rate yet
    await report_calls(env, ep["id"], 1000)  # a burst: far over 5/s per replica
    got = await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200)
    assert got["replicas"] == 3  # 2 + 2 clamped to max_replicas 3
    [clamped] = got["scaling_events"]
    assert clamped["outcome"] == "clamped" and "clamped to max_replicas 3" in clamped["reason"]
    assert (clamped["replicas_before"], clamped["replicas_after"]) == (2, 3)
    assert float(got["health"]["measured"]["requests_per_second"]) > 5
    await report_calls(env, ep["id"], 1000)
    await report_calls(env, ep["id"], 1000)
    got = await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200)
    assert got["replicas"] == 3
    refused = got["scaling_events"][-1]
    assert refused["outcome"] == "at-bound" and refused["count"] == 2  # one event, counted


async def test_quiet_scales_in_after_the_cooldown(env):  # noqa: F811
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=2))
    rule = {"metric": "in_flight", "comparator": "lt", "threshold": "2", "step": -1,
            "cooldown": 3600, "min_replicas": 0, "max_replicas": 3}
    await env.ok("PATCH", f"endpoints/{ep['id']}", "alice", 200, {"autoscaling": [rule]})
    await report_calls(env, ep["id"], 0)  # 1 in flight per replica < 2
    got = await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200)
    # the PATCH of the rules was no change of replicas: the step is taken now
    assert got["replicas"] == 1 and got["scaling_events"][-1]["outcome"] == "scaled"
    await report_calls(env, ep["id"], 0)
    got = await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200)
    assert got["replicas"] == 1 and got["scaling_events"][-1]["outcome"] == "cooldown"


async def test_a_call_wakes_an_endpoint_its_rules_scaled_to_zero(env):  # noqa: F811
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=1))
    path = f"endpoints/{ep['id']}"
    rule = {"metric": "requests_per_second", "comparator": "lt", "threshold": "1", "step": -1,
            "cooldown": 0, "min_replicas": 0, "max_replicas": 2}

    def row(table):
        return [e for e in table["endpoints"] if e["id"] == ep["id"]][0]

    # at zero by hand, no rule allows zero: not woken (409 with why), not wakeable
    await env.ok("PATCH", path, "alice", 200, {"replicas": 0})
    got = row(await env.ok("GET", "internal/serving/routes", "internal", 200))
    assert (got["replicas_wanted"], got["wake"]) == (0, False)
    r, data = await env.call("POST", "internal/serving/wake", "internal",
                             json_body={"endpoint": ep["id"]})
    assert r.code == 409 and "no autoscaling rule" in data["message"]
    assert (await env.ok("GET", path, "alice", 200))["replicas"] == 0
    # a rule that allows zero: the table says a call may wake it
    await env.ok("PATCH", path, "alice", 200, {"autoscaling": [rule]})
    got = row(await env.ok("GET", "internal/serving/routes", "internal", 200))
    assert (got["replicas_wanted"], got["wake"], got["state"]) == (0, True, "provisioning")
    woken = await env.ok("POST", "internal/serving/wake", "internal", 200,
                         {"endpoint": ep["id"]})
    assert woken == {"replicas": 1, "woken": True}
    got = await env.ok("GET", path, "alice", 200)
    assert got["replicas"] == 1
    wake = got["scaling_events"][-1]
    assert (wake["outcome"], wake["rule"], wake["replicas_before"], wake["replicas_after"]) == (
        "wake", None, 0, 1) and "cold start" in wake["reason"]
    # a second call's wake changes nothing
    assert await env.ok("POST", "internal/serving/wake", "internal", 200,
                        {"endpoint": ep["id"]}) == {"replicas": 1, "woken": False}
    assert len((await env.ok("GET", path, "alice", 200))["scaling_events"]) == 1
    assert row(await env.ok("GET", "internal/serving/routes", "internal", 200))["wake"] is False
    # an endpoint that is gone, or was never: 404; only the internal token wakes
    await env.ok("POST", "internal/serving/wake", "internal", 404, {"endpoint": "9" * 32})
    for user in ("alice", "root"):
        await env.ok("POST", "internal/serving/wake", user, 401, {"endpoint": ep["id"]})
    await env.ok("POST", "internal/serving/wake", "internal", 422, {"endpoint": 7})


async def test_a_step_up_past_the_creators_limits_is_clamped_then_refused(env):  # noqa: F811
    """alice may hold 2 CPUs: from one replica of 1 CPU (asked for, not yet
    admitted: it counts), a step of +3 is clamped to 2, the next refused."""
    env.set_policy(total_resource_slots={"cpu": "2"}, unspecified_limited=False)
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=1))
    rule = {**RULE_OUT, "step": 3, "max_replicas": 5}
    await env.ok("PATCH", f"endpoints/{ep['id']}", "alice", 200, {"autoscaling": [rule]})
    await report_calls(env, ep["id"], 0)
    await report_calls(env, ep["id"], 1000)
    got = await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200)
    assert got["replicas"] == 2
    [clamped] = got["scaling_events"]
    assert (clamped["outcome"], clamped["replicas_before"], clamped["replicas_after"]) == (
        "clamped", 1, 2)
    assert "clamped to 2 by the creator's limits" in clamped["reason"]
    await report_calls(env, ep["id"], 1000)
    await report_calls(env, ep["id"], 1000)
    got = await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200)
    assert got["replicas"] == 2
    refused = got["scaling_events"][-1]
    assert refused["outcome"] == "quota" and refused["count"] == 2
    assert "leave room for no more replica" in refused["reason"] and "cpu" in refused["reason"]


# -------------------------------------- what e/<id>/ passes on, deactivation

async def test_the_table_says_which_methods_and_paths_an_endpoints_own_url_passes_on(
        env):  # noqa: F811
    """GET and POST on the OpenAI routes and the probe's path, unless the
    definition's ``service.methods`` and ``service.paths`` say otherwise."""
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body())
    await replica(env, ep, 1)
    defined = CHAT.replace(b"      port: 8000\n", b"      port: 8000\n      methods: [get, POST, "
                           b"DELETE]\n      paths: [/predict, '/v2/*']\n")
    assert defined != CHAT
    folder = await env.folder_with("alice", defined)
    checked = await env.ok("POST", "endpoints/validate", "alice", 200,
                           env.body(model_folder=folder))
    assert checked["definition"]["models"][0]["methods"] == ["GET", "POST", "DELETE"]
    assert checked["definition"]["models"][0]["paths"] == ["/predict", "/v2/*"]
    other = await env.ok("POST", "endpoints", "alice", 201, env.body(model_folder=folder))
    await replica(env, other, 1)
    table = await env.ok("GET", "internal/serving/routes", "internal", 200)
    rows = {e["id"]: e for e in table["endpoints"]}
    assert rows[ep["id"]]["methods"] == ["GET", "POST"]
    assert rows[other["id"]]["methods"] == ["GET", "POST", "DELETE"]
    # and where: the OpenAI routes and the probe's path, or the definition's list
    assert rows[ep["id"]]["paths"] == ["/v1/models", "/v1/chat/completions",
                                       "/v1/completions", "/v1/embeddings",
                                       rows[ep["id"]]["health"]["path"]]
    assert rows[other["id"]]["paths"] == ["/predict", "/v2/*"]
    bad = await env.folder_with("alice", CHAT.replace(
        b"      port: 8000\n", b"      port: 8000\n      methods: [GET, CONNECT]\n"))
    checked = await env.ok("POST", "endpoints/validate", "alice", 200,
                           env.body(model_folder=bad))
    assert [p["field"] for p in checked["problems"]] == [
        "model-definition.yaml:models[0].service.methods"]


def test_methods_in_a_definition_are_checked_with_their_field():
    from quota_service.serving import modeldef

    base = CHAT.decode().replace("      port: 8000\n", "      port: 8000\n      methods: {}\n")
    assert modeldef.parse(CHAT).models[0].service.methods == ("GET", "POST")
    assert modeldef.parse(base.format("null")).models[0].service.methods == ("GET", "POST")
    assert modeldef.parse(base.format("[put, Get]")).models[0].service.methods == ("PUT", "GET")
    for bad, words in [("[]", "at least one"), ("[GET, get]", "twice"), ("GET", "a list"),
                       ("[TRACE]", "is not one of"), ("[1]", "must be a string")]:
        with pytest.raises(modeldef.ModelDefinitionError) as e:
            modeldef.parse(base.format(bad))
        [p] = e.value.detail()
        assert p["field"].startswith("models[0].service.methods") and words in p["message"], p


@pytest.mark.parametrize("what", ["domain", "project", "creator", "creator-gone"])
async def test_a_deactivated_domain_project_or_creator_disables_it(env, what):  # noqa: F811
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body())
    await env.ok("PATCH", f"endpoints/{ep['id']}", "root", 200, {"public": True})
    token = await env.ok("POST", f"endpoints/{ep['id']}/tokens", "alice", 201,
                         {"expires_in_days": 30})

    async def row():
        table = await env.ok("GET", "internal/serving/routes", "internal", 200)
        [r] = [e for e in table["endpoints"] if e["id"] == ep["id"]]
        return r

    before = await row()
    assert (before["disabled"], before["public"]) == ("", True)

    def flip(active: bool) -> None:
        with env.world.tx() as s:
            project = s.scalar(sa.select(Project).where(Project.name == "ml"))
            if what == "domain":
                project.domain.active = active
            elif what == "project":
                project.active = active
            elif what == "creator":
                s.scalar(sa.select(User).where(User.name == "alice")).active = active
            else:  # the endpoint names a creator who is no user
                s.get(Endpoint, ep["id"]).created_by = "alice" if active else "nobody-now"

    flip(False)
    try:
        after = await row()
        words = {"domain": "domain 'acme' is deactivated",
                 "project": "project 'ml' is deactivated",
                 "creator": "creator 'alice' is deactivated",
                 "creator-gone": "creator 'nobody-now' is no longer a user"}[what]
        assert words in after["disabled"], after["disabled"]
        assert after["public"] is False  # the gateway refuses it whatever it reads
        # its tokens stay listed: the gateway tells their holder why it refuses
        assert [t["id"] for t in after["tokens"]] == [token["id"]]
    finally:
        flip(True)
    assert (await row())["disabled"] == ""
