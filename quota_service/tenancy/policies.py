"""Resource policies: named limits for domains, projects, users and
keypairs, and the rule that a domain admin never sets a limit above the
domain's total.

Functions over one session and the caller, plain dicts out, refusals as
ApiErrors. Writes are for superadmins; admins read every policy, users the
ones that apply to them.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import authz
from ..core import db
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import Conflict, Denied, Hidden, Invalid, NotFound
from ..core.models import Domain, Keypair, ResourcePolicy, User
from ..core.names import format_amount
from ..core.orm import flush, iso
from ..core.schemas import changes


def check_within_domain(p: Principal, domain: Domain, limits: dict, what: str) -> None:
    """A domain admin never sets a limit above the domain's total."""
    if p.is_superadmin:
        return
    total = slotlib.from_text(domain.total_resource_slots)
    for slot, amount in slotlib.from_text(limits).items():
        if slot in total and amount > total[slot]:
            raise Denied(
                f"{what} {slot} {format_amount(amount)} is above domain {domain.name}'s total "
                f"{format_amount(total[slot])}"
            )


def policy_model(pol: ResourcePolicy) -> dict:
    return {
        "name": pol.name,
        "total_resource_slots": pol.total_resource_slots,
        "unspecified_limited": pol.unspecified_limited,
        "max_concurrent_sessions": pol.max_concurrent_sessions,
        "max_session_lifetime": pol.max_session_lifetime,
        "idle_timeout": pol.idle_timeout,
        "max_pending_sessions": pol.max_pending_sessions,
        "max_pending_resource_slots": pol.max_pending_resource_slots,
        "max_gpus_per_session": pol.max_gpus_per_session,
        "allowed_resource_groups": pol.allowed_resource_groups,
        "max_vfolder_count": pol.max_vfolder_count,
        "max_vfolder_size": pol.max_vfolder_size,
        "allowed_vfolder_hosts": pol.allowed_vfolder_hosts,
        "created_at": iso(pol.created_at),
        # idle reclamation (docs/operations.md)
        "utilization_window": pol.utilization_window,
        "utilization_grace": pol.utilization_grace,
        "utilization_thresholds": pol.utilization_thresholds,
        "utilization_operator": pol.utilization_operator,
        "reclaim_warning": pol.reclaim_warning,
        "keep_extension": pol.keep_extension,
        "max_keeps": pol.max_keeps,
    }


def _policy_values(values: dict) -> dict:
    if values.get("max_gpus_per_session") is not None:
        values["max_gpus_per_session"] = format_amount(values["max_gpus_per_session"])
    if values.get("utilization_thresholds") is not None:
        values["utilization_thresholds"] = {k: format_amount(v) for k, v in
                                            sorted(values["utilization_thresholds"].items())}
    return values


def _policy(s: Session, p: Principal, name: str) -> ResourcePolicy:
    if not (authz.reads_every_policy(p) or p.policy == name
            or _user_policy(s, p) == name):
        raise Hidden(f"resource policy {name!r} not found")
    pol = s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == name))
    if pol is None:
        raise NotFound(f"resource policy {name!r} not found")
    return pol


def _user_policy(s: Session, p: Principal) -> str | None:
    return s.scalar(select(User.resource_policy).where(User.name == p.name))


def list_policies(s: Session, p: Principal) -> list[dict]:
    if authz.reads_every_policy(p):
        q = select(ResourcePolicy)
    else:
        q = select(ResourcePolicy).where(
            ResourcePolicy.name.in_({_user_policy(s, p), p.policy} - {None}))
    return [policy_model(x) for x in s.scalars(q.order_by(ResourcePolicy.name))]


def get_policy(s: Session, p: Principal, name: str) -> dict:
    return policy_model(_policy(s, p, name))


def create_policy(s: Session, p: Principal, body) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    authz.require_superadmin(p, "create resource policies")
    if s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == body.name)):
        raise Conflict(f"resource policy {body.name!r} already exists")
    pol = ResourcePolicy(**_policy_values(body.model_dump()))
    s.add(pol)
    flush(s, f"resource policy {body.name!r} already exists")
    return policy_model(pol)


def update_policy(s: Session, p: Principal, name: str, body) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    pol = _policy(s, p, name)
    authz.require_superadmin(p, "change resource policies")
    for key, value in _policy_values(changes(body)).items():
        setattr(pol, key, value)
    s.flush()
    return policy_model(pol)


def delete_policy(s: Session, p: Principal, name: str) -> None:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    pol = _policy(s, p, name)
    authz.require_superadmin(p, "delete resource policies")
    if s.scalar(select(User.id).where(User.resource_policy == name).limit(1)) or s.scalar(
        select(Keypair.id).where(Keypair.resource_policy == name).limit(1)
    ):
        raise Conflict(f"resource policy {name!r} is still assigned to users or keypairs")
    s.delete(pol)
    s.flush()


def check_policy_within_domain(s: Session, p: Principal, domain: Domain, name: str) -> None:
    pol = s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == name))
    if pol is None:
        raise Invalid(f"resource_policy: no policy named {name!r}")
    check_within_domain(p, domain, pol.total_resource_slots, f"policy {name}")
