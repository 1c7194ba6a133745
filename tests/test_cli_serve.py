"""``hubgrid serve`` (labextension/jupyterlab_hubgrid/cli/serve.py) against
the real service (tests/service_app.py) with keypairs, as tests/test_cli.py
runs the command: list, show (state, health, replicas with node and
health, the gateway's URLs and model, rules, scaling events), validate and
create (validated first), scale, autoscale, delete (waiting for it to be
gone, or not), tokens (the secret alone with --quiet); each with its
refusals: an unknown endpoint (exit 2), the service's 403 with its reason
and 422s (exit 1), bad slots and arguments (exit 2).

The world (tests/test_endpoints.py ``env``): resource group ``infer`` (one
node ``infer-1``) granted to acme, the inference image registered, alice's
model folder with the echo-chat definition; alice is in acme/ml.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest
import sqlalchemy as sa

from quota_service.core.servingmodels import Endpoint, EndpointToken
from service_app import served  # noqa: F401
from test_cli import Hubgrid, one_line_error, write_log
from test_endpoints import IMAGE, INFERENCE_LABEL, env  # noqa: F401
from test_serving_routes import replica, report_calls, serve


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """SQLite only: the command does not depend on the service's database."""
    return sqlite_db_url


@pytest.fixture
def hg(env):  # noqa: F811
    run = Hubgrid(env.served)
    run.env_ = env
    return run


def create_args(env, name, *more):  # noqa: F811
    return ("serve", "create", name, env.folder, "-g", "infer", "--cpu", "1", "--mem", "1G",
            *more)


async def made(hg, name: str, *more) -> dict:
    r = await hg("alice", *create_args(hg.env_, name, *more), "--json")
    assert r.code == 0, r.err
    return r.json()


# --- create, list, show ------------------------------------------------------------

async def test_create_validates_then_makes_it_and_list_and_show_have_it(hg):
    ok = await hg("alice", "serve", "validate", *create_args(hg.env_, "emb")[2:])
    assert ok.code == 0, ok.err
    assert ok.out.startswith("ok: the endpoint can be made") and "model echo-chat" in ok.out
    assert hg.env_.count(Endpoint) == 0  # validate writes nothing

    r = await hg("alice", *create_args(hg.env_, "emb", "--replicas", "2"))
    assert r.code == 0, r.err
    [e] = (await hg("alice", "serve", "list", "--json")).json()
    gateway = hg.served.api.split("/services/")[0] + "/services/hubgrid-gateway/"
    assert f"created endpoint emb ({e['id']}) in ml: 2 replica(s) of {IMAGE}" in r.out
    assert f"URL: {gateway}e/{e['id']}/" in r.out
    assert f"OpenAI base URL: {gateway}v1 (model emb)" in r.out
    # the image defaulted to the only inference image; the folder went by id
    assert (e["image"], e["model_folder"]["id"]) == (IMAGE, hg.env_.folder)
    assert e["slots"] == {"cpu": "1", "mem": str(1 << 30)} and e["health"]["status"] == "unknown"

    table = await hg("alice", "serve", "list")
    header, row = table.rows()[:2]
    assert header == ["NAME", "PROJECT", "GROUP", "STATE", "HEALTH", "REPLICAS", "MODEL FOLDER",
                      "IMAGE", "ID"]
    assert row[:6] == ["emb", "ml", "infer", "provisioning", "unknown", "0/2"]
    assert row[-1] == e["id"][:8]

    shown = await hg("alice", "serve", "show", "emb")
    assert shown.code == 0, shown.err
    kv = {k.strip(): v.strip() for k, v in (re.split(r"\s{2,}", line.strip(), maxsplit=1)
                                            for line in shown.out.split("\n\n")[0].splitlines())}
    assert kv["state"] == "provisioning" and kv["health"] == "unknown"
    assert kv["one replica"] == "cpu 1, mem 1 GiB"
    assert kv["replicas"] == "0 serving of 2 wanted"
    assert kv["URL"] == f"{gateway}e/{e['id']}/" and kv["model"] == "emb"
    assert "no replicas" in shown.out and "no autoscaling rules" in shown.out
    # by project/name, by the start of the id, by the id; --json keeps the API's answer
    for ref in ("ml/emb", "acme/ml/emb", e["id"][:6], e["id"]):
        j = await hg("alice", "serve", "show", ref, "--json")
        assert j.code == 0 and j.json()["id"] == e["id"], (ref, j.err)
        assert j.json()["gateway"]["openai_base_url"] == f"{gateway}v1"
    # HUBGRID_GATEWAY_URL names the gateway where it is not next to the API
    env = hg.env("alice") | {"HUBGRID_GATEWAY_URL": "https://gw.example.org/x"}
    j = await hg(None, "serve", "show", "emb", "--json", env=env)
    assert j.json()["gateway"]["url"] == f"https://gw.example.org/x/e/{e['id']}/"


async def test_a_create_with_problems_says_them_all_and_makes_nothing(hg):
    await made(hg, "taken")
    r = await hg("alice", *create_args(hg.env_, "taken", "--image", "nope:1", "--replicas",
                                       "9"))
    assert r.code == 1 and r.out == ""
    assert r.err.startswith("endpoint taken was not made:\n")
    assert "  problem: name: project 'ml' has an endpoint named 'taken'" in r.err
    assert "  problem: image: " in r.err
    assert hg.env_.count(Endpoint) == 1
    j = await hg("alice", *create_args(hg.env_, "taken"), "--json")
    assert j.code == 1 and j.json()["created"] is False
    assert [p["field"] for p in j.json()["validation"]["problems"]] == ["name"]
    v = await hg("alice", "serve", "validate", *create_args(hg.env_, "taken")[2:])
    assert v.code == 1 and v.out.startswith("the endpoint cannot be made:\n  problem: name:")
    # warnings do not refuse: 5 replicas of 1 CPU on a node of 4 wait in the queue
    w = await hg("alice", *create_args(hg.env_, "wide", "--replicas", "5"))
    assert w.code == 0, w.err
    assert "warning: slots.cpu: 5 x 1 = 5: resource group infer has 4 in all" in w.err


async def test_bad_slots_and_arguments_are_refused_before_or_by_the_service(hg):
    # a fraction of a byte: refused before anything is sent
    r = await hg("alice", *create_args(hg.env_, "x")[:-2], "--mem", "1.5B")
    assert r.code == 2 and "--mem" in one_line_error(r)
    # a CPU amount the service refuses: its 422, on one line
    r = await hg("alice", "serve", "create", "x", hg.env_.folder, "-g", "infer", "--cpu", "abc")
    assert r.code == 1 and "(HTTP 422)" in one_line_error(r) and "cpu" in r.err
    r = await hg("alice", *create_args(hg.env_, "x", "--replicas", "-1"))
    assert r.code == 2 and "--replicas" in one_line_error(r)
    r = await hg("alice", *create_args(hg.env_, "x", "--gpu", "1", "--gpu-shares", "0.5"))
    assert r.code == 2 and "not allowed with" in one_line_error(r)
    r = await hg("alice", "serve", "create", "x", "no-such-folder", "-g", "infer")
    assert r.code == 2 and "no folder of yours with the name or id 'no-such-folder'" in r.err
    assert hg.env_.count(Endpoint) == 0


async def test_the_image_must_be_named_where_several_run_inference(hg):
    await hg.env_.ok("POST", "images", "root", 201, {"name": "other/infer:2",
                                                     "labels": INFERENCE_LABEL})
    r = await hg("alice", "serve", "validate", *create_args(hg.env_, "x")[2:])
    assert r.code == 2 and "several images run inference replicas" in one_line_error(r)
    assert (await hg("alice", "serve", "validate", *create_args(hg.env_, "x")[2:],
                     "-i", IMAGE)).code == 0
    for name in ("other%2Finfer:2", IMAGE.replace("/", "%2F")):
        await hg.env_.ok("DELETE", f"images/{name}", "root", 204)
    r = await hg("alice", "serve", "validate", *create_args(hg.env_, "x")[2:])
    assert r.code == 2 and "no image that runs inference replicas is registered for you" \
        in one_line_error(r)


async def test_an_endpoint_nobody_may_see_is_unknown(hg):
    await made(hg, "mine")
    for user, ref in (("gina", "mine"), ("alice", "nothere"), ("alice", "ml/nothere")):
        r = await hg(user, "serve", "show", ref)
        assert r.code == 2, (user, ref)
        assert f"no endpoint you see with the name or id {ref!r}" in one_line_error(r)
    # a full id goes to the service: its 404
    r = await hg("gina", "serve", "show", "0" * 32)
    assert r.code == 1 and "not found (HTTP 404)" in one_line_error(r)
    r = await hg("gina", "serve", "list")
    assert r.code == 0 and r.out.startswith("no endpoints")


async def test_a_name_in_two_projects_asks_for_the_project(hg):
    env = hg.env_
    await env.ok("POST", "domains/acme/projects", "root", 201, {"name": "ml2"})
    await env.ok("PUT", "domains/acme/projects/ml2/members/alice", "root", 201)
    await made(hg, "twin")
    await made(hg, "twin", "-p", "ml2")
    r = await hg("alice", "serve", "show", "twin")
    assert r.code == 2 and "'twin' names several endpoints: ml/twin" in one_line_error(r)
    assert (await hg("alice", "serve", "show", "ml2/twin", "--json")).json()["project"] == "ml2"
    assert [e["project"] for e in (await hg("alice", "serve", "list", "-p", "ml2",
                                            "--json")).json()] == ["ml2"]


# --- health, replicas, scale, autoscale ----------------------------------------------

async def test_show_has_each_replica_with_its_node_and_the_gateways_health(hg):
    env = hg.env_
    e = await made(hg, "two", "--replicas", "2")
    r1, _r2 = await replica(env, e, 1), await replica(env, e, 2)
    await env.ok("POST", "internal/serving/report", "internal", 204, {"replicas": [
        {"endpoint": e["id"], "name": "ep-two-1", "up": True, "status": "UP", "check": "L7OK"},
        {"endpoint": e["id"], "name": "ep-two-2", "up": False, "status": "DOWN",
         "check": "L4CON", "detail": "Connection refused"}],
        "calls": [{"endpoint": e["id"], "code": "2xx", "calls": 7, "seconds": 0.5}]})
    shown = await hg("alice", "serve", "show", "two")
    assert re.search(r"health\s+degraded, reachable \(1 of 2 up\)", shown.out), shown.out
    assert re.search(r"calls\s+2xx 7", shown.out)
    rows = {row[0]: row for row in shown.rows() if row[0].startswith("ep-two-")}
    assert rows["ep-two-1"][1:5] == ["starting", "infer-1", "up", "L7OK"]
    assert rows["ep-two-2"][1:5] == ["starting", "infer-1", "down", "L4CON Connection refused"]
    assert r1["node"] == "infer-1"
    listed = (await hg("alice", "serve", "list")).rows()
    assert listed[1][3:6] == ["provisioning", "degraded", "0/2"]


async def test_scale_by_its_creator_and_the_services_403_for_another_member(hg):
    env = hg.env_
    await made(hg, "sc")
    r = await hg("alice", "serve", "scale", "sc", "3")
    assert r.code == 0, r.err
    assert r.out == "endpoint sc: 3 replica(s) wanted, 0 serving (provisioning)\n"
    assert (await hg("alice", "serve", "scale", "sc", "0", "--json")).json()["replicas"] == 0
    await env.ok("PUT", "domains/acme/projects/ml/members/bob", "root", 201)
    r = await hg("bob", "serve", "scale", "sc", "2")
    assert r.code == 1
    assert ("only the endpoint's creator (alice) or an admin of domain 'acme' may change or "
            "delete it (HTTP 403)") in one_line_error(r)
    r = await hg("alice", "serve", "scale", "sc", "-1")
    assert r.code == 2 and "0 or more" in one_line_error(r)
    r = await hg("alice", "serve", "scale", "sc", "99")
    assert r.code == 1 and "(HTTP 422)" in one_line_error(r)


async def test_autoscale_sets_adds_shows_and_removes_rules_and_show_has_the_events(hg):
    env = hg.env_
    e = await made(hg, "auto", "--replicas", "2")
    none = await hg("alice", "serve", "autoscale", "auto")
    assert none.out == "endpoint auto has no autoscaling rules\n"
    r = await hg("alice", "serve", "autoscale", "auto", "--metric", "in_flight", "--threshold",
                 "2", "--step", "-1", "--cooldown", "3600", "--min", "0", "--max", "3")
    assert r.code == 0, r.err
    assert r.out == ("endpoint auto: 1 autoscaling rule(s)\n"
                     "rule 0: in_flight < 2: -1 (0..3, cooldown 3600 s)\n")
    r = await hg("alice", "serve", "autoscale", "auto", "--add", "--metric",
                 "requests_per_second", "--threshold", "5.5", "--step", "2", "--json")
    rules = r.json()["autoscaling"]
    assert [(x["comparator"], x["threshold"], x["step"]) for x in rules] == [
        ("lt", "2", -1), ("gt", "5.5", 2)]
    assert rules[1]["cooldown"] == 300 and rules[1]["max_replicas"] == 4  # the service's
    shown = await hg("alice", "serve", "autoscale", "auto")
    assert shown.out.splitlines() == ["rule 0: in_flight < 2: -1 (0..3, cooldown 3600 s)",
                                      "rule 1: requests_per_second > 5.5: +2 (1..4, "
                                      "cooldown 300 s)"]
    # the gateway's measures: 1 in flight per replica < 2 scales in, then the cooldown holds
    await report_calls(env, e["id"], 0)
    await report_calls(env, e["id"], 0)
    full = await hg("alice", "serve", "show", "auto")
    events = [row for row in full.rows() if row[1:2] == ["0"] and len(row) == 5]
    assert [row[2:4] for row in events] == [["scaled", "2 -> 1"], ["cooldown", "1 -> 1"]]
    assert re.search(r"in_flight < 2\s+-1\s+0\s+3\s+3600 s", full.out)

    for bad, words in ((["--threshold", "1e9"], "threshold"), (["--max", "99"], "max_replicas")):
        r = await hg("alice", "serve", "autoscale", "auto", "--metric", "in_flight",
                     "--step", "1", *(["--threshold", "3"] if "--threshold" not in bad else []),
                     *bad)
        assert r.code == 1 and "(HTTP 422)" in one_line_error(r) and words in r.err, r.err
    r = await hg("alice", "serve", "autoscale", "auto", "--metric", "in_flight")
    assert r.code == 2 and "a rule needs --threshold, --step" in one_line_error(r)
    r = await hg("alice", "serve", "autoscale", "auto", "--metric", "in_flight",
                 "--threshold", "1", "--step", "0")
    assert r.code == 2 and "--step: the replicas to add (positive) or remove (negative), not 0" \
        in one_line_error(r)
    r = await hg("alice", "serve", "autoscale", "auto", "--off", "--step", "1")
    assert r.code == 2 and "--off removes every rule" in one_line_error(r)
    r = await hg("alice", "serve", "autoscale", "auto", "--metric", "cpu")
    assert r.code == 2 and "invalid choice: 'cpu'" in one_line_error(r)
    off = await hg("alice", "serve", "autoscale", "auto", "--off")
    assert off.out == "endpoint auto: autoscaling off\n"
    assert (await env.ok("GET", f"endpoints/{e['id']}", "alice", 200))["autoscaling"] == []


async def test_logs_of_a_replica_for_its_creator_not_for_another_member(hg):
    env = hg.env_
    e = await made(hg, "lg", "--replicas", "2")
    r = await hg("alice", "serve", "logs", "lg")
    assert r.code == 2 and "endpoint 'lg' has no replica now" in one_line_error(r)
    r1, r2 = await replica(env, e, 1), await replica(env, e, 2)
    await write_log(hg, r1["id"], b"hubgrid: pre-start: hello\n\x1b[2Jserving\n")
    await write_log(hg, r2["id"], b"second\n")
    first = await hg("alice", "serve", "logs", "lg")
    assert first.code == 0, first.err
    # the first by default, control characters shown escaped (--raw: as they are)
    assert first.out == "hubgrid: pre-start: hello\n\\x1b[2Jserving\n"
    assert first.err == "hubgrid: the log of ep-lg-1 (replicas: ep-lg-1, ep-lg-2)\n"
    for ref in ("2", "ep-lg-2"):
        assert (await hg("alice", "serve", "logs", "lg", ref)).out == "second\n"
    raw = await hg("alice", "serve", "logs", "lg", "1", "--raw", "--tail", "8")
    assert raw.out == "serving\n"
    j = await hg("alice", "serve", "logs", "lg", "2", "--json")
    assert j.json()["log"] == "second\n" and j.json()["id"] == r2["id"]
    r = await hg("alice", "serve", "logs", "lg", "3")
    assert r.code == 2 and "no replica '3' (its replicas: ep-lg-1, ep-lg-2)" in one_line_error(r)
    r = await hg("alice", "serve", "logs", "lg", "-f", "--json")
    assert r.code == 2 and "--follow" in one_line_error(r)
    # another member sees the endpoint, not its creator's sessions: the service's 404
    await env.ok("PUT", "domains/acme/projects/ml/members/bob", "root", 201)
    r = await hg("bob", "serve", "logs", "lg", "1")
    assert r.code == 1 and one_line_error(r).endswith(
        "replica ep-lg-1 is a session of the endpoint's creator (alice); its log is theirs "
        "and their admins' to read (HTTP 404)\n")


# --- delete ----------------------------------------------------------------------------

async def test_delete_of_an_endpoint_that_never_ran_is_done_at_once(hg):
    e = await made(hg, "gone")
    r = await hg("alice", "serve", "delete", "gone")
    assert r.code == 0, r.err
    assert r.out == f"endpoint gone ({e['id'][:8]}): deleted\n"
    assert hg.env_.count(Endpoint) == 0
    r = await hg("alice", "serve", "delete", "gone")
    assert r.code == 2 and "no endpoint you see" in one_line_error(r)


async def test_delete_waits_while_terminating_unless_told_not_to(hg):
    env = hg.env_
    e = await made(hg, "term")
    await replica(env, e, 1)  # a replica ran: the delete leaves it terminating
    # --no-wait: back once it is terminating
    r = await hg("alice", "serve", "delete", "term", "--no-wait", "--json")
    assert r.code == 0 and r.json() == {"id": e["id"], "name": "term", "state": "terminating",
                                        "deleted": False}
    # waiting gives up after --timeout with exit 1 and says where it is
    r = await hg("alice", "serve", "delete", e["id"], "--timeout", "0.3", "--interval", "0.1")
    assert r.code == 1
    assert r.out.startswith("endpoint term is still terminating after 0.3 s")
    assert "endpoint term: terminating (0 replica(s) serving)" in r.err

    # the controller removes the row once its replicas stopped (here: the test
    # does, once the command's DELETE is in the access log)
    asked = len(env.audit("endpoint.delete"))

    async def controller():
        while len(env.audit("endpoint.delete")) == asked:
            await asyncio.sleep(0.05)
        with env.world.tx() as s:
            s.execute(sa.delete(EndpointToken).where(EndpointToken.endpoint_id == e["id"]))
            s.execute(sa.delete(Endpoint).where(Endpoint.id == e["id"]))

    waited, _ = await asyncio.gather(
        hg("alice", "serve", "delete", e["id"], "--interval", "0.1"), controller())
    assert waited.code == 0, waited.err
    # (whether it polled while terminating depends on when the row went: its
    # progress line is checked above, where the wait gives up)
    assert waited.out == f"endpoint term ({e['id'][:8]}): deleted\n"


async def test_delete_refused_to_another_member_with_the_services_reason(hg):
    env = hg.env_
    await made(hg, "keep")
    await env.ok("PUT", "domains/acme/projects/ml/members/bob", "root", 201)
    r = await hg("bob", "serve", "delete", "keep")
    assert r.code == 1 and "only the endpoint's creator (alice)" in one_line_error(r)
    assert env.count(Endpoint) == 1


# --- tokens ------------------------------------------------------------------------------

async def test_tokens_made_shown_once_listed_without_secret_and_revoked(hg):
    env = hg.env_
    e = await made(hg, "tok")
    quiet = await hg("alice", "serve", "token", "create", "tok", "--quiet")
    assert quiet.code == 0 and quiet.err == ""
    assert re.fullmatch(r"hge_\S+\n", quiet.out), quiet.out  # the secret alone, for $(...)
    secret = quiet.out.strip()
    loud = await hg("alice", "serve", "token", "create", "tok", "--days", "7")
    assert loud.code == 0, loud.err
    lines = loud.out.splitlines()
    assert lines[0].startswith("token ") and " for endpoint tok, expires " in lines[0]
    assert lines[1].startswith("hge_") and "shown this once" in lines[2]
    j = await hg("alice", "serve", "tokens", "create", "tok", "--json")
    assert j.json()["token"].startswith("hge_") and j.json()["state"] == "active"

    listed = await hg("alice", "serve", "token", "list", "tok")
    assert listed.rows()[0] == ["ID", "STATE", "CREATED BY", "CREATED", "EXPIRES", "REVOKED"]
    assert [row[1] for row in listed.rows()[1:]] == ["active"] * 3
    assert "hge_" not in listed.out and secret not in listed.out
    tokens = (await hg("alice", "serve", "token", "list", "tok", "--json")).json()
    first = next(t for t in tokens if t["id"] != j.json()["id"])
    r = await hg("alice", "serve", "token", "revoke", "tok", first["id"][:6])
    assert r.code == 0 and r.out == f"revoked token {first['id'][:8]} of endpoint tok\n"
    states = {t["id"]: t["state"] for t in await env.ok(
        "GET", f"endpoints/{e['id']}/tokens", "alice", 200)}
    assert states[first["id"]] == "revoked" and list(states.values()).count("active") == 2

    r = await hg("alice", "serve", "token", "revoke", "tok", "ffff")
    assert r.code == 2 and "endpoint 'tok' has no token 'ffff'" in one_line_error(r)
    r = await hg("alice", "serve", "token", "create", "tok", "--days", "0")
    assert r.code == 2 and "1 day or more" in one_line_error(r)
    r = await hg("alice", "serve", "token", "create", "tok", "--days", "1000")
    assert r.code == 1 and "(HTTP 422)" in one_line_error(r)
    r = await hg("alice", "serve", "token", "create", "tok", "--quiet", "--json")
    assert r.code == 2 and "--quiet" in one_line_error(r)
    r = await hg("gina", "serve", "token", "create", "tok", "--quiet")
    assert r.code == 2 and r.out == ""


async def test_json_output_parses_with_exact_amounts(hg):
    await made(hg, "exact", "--cpu", "0.3")
    r = await hg("alice", "serve", "show", "exact", "--json")
    data = json.loads(r.out)  # strings, never floats
    assert data["slots"]["cpu"] == "0.3"
    assert re.search(r"one replica\s+cpu 0.3, mem 1 GiB",
                     (await hg("alice", "serve", "show", "exact")).out)


async def test_call_needs_a_credential_and_a_gateway_that_answers(hg):
    await made(hg, "cl")
    r = await hg("alice", "serve", "call", "cl", "hello")  # a keypair opens no endpoint
    assert r.code == 2 and "no credential for the gateway: --token" in one_line_error(r)
    env = hg.env("alice") | {"HUBGRID_GATEWAY_URL": "http://127.0.0.1:9/",
                             "HUBGRID_ENDPOINT_TOKEN": "hge_x"}
    r = await hg(None, "serve", "call", "cl", "--embed", "hello", "there", env=env)
    assert r.code == 3 and "cannot reach the gateway at http://127.0.0.1:9/" in one_line_error(r)
    r = await hg("alice", "serve", "call", "cl", "hello", "--stream", "--json")
    assert r.code == 2 and "--stream" in one_line_error(r)
    r = await hg("alice", "serve", "call", "cl", "--token", "hge_x")
    assert r.code == 2 and "the following arguments are required: TEXT" in one_line_error(r)


async def test_wait_follows_the_endpoint_until_it_serves_fails_or_time_is_up(hg):
    env = hg.env_
    # nothing asked for: done at once
    await made(hg, "w0", "--replicas", "0")
    r = await hg("alice", "serve", "scale", "w0", "0", "--wait")
    assert (r.code, r.out.splitlines()[-1]) == (0, "endpoint w0: provisioning, 0 of 0 "
                                                   "replica(s) serving")
    # time is up: exit 1, saying where it is
    r = await hg("alice", *create_args(env, "wt", "--wait", "--timeout", "0.3", "--interval",
                                       "0.1"))
    assert r.code == 1 and r.out.startswith("created endpoint wt (")
    assert r.out.splitlines()[-1] == ("endpoint wt: provisioning, 0 of 1 replica(s) serving "
                                      "after 0.3 s: still waiting ('hubgrid serve show' says why)")
    assert "endpoint wt: provisioning, 0 of 1 replica(s) serving\n" in r.err

    async def controller(name, state, reason="", serving=False):
        """What the serving controller writes, once the command made the endpoint."""
        while not (made := [x for x in await env.ok("GET", "endpoints", "alice", 200)
                            if x["name"] == name]):
            await asyncio.sleep(0.05)
        [e] = made
        if serving:
            serve(env, (await replica(env, e, 1))["id"], "unix:/tmp/x.sock")
        with env.world.tx() as s:
            row = s.get(Endpoint, e["id"])
            row.state, row.state_reason = state, reason

    failed, _ = await asyncio.gather(
        hg("alice", *create_args(env, "wf", "--wait", "--interval", "0.1")),
        controller("wf", "failed", "a replica failed to start: exited with code 1"))
    assert failed.code == 1
    assert failed.out.splitlines()[-1] == ("endpoint wf failed: a replica failed to start: "
                                           "exited with code 1")
    ok, _ = await asyncio.gather(
        hg("alice", *create_args(env, "wr", "--wait", "--interval", "0.1", "--json")),
        controller("wr", "running", serving=True))
    assert ok.code == 0, ok.err
    got = ok.json()  # one document: the endpoint as it serves, with its URLs
    assert (got["state"], got["running_replicas"]) == ("running", 1)
    assert got["gateway"]["model"] == "wr"
