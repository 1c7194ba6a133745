"""How ``hubgrid serve`` shows endpoints: the list, one endpoint in full
(state, health, replicas, the gateway's URLs, autoscaling rules and the
recent scaling events), validation problems and tokens; and which endpoint
a name on the command line means. Pure over the service's answers, except
``find_endpoint`` (it asks the service).
"""

from __future__ import annotations

import json
import re
from typing import Mapping
from urllib.parse import quote, urlsplit, urlunsplit

from ..client import format_slot
from .base import UsageError
from .output import key_values, safe, short_id, table

ENDPOINT_ID = re.compile(r"[0-9a-f]{32}")
#: the hub-managed service of the gateway (hub_ext/config.py GATEWAY_NAME)
GATEWAY_SERVICE = "hubgrid-gateway"
COMPARATORS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
#: scaling events ``show`` prints (the service keeps the last 20)
RECENT_EVENTS = 10


# --- which endpoint -------------------------------------------------------------------

def find_endpoint(ctx, ref: str) -> dict:
    """An endpoint I see by its id, the start of its id (4 or more), its
    name, or ``project/name``; with its health. A full id goes to the
    service as it is (its 404 if it is not one I see)."""
    client = ctx.client
    if ENDPOINT_ID.fullmatch(ref):
        return client.endpoint(ref)
    listed = client.endpoints()
    project, _, name = ref.rpartition("/")
    named = [e for e in listed if e.get("name") == name
             and (not project or project in (e.get("project"),
                                             f"{e.get('domain')}/{e.get('project')}"))]
    if not named and len(ref) >= 4:
        named = [e for e in listed if e["id"].startswith(ref)]
    if not named:
        raise UsageError(f"no endpoint you see with the name or id {ref!r} "
                         "(see 'hubgrid serve list')")
    if len(named) > 1:
        which = ", ".join(f"{e.get('project')}/{e.get('name')} ({short_id(e['id'])})"
                          for e in named)
        raise UsageError(f"{ref!r} names several endpoints: {which}; give project/name "
                         "or the id")
    return client.endpoint(named[0]["id"])


# --- the gateway ----------------------------------------------------------------------

def gateway_root(env: Mapping[str, str], api_url: str) -> str | None:
    """The gateway's root URL: ``HUBGRID_GATEWAY_URL``, else next to the API
    under the hub's proxy (``https://h/services/hubgrid/api/v1`` ->
    ``https://h/services/hubgrid-gateway/``)."""
    given = (env.get("HUBGRID_GATEWAY_URL") or "").strip()
    if given:
        return given.rstrip("/") + "/"
    parts = urlsplit(api_url)
    base, sep, _rest = parts.path.partition("/services/")
    if not sep:
        return None
    return urlunsplit((parts.scheme, parts.netloc, f"{base}/services/{GATEWAY_SERVICE}/", "",
                       ""))


def model_id(e: dict, listed: list[dict]) -> str:
    """The endpoint's model in the gateway's ``v1`` for a caller with its
    token (gateway/access.py): its name, or ``project/name`` where a public
    endpoint shares its name (``domain/project/name`` where that is not enough)."""
    among = [e] + [o for o in listed if o.get("public") and o["id"] != e["id"]]
    same = [o for o in among if o.get("name") == e.get("name")]
    if len(same) == 1:
        return e["name"]
    if sum(1 for o in same if o.get("project") == e.get("project")) == 1:
        return f"{e['project']}/{e['name']}"
    return f"{e['domain']}/{e['project']}/{e['name']}"


def gateway_of(e: dict, root: str | None, listed: list[dict]) -> dict:
    """The endpoint's URLs: its own (``e/<id>/``) and the OpenAI base, and the model."""
    if root is None:
        return {"url": None, "openai_base_url": None, "model": model_id(e, listed)}
    return {"url": f"{root}e/{quote(e['id'], safe='')}/", "openai_base_url": f"{root}v1",
            "model": model_id(e, listed)}


def openai_snippet(base_url: str, model: str) -> str:
    """Python that calls the endpoint with the openai client from where this
    command runs (``base_url``: the gateway as found here, e.g. a Docker
    session's relay), with the session's hub token as the key."""
    return "\n".join([
        "import os",
        "from openai import OpenAI",
        f"client = OpenAI(base_url={json.dumps(base_url)},",
        '                api_key=os.environ["JUPYTERHUB_API_TOKEN"])',
        f"client.chat.completions.create(model={json.dumps(model)},",
        '                               messages=[{"role": "user", "content": "hello"}])'])


def with_gateway(ctx, e: dict, listed: list[dict] | None = None) -> dict:
    """The endpoint with ``gateway``: its URL, the OpenAI base URL, the model."""
    if listed is None:
        listed = ctx.client.endpoints()
    root = gateway_root(ctx.env, ctx.client.settings.api_url)
    return {**e, "gateway": gateway_of(e, root, listed)}


def emit_created(ctx, e: dict) -> None:
    """A new endpoint (``with_gateway``): its warnings on stderr, then what it is."""
    if not ctx.json:
        for line in problem_lines(e):  # the create's own warnings
            ctx.note(line)
    ctx.emit(e, lambda e: "\n".join([
        f"created endpoint {safe(e['name'])} ({e['id']}) in {safe(e['project'])}: "
        f"{e['replicas']} replica(s) of {safe(e['image'])}, {safe(e['state'])}",
        f"URL: {safe(e['gateway']['url'])}",
        f"OpenAI base URL: {safe(e['gateway']['openai_base_url'])} "
        f"(model {safe(e['gateway']['model'])})",
        f"follow it with 'hubgrid serve show {safe(e['name'])}'; make a token with "
        f"'hubgrid serve token create {safe(e['name'])}'"]))


# --- words ----------------------------------------------------------------------------

def slots_text(slots: Mapping | None) -> str:
    return ", ".join(f"{k} {format_slot(k, v)}" for k, v in (slots or {}).items()) or "-"


def health_text(h: Mapping | None) -> str:
    """"healthy", "degraded, reachable (1 of 2 up)", "down, not reachable (0 of 1 up)"."""
    if not h:
        return "unknown"
    status = h.get("status") or "unknown"
    if status == "unknown" or h.get("replicas_up") is None:
        return status
    reach = "reachable" if h.get("reachable") else "not reachable"
    if status == "healthy":
        return f"healthy ({h['replicas_up']} of {h.get('replicas_wanted')} up)"
    return f"{status}, {reach} ({h['replicas_up']} of {h.get('replicas_wanted')} up)"


def state_text(e: Mapping) -> str:
    reason = e.get("state_reason")
    return f"{e.get('state')}: {reason}" if reason else str(e.get("state"))


def rule_text(r: Mapping) -> str:
    """"requests_per_second > 5: +1 (1..4, cooldown 300 s)"."""
    step = r.get("step", 0)
    return (f"{r.get('metric')} {COMPARATORS.get(r.get('comparator'), r.get('comparator'))} "
            f"{r.get('threshold')}: {'+' if step > 0 else ''}{step} "
            f"({r.get('min_replicas')}..{r.get('max_replicas')}, "
            f"cooldown {r.get('cooldown')} s)")


# --- tables and the full view ------------------------------------------------------------

LIST_HEADERS = ["NAME", "PROJECT", "GROUP", "STATE", "HEALTH", "REPLICAS", "MODEL FOLDER",
                "IMAGE", "ID"]


def list_rows(listed: list[dict]) -> list[list]:
    return [[e.get("name"), e.get("project"), e.get("resource_group"), e.get("state"),
             (e.get("health") or {}).get("status", "unknown"),
             f"{e.get('running_replicas', 0)}/{e.get('replicas')}",
             (e.get("model_folder") or {}).get("name") or "-", e.get("image"),
             short_id(e["id"])] for e in listed]


def render_list(listed: list[dict]) -> str:
    if not listed:
        return "no endpoints (create one with 'hubgrid serve create')"
    return table(LIST_HEADERS, list_rows(listed)) + (
        "\nREPLICAS: serving/wanted; HEALTH as the gateway's probes see it")


def replica_rows(e: Mapping) -> list[list]:
    """Each replica with its node and its health (the gateway's probe, by name)."""
    probes = {r.get("name"): r for r in (e.get("health") or {}).get("replicas") or []}
    rows = []
    for r in e.get("replicas_detail") or []:
        p = probes.get(r.get("name"))
        health = "-" if p is None else ("up" if p.get("up") else "down")
        check = "-" if p is None else " ".join(
            x for x in (p.get("check"), p.get("detail")) if x) or p.get("status")
        rows.append([r.get("name"), r.get("state"), r.get("node") or "-", health, check,
                     r.get("serving_since") or "-", r.get("reason") or ""])
    return rows


def render_endpoint(e: Mapping) -> str:
    folder = e.get("model_folder") or {}
    gw = e.get("gateway") or {}
    h = e.get("health") or {}
    calls = ", ".join(f"{code} {n}" for code, n in (h.get("calls") or {}).items())
    lines = [key_values([
        ("id", e["id"]), ("name", e.get("name")),
        ("project", f"{e.get('domain')}/{e.get('project')}"),
        ("resource group", e.get("resource_group")), ("image", e.get("image")),
        ("model folder", f"{folder.get('name') or '(gone)'} ({folder.get('id')})"),
        ("one replica", slots_text(e.get("slots"))),
        ("replicas", f"{e.get('running_replicas', 0)} serving of {e.get('replicas')} wanted"),
        ("state", state_text(e)),
        ("health", health_text(h)),
        ("public", "yes (callable without a token)" if e.get("public") else "no"),
        ("URL", gw.get("url") or "- (set HUBGRID_GATEWAY_URL)"),
        ("OpenAI base URL", gw.get("openai_base_url") or "-"),
        ("model", gw.get("model")),
        ("calls", calls or "none counted"),
        ("created", f"{e.get('created_at')} by {e.get('created_by')}"),
    ])]
    rows = replica_rows(e)
    lines.append("")
    lines.append(table(["REPLICA", "STATE", "NODE", "HEALTH", "CHECK", "SERVING SINCE",
                        "REASON"], rows) if rows else "no replicas")
    rules = e.get("autoscaling") or []
    lines.append("")
    if rules:
        lines.append(table(["RULE", "WHEN", "STEP", "MIN", "MAX", "COOLDOWN"], [
            [i, f"{r.get('metric')} {COMPARATORS.get(r.get('comparator'))} {r.get('threshold')}",
             f"{'+' if r.get('step', 0) > 0 else ''}{r.get('step')}", r.get("min_replicas"),
             r.get("max_replicas"), f"{r.get('cooldown')} s"] for i, r in enumerate(rules)]))
    else:
        lines.append("no autoscaling rules")
    if gw.get("openai_base_url"):
        lines += ["", "call it with the openai client (api_key: your hub token, "
                  "$JUPYTERHUB_API_TOKEN in a session, or an endpoint token):",
                  *("  " + safe(line) for line in
                    openai_snippet(gw["openai_base_url"], gw.get("model") or "").split("\n"))]
    events = (e.get("scaling_events") or [])[-RECENT_EVENTS:]
    if events:
        lines.append("")
        lines.append(table(["AT", "RULE", "OUTCOME", "REPLICAS", "REASON"], [
            [ev.get("last_at") or ev.get("at"), ev.get("rule"),
             ev.get("outcome") + (f" x{ev['count']}" if ev.get("count", 1) > 1 else ""),
             f"{ev.get('replicas_before')} -> {ev.get('replicas_after')}", ev.get("reason")]
            for ev in events]))
    return "\n".join(lines)


def problem_lines(result: Mapping) -> list[str]:
    """A validation's problems and warnings, one a line, with their field."""
    return ([f"problem: {safe(p.get('field'))}: {safe(p.get('message'))}"
             for p in result.get("problems") or []]
            + [f"warning: {safe(w.get('field'))}: {safe(w.get('message'))}"
               for w in result.get("warnings") or []])


def render_validation(result: Mapping) -> str:
    head = ("ok: the endpoint can be made" if result.get("ok")
            else "the endpoint cannot be made:")
    lines = [head] + [f"  {line}" for line in problem_lines(result)]
    for m in (result.get("definition") or {}).get("models") or []:
        if m.get("servable"):
            lines.append(f"  model {safe(m.get('name'))}: port {safe(m.get('port'))}")
    return "\n".join(lines)


TOKEN_HEADERS = ["ID", "STATE", "CREATED BY", "CREATED", "EXPIRES", "REVOKED"]


def render_tokens(tokens: list[dict]) -> str:
    if not tokens:
        return "no tokens (make one with 'hubgrid serve token create')"
    return table(TOKEN_HEADERS, [[short_id(t["id"]), t.get("state"), t.get("created_by"),
                                  t.get("created_at"), t.get("expires_at"),
                                  t.get("revoked_at") or "-"] for t in tokens])
