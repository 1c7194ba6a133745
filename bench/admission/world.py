"""A busy cluster's tenancy, written straight into a fresh database before
the service starts: domains, projects, users each with a keypair and the
``storm`` resource policy, and nodes of 8 GPUs in the default group."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from bench.admission.harness import prepare_service

#: every user's policy: two sessions at once, one waiting, two whole GPUs
STORM_POLICY = {"max_concurrent_sessions": 2, "max_pending_sessions": 1,
                "total_resource_slots": {"gpu": "2"}}
GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Tenant:
    """One user of the workload: the project they ask under and their
    ``Authorization`` header."""

    user: str
    project: str
    auth: str


def node_specs(nodes: int) -> list[dict]:
    return [{"name": f"node{i:04d}", "resource_group": "default",
             "capacity": {"cpu": "64", "mem": "512G"},
             "devices": [{"index": g, "model": "A100", "memory": 80 * 2**30}
                         for g in range(GPUS_PER_NODE)]}
            for i in range(nodes)]


def prepare(db_url: str, *, nodes: int, users: int, domains: int, projects: int) -> list[Tenant]:
    """The world: ``projects`` spread over ``domains`` (each domain granted the
    default group), ``users`` spread over the projects, ``nodes`` nodes."""
    from quota_service.core import db, keys
    from quota_service.core.models import (Domain, Keypair, Membership, Project,
                                           ResourceGroup, ResourceGroupGrant, ResourcePolicy,
                                           User)

    svc = prepare_service(db_url, node_specs(nodes))
    tenants: list[Tenant] = []
    with db.transaction(svc.session_factory) as s:
        s.add(ResourcePolicy(name="storm", **STORM_POLICY))
        rg = s.scalar(sa.select(ResourceGroup).where(ResourceGroup.name == "default"))
        doms = [Domain(name=f"dom{d}", description="bench") for d in range(domains)]
        s.add_all(doms)
        s.flush()
        for d in doms:
            s.add(ResourceGroupGrant(resource_group_id=rg.id, domain_id=d.id))
        projs = [Project(domain_id=doms[j % domains].id, name=f"proj{j:02d}")
                 for j in range(projects)]
        s.add_all(projs)
        s.flush()
        rows = []
        for i in range(users):
            proj = projs[i % projects]
            u = User(name=f"user{i:05d}", domain_id=proj.domain_id, resource_policy="storm")
            rows.append((u, proj))
        s.add_all([u for u, _ in rows])
        s.flush()
        for u, proj in rows:
            access, secret = keys.new_keypair()
            s.add(Membership(user_id=u.id, project_id=proj.id))
            s.add(Keypair(access_key=access, secret_hash=keys.hash_secret(secret), user_id=u.id,
                          resource_policy="storm"))
            tenants.append(Tenant(u.name, proj.name, f"Keypair {access}:{secret}"))
    svc.engine.dispose()
    return tenants
