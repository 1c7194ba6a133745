"""The route table the gateway serves (``GET internal/serving/routes``): an IO edge.

Every endpoint that is not being deleted, with:

- its replicas that serve: allocations of the endpoint, allocated, seen
  serving by the controller (``serving_at``), whose node address is known
  (``service["target"]``: ``unix:<socket on the node>``, written by the
  controller from the hub's server state);
- its probe (the model definition's ``health_check``, as admission read it
  into the replica's ``service``);
- the names its replicas serve (``models``);
- its active tokens, as SHA-256 only (revoked or expired ones are left out:
  the gateway refuses what it does not find);
- its state and the replicas it wants, and whether a call may wake it from
  zero (``wake``: scaling.may_wake), for the gateway's cold start;
- the HTTP methods its own URL (``e/<id>/``) passes on (``methods``: the
  definition's ``service.methods``, GET and POST by default), and the paths
  (``paths``: its ``service.paths``, else the OpenAI routes and the health
  check's path: core/urlpaths.py);
- ``disabled``: why it takes no call at all, or "": its domain, its
  project or its creator is deactivated (or the creator is gone). Such an
  endpoint is listed (its replicas are still probed) but not public, and
  the gateway refuses every call to it, its tokens' and members' too.

The gateway gets this with the internal token only; nothing here is a
secret a caller could use.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.models import Allocation, Project, User
from ..core.servingmodels import Endpoint, EndpointToken
from ..core import urlpaths
from ..core.orm import aware, iso
from . import scaling

DEFAULT_HEALTH = {"path": "/health", "interval": 10, "max_retries": 3, "expected_status": 200}
#: what an endpoint's own URL passes on when its definition declares nothing
DEFAULT_METHODS = ("GET", "POST")


def health_of(service: dict) -> dict:
    """A replica's probe, from what admission kept of its definition."""
    h = dict(DEFAULT_HEALTH)
    if service.get("health_path"):
        h["path"] = service["health_path"]
    if service.get("health_interval"):  # whole seconds, at least one (haproxy's inter)
        h["interval"] = max(1, math.ceil(Decimal(str(service["health_interval"]))))
    for key in ("max_retries", "expected_status"):
        if service.get(f"health_{key}"):
            h[key] = int(service[f"health_{key}"])
    return h


def paths_of(service: dict) -> list[str]:
    """What ``e/<id>/`` passes on, from what admission kept of the definition
    (a replica admitted before paths were kept gets the defaults)."""
    return list(service.get("paths") or urlpaths.declared(None, service.get("health_path")))


def disabled(project: Project, creator: User | None, created_by: str) -> str:
    """Why an endpoint takes no call ("" when it does): a deactivated domain,
    project or creator stops its access as it stops their sessions'."""
    if not project.domain.active:
        return f"its domain {project.domain.name!r} is deactivated"
    if not project.active:
        return f"its project {project.name!r} is deactivated"
    if creator is None:
        return f"its creator {created_by!r} is no longer a user"
    if not creator.active:
        return f"its creator {created_by!r} is deactivated"
    if not creator.domain.active:
        return f"its creator's domain {creator.domain.name!r} is deactivated"
    return ""


def table(s: Session, now: dt.datetime) -> dict:
    endpoints = s.scalars(select(Endpoint).where(Endpoint.state != "terminating")
                          .order_by(Endpoint.id)).all()
    ids = [e.id for e in endpoints]
    projects = {p.id: p for p in s.scalars(select(Project).where(
        Project.id.in_({e.project_id for e in endpoints})))} if endpoints else {}
    creators = {u.name: u for u in s.scalars(select(User).where(
        User.name.in_({e.created_by for e in endpoints})))} if endpoints else {}
    replicas: dict[str, list[Allocation]] = {}
    tokens: dict[str, list[EndpointToken]] = {}
    if ids:
        for a in s.scalars(select(Allocation).where(
                Allocation.endpoint_id.in_(ids), Allocation.state == "allocated")
                .order_by(Allocation.server_name)):
            replicas.setdefault(a.endpoint_id, []).append(a)
        for t in s.scalars(select(EndpointToken).where(
                EndpointToken.endpoint_id.in_(ids), EndpointToken.revoked_at.is_(None))):
            if aware(t.expires_at) > now:
                tokens.setdefault(t.endpoint_id, []).append(t)
    out = []
    for e in endpoints:
        project = projects[e.project_id]
        mine = replicas.get(e.id, [])
        services = [a.service or {} for a in mine]
        serving = [(a, a.service or {}) for a in mine
                   if a.serving_at is not None and (a.service or {}).get("target")]
        why = disabled(project, creators.get(e.created_by), e.created_by)
        out.append({
            "id": e.id, "name": e.name, "domain": project.domain.name,
            "project": project.name, "public": bool(e.public) and not why, "disabled": why,
            "methods": list(services[0].get("methods") or DEFAULT_METHODS) if services
            else list(DEFAULT_METHODS),
            "paths": paths_of(services[0] if services else {}),
            "state": e.state, "state_reason": e.state_reason or "",
            "replicas_wanted": e.replicas, "wake": scaling.may_wake(e),
            "models": sorted({svc["model"] for svc in services if svc.get("model")}),
            "health": health_of(services[0]) if services else dict(DEFAULT_HEALTH),
            "replicas": [{"name": a.server_name, "target": svc["target"]}
                         for a, svc in serving],
            "tokens": [{"id": t.id, "sha256": t.token_hash, "expires_at": iso(t.expires_at)}
                       for t in sorted(tokens.get(e.id, []), key=lambda t: t.id)],
        })
    return {"endpoints": out}
