"""Endpoints and their tokens: the manager behind ``api/serving.py``.

An IO edge: ORM over one session (the handler's transaction); who may do
what is ``core/authz.py``, the checks before a create ``checks``, tokens'
rules ``tokens``. The serving controller (``replicas``) starts and stops
the replicas and sets the state; deleting an endpoint whose replicas ever
ran leaves it ``terminating`` until the controller has stopped them all.
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import delete as sa_delete
from sqlalchemy import select
from sqlalchemy.orm import Session

from . import checks, replicas, scaling, tokens
from ..core import authz
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import Conflict, Hidden, Invalid, NotFound
from ..core.foldermodels import VFolder
from ..core.models import Allocation, Domain, Node, Project, ResourceGroup
from ..core.orm import aware, flush, iso
from ..core.servingmodels import Endpoint, EndpointToken
from ..core.storemodels import StoreDeployment

ENDPOINT_ID_LENGTH = 32


def replica_model(s: Session, a: Allocation) -> dict:
    """One replica as the endpoint shows it: ``queued`` (the ledger has not
    admitted it yet), ``starting``, ``serving`` (the hub has it up), or
    ``failed`` / ``ended`` (its last allocation, with why)."""
    if a.state == "pending":
        state = "queued"
    elif a.state == "allocated":
        state = "serving" if a.serving_at is not None else "starting"
    else:
        state = "failed" if replicas.start_failure(a.release_reason or "") else "ended"
    node = s.get(Node, a.node_id) if a.node_id else None
    return {"name": a.server_name, "state": state, "node": node.name if node else None,
            "allocation": a.id, "started_at": iso(a.admitted_at),
            "serving_since": iso(a.serving_at),
            "reason": a.release_reason if state in ("failed", "ended") else ""}


def replicas_detail(s: Session, e: Endpoint) -> list[dict]:
    """Its replicas now (active allocations), and the last one that failed
    to start since its replicas were last asked for."""
    rows = list(s.scalars(select(Allocation).where(Allocation.endpoint_id == e.id)
                          .order_by(Allocation.created_at, Allocation.id)))
    out = [replica_model(s, a) for a in rows if a.state in replicas.ACTIVE]
    since = aware(e.desired_at or e.created_at)
    failed = [a for a in rows if a.state not in replicas.ACTIVE and a.released_at is not None
              and aware(a.released_at) >= since
              and replicas.start_failure(a.release_reason or "")]
    return out + [replica_model(s, failed[-1])] if failed else out


def endpoint_model(s: Session, e: Endpoint) -> dict:
    project = s.get(Project, e.project_id)
    folder = s.get(VFolder, e.model_folder)
    detail = replicas_detail(s, e)
    return {
        "id": e.id,
        "name": e.name,
        "domain": project.domain.name,
        "project": project.name,
        "resource_group": s.get(ResourceGroup, e.resource_group_id).name,
        "image": e.image,
        "model_folder": {"id": e.model_folder, "name": folder.name if folder else None},
        "slots": e.slots,
        "replicas": e.replicas,
        "running_replicas": sum(1 for r in detail if r["state"] == "serving"),
        "replicas_detail": detail,
        "public": e.public,
        "state": e.state,
        "state_reason": e.state_reason,
        "created_by": e.created_by,
        "created_at": iso(e.created_at),
        "autoscaling": e.autoscaling or [],
        "scaling_events": e.scaling_events or [],
        # the Model Store entry it was deployed from (serving/store.py), or None
        "store_model": s.scalar(select(StoreDeployment.store_model_id)
                                .where(StoreDeployment.endpoint_id == e.id)),
    }


def find(s: Session, p: Principal, endpoint_id: str) -> tuple[Endpoint, Project]:
    """The endpoint and its project; Hidden (404) for one the caller may not see."""
    e = s.get(Endpoint, endpoint_id) if len(endpoint_id) == ENDPOINT_ID_LENGTH else None
    project = s.get(Project, e.project_id) if e is not None else None
    if e is None:
        raise Hidden(f"endpoint {endpoint_id[:40]!r} not found")
    authz.require_see_endpoint(p, project.domain.name, project.name, endpoint_id)
    return e, project


def validate(s: Session, p: Principal, body, hosts, now: dt.datetime) -> dict:
    found = checks.check(s, p, body, hosts, now)
    return {"ok": not found.problems, "problems": found.problems,
            "warnings": found.warnings, "definition": found.definition}


def create(s: Session, p: Principal, body, hosts, now: dt.datetime, access=None,
           store_model: str | None = None) -> dict:
    """A new endpoint (``provisioning``), or Invalid (422) with every problem;
    ``access`` and ``store_model``: a Model Store deploy's (``serving.store``),
    which reaches the folder through the publication and records the entry."""
    found = checks.check(s, p, body, hosts, now, access)
    if found.problems:
        raise Invalid("the endpoint cannot be made: " + "; ".join(
            f"{x['field']}: {x['message']}" for x in found.problems), detail=found.problems)
    e = Endpoint(id=uuid.uuid4().hex, name=body.name, project_id=found.project.id,
                 resource_group_id=found.rg.id, image=body.image,
                 model_folder=body.model_folder, slots=slotlib.to_text(body.slots),
                 replicas=body.replicas, public=body.public, state="provisioning",
                 state_reason="", created_by=p.name, created_at=now)
    s.add(e)
    flush(s, f"project {body.project!r} has an endpoint named {body.name!r}")
    if store_model is not None:
        s.add(StoreDeployment(endpoint_id=e.id, store_model_id=store_model))
        s.flush()
    return endpoint_model(s, e) | {"warnings": found.warnings}


def list_endpoints(s: Session, p: Principal, project: str | None = None) -> list[dict]:
    domain, projects = authz.endpoint_listing_scope(p)
    q = (select(Endpoint).join(Project, Endpoint.project_id == Project.id)
         .join(Domain, Project.domain_id == Domain.id).order_by(Domain.name, Project.name,
                                                               Endpoint.name))
    if domain is not None:
        q = q.where(Domain.name == domain)
    if projects is not None:
        q = q.where(Project.name.in_(sorted(name for d, name in projects if d == domain)))
    if project is not None:
        q = q.where(Project.name == project)
    return [endpoint_model(s, e) for e in s.scalars(q)]


def get(s: Session, p: Principal, endpoint_id: str) -> dict:
    return endpoint_model(s, find(s, p, endpoint_id)[0])


def update(s: Session, p: Principal, endpoint_id: str, body) -> dict:
    """Change the desired replicas (more are checked against the creator's
    limits, the replicas running or queued counted once: ``checks.scale_problems``) or
    ``public`` (admins of its domain); its creator and admins only."""
    e, project = find(s, p, endpoint_id)
    authz.require_change_endpoint(p, project.domain.name, project.name, e.created_by,
                                  endpoint_id)
    if e.state == "terminating":
        raise Conflict(f"endpoint {e.name!r} is being deleted")
    if body.public is not None and body.public != e.public:
        authz.require_set_endpoint_public(p, project.domain.name)
        e.public = body.public
    if body.replicas is not None and body.replicas > e.replicas:
        problems = checks.scale_problems(s, e, project, body.replicas, p.name)
        if problems:
            raise Invalid("; ".join(f"{x['field']}: {x['message']}" for x in problems),
                          detail=problems)
    if body.autoscaling is not None:
        e.autoscaling = [scaling.rule_json(scaling.rule_of(i, r.model_dump()))
                         for i, r in enumerate(body.autoscaling)] or None
    if body.replicas is not None:
        e.replicas = body.replicas
        # asked again: a failed endpoint tries anew (the controller decides)
        e.desired_at = dt.datetime.now(dt.timezone.utc)
        if e.state == "failed":
            e.state, e.state_reason = "provisioning", ""
    s.flush()
    return endpoint_model(s, e)


def delete(s: Session, p: Principal, endpoint_id: str) -> str:
    """Delete an endpoint and its tokens: at once when no replica ever ran,
    else ``terminating`` until the controller stopped them (``replicas``); its
    domain. Its creator and admins only."""
    e, project = find(s, p, endpoint_id)
    authz.require_change_endpoint(p, project.domain.name, project.name, e.created_by,
                                  endpoint_id)
    domain = project.domain.name
    if s.scalar(select(Allocation.id).where(Allocation.endpoint_id == e.id).limit(1)):
        # replicas ran: the controller stops them, then removes the row
        e.state, e.state_reason = "terminating", "stopping its replicas"
        s.flush()
        return domain
    s.execute(sa_delete(EndpointToken).where(EndpointToken.endpoint_id == e.id))
    s.execute(sa_delete(Endpoint).where(Endpoint.id == e.id))
    return domain


# --- tokens ------------------------------------------------------------------

def token_state(t: EndpointToken, now: dt.datetime) -> str:
    if t.revoked_at is not None:
        return "revoked"
    return "expired" if aware(t.expires_at) <= now else "active"


def token_model(t: EndpointToken, now: dt.datetime) -> dict:
    return {"id": t.id, "endpoint": t.endpoint_id, "created_by": t.created_by,
            "created_at": iso(t.created_at), "expires_at": iso(t.expires_at),
            "revoked_at": iso(t.revoked_at), "state": token_state(t, now)}


def list_tokens(s: Session, p: Principal, endpoint_id: str, now: dt.datetime) -> list[dict]:
    e, _ = find(s, p, endpoint_id)
    rows = s.scalars(select(EndpointToken).where(EndpointToken.endpoint_id == e.id)
                     .order_by(EndpointToken.created_at, EndpointToken.id))
    return [token_model(t, now) for t in rows]


def create_token(s: Session, p: Principal, endpoint_id: str, body, now: dt.datetime,
                 max_days: int) -> tuple[dict, str]:
    """A new token: its model with the secret (shown this once), and the domain."""
    e, project = find(s, p, endpoint_id)
    try:
        expires = tokens.expiry(now, body.expires_in_days, max_days)
    except ValueError as err:
        raise Invalid(str(err)) from None
    secret = tokens.new_token()
    t = EndpointToken(id=uuid.uuid4().hex, endpoint_id=e.id,
                      token_hash=tokens.hash_token(secret), created_by=p.name,
                      created_at=now, expires_at=expires)
    s.add(t)
    s.flush()
    return token_model(t, now) | {"token": secret}, project.domain.name


def revoke_token(s: Session, p: Principal, endpoint_id: str, token_id: str,
                 now: dt.datetime) -> str:
    """Revoke a token of the endpoint (again: nothing changes); the domain."""
    e, project = find(s, p, endpoint_id)
    t = s.get(EndpointToken, token_id) if len(token_id) == ENDPOINT_ID_LENGTH else None
    if t is None or t.endpoint_id != e.id:
        raise NotFound(f"endpoint {e.name!r} has no token {token_id[:40]!r}")
    if t.revoked_at is None:
        t.revoked_at = now
    s.flush()
    return project.domain.name


def resolve_token(s: Session, token: str, now: dt.datetime,
                  endpoint_id: str | None = None) -> tokens.Verdict:
    """The gateway's question: which endpoint ``token`` opens now (the pure
    ``tokens.check`` over the stored row whose hash matches)."""
    rows = s.scalars(select(EndpointToken).where(
        EndpointToken.token_hash == tokens.hash_token(token)))
    return tokens.check(token, now, [
        tokens.StoredToken(t.id, t.endpoint_id, t.token_hash, aware(t.expires_at),
                           aware(t.revoked_at)) for t in rows], endpoint_id)
