"""The ``hubgrid`` command through the real hub (tests/hub_fixtures.py: the
demo's jupyterhub_config.py, configurable-http-proxy, the service, local
sessions): starting, following, listing and stopping sessions, which go
through JupyterHub's REST API, and the command run inside a session with
nothing but the session's own environment.

The world (``build_world``): alice in acme/ml; the resource group acme-gpu
(1000 cpu, four declared A100s). Calls run with a hub token of the user and
``HUBGRID_API_URL`` through the proxy (the hub's API is found next to it).
"""

from __future__ import annotations

import io
import json
import uuid
from decimal import Decimal

import psutil

from hub_fixtures import _ok, sqlite_hub, world  # noqa: F401
from session_fixtures import eventually, hub_log, server_of

from jupyterlab_hubgrid.cli import main


def hubgrid(env: dict, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), env=env, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def as_user(world, user: str) -> dict:  # noqa: F811
    return {"HUBGRID_API_URL": world.hub.api, "JUPYTERHUB_API_TOKEN": world.hub.token(user)}


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def session_env(user: str, server: str) -> dict:
    """The environment of the running session process of ``user``/``server``."""
    for proc in psutil.process_iter(["environ"]):
        env = proc.info.get("environ") or {}
        if env.get("JUPYTERHUB_USER") == user and env.get("JUPYTERHUB_SERVER_NAME") == server:
            return env
    return {}


def ensure_stopped(world, user: str, server: str) -> None:  # noqa: F811
    hub = world.hub
    if server_of(hub, user, server) is not None:
        hub.hub_call("DELETE", f"users/{user}/servers/{server}", user=user)
        assert eventually(lambda: server_of(hub, user, server) is None, timeout=60), hub_log(hub)


def active(world, user: str, server: str) -> list[dict]:  # noqa: F811
    code, out, err = hubgrid(as_user(world, user), "sessions", "ls", "--json")
    assert code == 0, err
    return [a for a in json.loads(out) if a["server_name"] == server]


def test_start_wait_list_and_stop_a_session_and_use_the_command_inside_it(world):  # noqa: F811
    env, name, inner = as_user(world, "alice"), uniq("cli"), uniq("in")
    try:
        code, out, err = hubgrid(env, "sessions", "start", name, "-p", "ml", "-g", "acme-gpu",
                                 "--gpu-shares", "0.5", "--mem", "256M", "--wait")
        assert code == 0, f"{err}\n{hub_log(world.hub)}"
        [a] = active(world, "alice", name)
        assert out == f"session {name} ({a['id'][:8]}): running at /user/alice/{name}/\n"
        assert err.splitlines()[-1] == f"[100%] Server ready at /user/alice/{name}/", err
        assert (a["state"], a["slots"]["gpu.shares"], a["origin"]) == ("allocated", "0.5", "hub")

        code, out, err = hubgrid(env, "quota", "--json")
        user = next(lv for lv in json.loads(out)["levels"] if lv["level"] == "user")
        shares = next(s for s in user["slots"] if s["slot"] == "gpu.shares")
        assert Decimal(shares["used"]) >= Decimal("0.5")

        # inside the session: nothing to set up, it is the session's owner
        inside = {k: v for k, v in session_env("alice", name).items()
                  if k in ("HUBGRID_API_URL", "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL")}
        assert set(inside) == {"HUBGRID_API_URL", "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL"}
        code, out, err = hubgrid(inside, "me", "--json")
        assert code == 0, err
        assert (json.loads(out)["name"], json.loads(out)["credential"]) == ("alice", "token")
        code, out, err = hubgrid(inside, "sessions", "ls", "--json")
        assert code == 0 and [x["id"] for x in json.loads(out)
                              if x["server_name"] == name] == [a["id"]], err
        # a running session's output (its Jupyter server's log), by name, id or the
        # start of it, from outside and from inside (it must not print nothing)
        for who in (env, inside):
            for ref in (name, a["id"], a["id"][:8]):
                assert eventually(lambda: "Jupyter" in hubgrid(who, "sessions", "logs", ref)[1],
                                  timeout=60), hubgrid(who, "sessions", "logs", ref)
        # and it starts and stops its owner's other sessions: the session's own
        # token holds servers!user (hub_ext.config's server_token_scopes)
        code, out, err = hubgrid(inside, "sessions", "start", inner, "-g", "acme-gpu",
                                 "--mem", "256M", "--wait")
        assert code == 0, f"{err}\n{hub_log(world.hub)}"
        assert out.startswith(f"session {inner} (") and "running at" in out, out
        code, out, err = hubgrid(inside, "sessions", "stop", inner)
        assert code == 0, err
        assert eventually(lambda: server_of(world.hub, "alice", inner) is None, timeout=60)

        code, out, err = hubgrid(env, "sessions", "stop", name)
        assert code == 0, err
        assert out in (f"session {name} ({a['id'][:8]}): stopped\n",
                       f"session {name} ({a['id'][:8]}): stopping\n")
        assert eventually(lambda: server_of(world.hub, "alice", name) is None, timeout=60)
        assert eventually(lambda: active(world, "alice", name) == [], timeout=60)
    finally:
        ensure_stopped(world, "alice", inner)
        ensure_stopped(world, "alice", name)


def test_a_start_the_service_refuses_exits_1_with_the_reason(world):  # noqa: F811
    env, name = as_user(world, "alice"), uniq("bad")
    try:
        code, out, err = hubgrid(env, "sessions", "start", name, "-p", "nope", "-g", "acme-gpu",
                                 "--mem", "256M", "--wait")
        # the hub answers with the service's reason (its SpawnException)
        assert (code, out, err) == (1, "", "hubgrid: project acme/nope not found (HTTP 403)\n")
        assert active(world, "alice", name) == []
    finally:
        ensure_stopped(world, "alice", name)


def test_a_start_that_must_wait_says_why_and_stop_cancels_it(world):  # noqa: F811
    hub, env = world.hub, as_user(world, "alice")
    group = uniq("tiny")
    _ok(hub.call("POST", "resource-groups", "admin", json={"name": group}), 201)
    _ok(hub.call("PUT", f"resource-groups/{group}/grants", "admin", json={"domain": "acme"}), 201)
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": f"{group}-1", "resource_group": group, "capacity": {"cpu": "1", "mem": "64G"}}),
        201)
    first, second = uniq("one"), uniq("two")
    try:
        code, out, err = hubgrid(env, "sessions", "start", first, "-g", group, "--mem", "256M",
                                 "--wait")
        assert code == 0, f"{err}\n{hub_log(hub)}"
        code, out, err = hubgrid(env, "sessions", "dry-run", "-g", group, "--mem", "256M")
        assert code == 1 and out.startswith("would wait in the queue:\n  resource group"), out
        code, out, err = hubgrid(env, "sessions", "start", second, "-g", group, "--mem", "256M")
        assert code == 0, err
        [waiting] = eventually(lambda: active(world, "alice", second), timeout=30)
        assert waiting["state"] == "pending" and waiting["reasons"], waiting
        code, out, err = hubgrid(env, "sessions", "ls")
        row = next(line for line in out.splitlines() if line.startswith(waiting["id"][:8]))
        assert "  waiting  " in row and waiting["reasons"][0]["text"] in row

        code, out, err = hubgrid(env, "sessions", "stop", second)
        assert code == 0, err
        assert eventually(lambda: active(world, "alice", second) == [], timeout=60)
        code, out, err = hubgrid(env, "sessions", "ls", "--all", "--json")
        ended = [a for a in json.loads(out) if a["id"] == waiting["id"]]
        assert ended[0]["state"] == "cancelled" and ended[0]["admitted_at"] is None
    finally:
        ensure_stopped(world, "alice", second)
        ensure_stopped(world, "alice", first)


def test_a_token_that_may_not_start_servers_is_refused_with_a_hint(world):  # noqa: F811
    hub = world.hub
    r = hub.hub_call("POST", "users/alice/tokens", user="alice", json={
        "note": "hubgrid only", "scopes": ["access:services!service=hubgrid"]})
    assert r.status_code == 201, r.text
    env = {"HUBGRID_API_URL": hub.api, "JUPYTERHUB_API_TOKEN": r.json()["token"]}
    code, out, err = hubgrid(env, "me", "--json")
    assert code == 0 and json.loads(out)["name"] == "alice", err
    code, out, err = hubgrid(env, "sessions", "start", uniq("no"), "-g", "acme-gpu")
    assert code == 1 and out == "", err
    assert err.startswith("hubgrid: Action is not authorized with current scopes"), err
    assert "server_token_scopes to include servers!user" in err and err.count("\n") == 1
