"""``hubgrid serve store`` (labextension/jupyterlab_hubgrid/cli/servestore.py)
against the real service with keypairs: the published models a user sees
with their cards, a deploy checked first (``--check`` alone writes nothing;
a problem refuses it with every problem, exit 1), deployed as an endpoint
of the user over the published folder; unknown models (exit 2).

The world (tests/test_model_store.py ``env``): group ``infer`` granted to
acme, the inference image, ada's folder with the echo-chat definition,
which root publishes to every domain; alice is in acme/ml, gina in globex.
"""

from __future__ import annotations

import re

import pytest

from quota_service.core.servingmodels import Endpoint
from service_app import served  # noqa: F401
from test_cli import Hubgrid, one_line_error
from test_model_store import env  # noqa: F401


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    return sqlite_db_url


@pytest.fixture
async def hg(env):  # noqa: F811
    run = Hubgrid(env.served)
    run.env_ = env
    run.entry = await env.publish("root", name="echo")
    return run


async def test_store_list_and_show_have_the_cards_a_user_sees(hg):
    r = await hg("alice", "serve", "store", "list")
    assert r.code == 0, r.err
    header, row = r.rows()
    assert header == ["NAME", "TITLE", "TASK", "ONE REPLICA", "IMAGE", "FOR", "ID"]
    assert row == ["echo", "Echo chat (stand-in)", "text-generation", "cpu 0.5, mem 256 MiB",
                   "hubgrid/inference:latest", "every domain", hg.entry["id"][:8]]
    j = await hg("gina", "serve", "store", "ls", "--json")
    assert [m["id"] for m in j.json()] == [hg.entry["id"]]
    assert j.json()[0]["slots"] == {"cpu": "0.5", "mem": str(256 << 20)}  # exact strings
    card = await hg("alice", "serve", "store", "show", "echo")
    assert re.search(r"title\s+Echo chat \(stand-in\)", card.out)
    assert re.search(r"labels\s+chat, stand-in, cpu", card.out)
    assert re.search(r"folder\s+\S+ \(available\)", card.out)
    assert card.out.rstrip().endswith("Answers with the prompt; for tests and demos without "
                                      "a GPU.")
    r = await hg("alice", "serve", "store", "show", "nope")
    assert r.code == 2 and "no published model 'nope' you may see" in one_line_error(r)


async def test_deploy_is_checked_first_then_makes_an_endpoint_of_mine(hg):
    env = hg.env_
    r = await hg("alice", "serve", "store", "deploy", "echo", "-g", "infer", "--check")
    assert r.code == 0, r.err
    assert r.out.startswith("ok: echo can be deployed as endpoint ")
    assert env.world.count(Endpoint) == 0  # a check writes nothing

    r = await hg("alice", "serve", "store", "deploy", hg.entry["id"][:6], "-g", "infer",
                 "--name", "mychat", "--replicas", "2")
    assert r.code == 0, r.err
    assert r.out.startswith("created endpoint mychat (")
    assert "in ml: 2 replica(s) of hubgrid/inference:latest, provisioning" in r.out
    assert "/services/hubgrid-gateway/v1 (model mychat)" in r.out
    e = (await hg("alice", "serve", "show", "mychat", "--json")).json()
    assert e["created_by"] == "alice" and e["slots"] == {"cpu": "0.5", "mem": str(256 << 20)}
    assert e["model_folder"]["id"] == env.folder  # the published folder itself, no clone

    # a problem refuses the deploy: every problem said, nothing made
    r = await hg("alice", "serve", "store", "deploy", "echo", "-g", "infer", "--name",
                 "mychat")
    assert r.code == 1 and r.out == ""
    assert r.err.startswith("echo was not deployed:\n  problem: name: project 'ml' has an "
                            "endpoint named 'mychat'")
    j = await hg("alice", "serve", "store", "deploy", "echo", "-g", "nowhere", "--json")
    assert j.code == 1 and j.json()["deployed"] is False
    assert "resource_group" in [p["field"] for p in j.json()["check"]["problems"]]
    assert env.world.count(Endpoint) == 1
    r = await hg("alice", "serve", "store", "deploy", "echo", "-g", "infer", "-r", "-1")
    assert r.code == 2 and "--replicas" in one_line_error(r)
    # a project that is not hers: the service's refusal
    r = await hg("alice", "serve", "store", "deploy", "echo", "-g", "infer", "-p", "lab")
    assert r.code == 1 and "(HTTP 40" in one_line_error(r)
