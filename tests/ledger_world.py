"""A scheduling world on top of the ``tenancy`` world, and a driver for the ledger.

:class:`Cluster` builds resource groups of nodes with GPUs through the ORM,
sets policies and limits, and runs each ledger verb the way the service
does: in its own ``db.ledger_transaction``, with an explicit clock that the
test moves (every submit is one second after the previous one, so FIFO order
is the order of the calls). The ``cluster`` fixture in conftest.py gives one
with an unlimited "default" resource policy (every user's).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

import sqlalchemy as sa

from quota_service.core import db
from quota_service.scheduling import ledger, listing, queue as queueing
from quota_service.core import slots as slotlib
from quota_service.tenancy import accounts as manager
from quota_service.core.models import (
    Allocation,
    Device,
    Domain,
    Node,
    Project,
    ResourceGroup,
    ResourceGroupGrant,
    ResourcePolicy,
    User,
)
from quota_service.scheduling.placement import BestFit
from quota_service.core.schemas import AllocationCreate

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
SECOND = dt.timedelta(seconds=1)


def limit_text(raw: dict) -> dict[str, str]:
    """A limit map as the database keeps it ({"gpu": 2} -> {"gpu": "2"})."""
    return slotlib.to_text(slotlib.parse_request(raw, limits=True))


@dataclass
class Cluster:
    """Builds the scheduling world and runs submit/release/schedule on it."""

    world: object  # conftest.World
    strategy: object = field(default_factory=BestFit)
    now: dt.datetime = T0
    _principals: dict = field(default_factory=dict, repr=False)

    def principal(self, name: str):
        """The user's Principal, cached until memberships or users change."""
        if name not in self._principals:
            self._principals[name] = self.world.principal(name)
        return self._principals[name]

    # --- building --------------------------------------------------------

    def add_group(self, name: str, nodes: dict[str, tuple[str, ...]], *, cpu="16", mem="64G",
                  domains=("acme",), **fields) -> None:
        """A resource group granted to ``domains``; ``nodes`` maps a node name
        to the models of its GPUs (device indexes 0, 1, ...)."""
        with self.world.tx() as s:
            rg = ResourceGroup(name=name, **fields)
            for domain in domains:
                d = s.scalar(sa.select(Domain).where(Domain.name == domain))
                rg.grants.append(ResourceGroupGrant(domain_id=d.id))
            for node, models in nodes.items():
                rg.nodes.append(Node(
                    name=node, capacity=limit_text({"cpu": cpu, "mem": mem}),
                    devices=[Device(index=i, model=m) for i, m in enumerate(models)],
                ))
            s.add(rg)

    def set_policy(self, name: str = "default", **fields) -> None:
        """Create or change a resource policy; slot maps are given as plain dicts."""
        for key in ("total_resource_slots", "max_pending_resource_slots"):
            if key in fields:
                fields[key] = limit_text(fields[key])
        with self.world.tx() as s:
            pol = s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == name))
            if pol is None:
                pol = ResourcePolicy(name=name)
                s.add(pol)
            for key, value in fields.items():
                setattr(pol, key, value)

    def set_project(self, domain: str, project: str, *, slots: dict | None = None,
                    **fields) -> None:
        with self.world.tx() as s:
            p = s.scalar(sa.select(Project).join(Domain).where(
                Domain.name == domain, Project.name == project))
            if slots is not None:
                p.total_resource_slots = limit_text(slots)
            for key, value in fields.items():
                setattr(p, key, value)

    def set_domain(self, domain: str, *, slots: dict | None = None, **fields) -> None:
        self._principals.clear()
        with self.world.tx() as s:
            d = s.scalar(sa.select(Domain).where(Domain.name == domain))
            if slots is not None:
                d.total_resource_slots = limit_text(slots)
            for key, value in fields.items():
                setattr(d, key, value)

    def set_user(self, name: str, **fields) -> None:
        self._principals.clear()
        with self.world.tx() as s:
            u = s.scalar(sa.select(User).where(User.name == name))
            for key, value in fields.items():
                setattr(u, key, value)

    def set_group(self, name: str, **fields) -> None:
        with self.world.tx() as s:
            rg = s.scalar(sa.select(ResourceGroup).where(ResourceGroup.name == name))
            for key, value in fields.items():
                setattr(rg, key, value)

    def set_node(self, name: str, **fields) -> None:
        with self.world.tx() as s:
            n = s.scalar(sa.select(Node).where(Node.name == name))
            for key, value in fields.items():
                setattr(n, key, value)

    def set_device_identity(self, node: str, devices: list[tuple[str, int]]) -> None:
        """Give a node's devices (in order) a UUID and memory in bytes."""
        with self.world.tx() as s:
            n = s.scalar(sa.select(Node).where(Node.name == node))
            for device, (uuid, memory) in zip(list(n.devices), devices):
                device.uuid, device.memory = uuid, memory

    def set_device_indexes(self, node: str, indexes: list[int]) -> None:
        """Renumber a node's devices (in order), e.g. to [2, 3]."""
        with self.world.tx() as s:
            n = s.scalar(sa.select(Node).where(Node.name == node))
            for device, index in zip(list(n.devices), indexes):
                device.index = index
                s.flush()

    def revoke_all(self, group: str) -> None:
        with self.world.tx() as s:
            rg = s.scalar(sa.select(ResourceGroup).where(ResourceGroup.name == group))
            rg.grants.clear()

    def join(self, user: str, domain: str, project: str) -> None:
        self._principals.clear()
        with self.world.tx() as s:
            manager.add_member(s, self.principal("root"), domain, project, user)

    # --- the verbs, each in its own locked transaction ----------------------

    def body(self, project: str, group: str, **fields) -> AllocationCreate:
        return AllocationCreate.model_validate(
            {"project": project, "resource_group": group, **fields})

    def submit(self, user: str, project: str, group: str, *, dry_run=False, **fields) -> dict:
        """``ledger.submit`` one second after the previous submit."""
        self.now += SECOND
        p = self.principal(user)
        body = self.body(project, group, **fields)
        with db.ledger_transaction(self.world.session_factory) as s:
            return ledger.submit(s, p, body, self.now, self.strategy, dry_run=dry_run)

    def release(self, user: str, alloc_id: str, reason: str = "done") -> dict:
        p = self.principal(user)
        with db.ledger_transaction(self.world.session_factory) as s:
            return ledger.release(s, p, alloc_id, self.now, reason)

    def schedule(self, group: str, abandoned: dict[str, str] | None = None) -> list[str]:
        """One queue pass; the ids it admitted."""
        with db.ledger_transaction(self.world.session_factory) as s:
            return queueing.schedule(s, group, self.now, self.strategy, abandoned).admitted

    # --- reading -----------------------------------------------------------

    def get(self, alloc_id: str) -> dict:
        with self.world.session_factory() as s:
            return ledger.allocation_model(s, s.get(Allocation, alloc_id))

    def allocations(self, state: str | None = None) -> list[dict]:
        """Every allocation (as the API shows it), oldest first."""
        with self.world.session_factory() as s:
            return listing.list_allocations(s, self.principal("root"),
                                            (state,) if state else None, None).allocations

    def count(self) -> int:
        return self.world.count(Allocation)

    def states(self, *ids: str) -> list[str]:
        return [self.get(i)["state"] for i in ids]

    def user_id(self, name: str) -> int:
        with self.world.session_factory() as s:
            return s.scalar(sa.select(User.id).where(User.name == name))


def shares(model: dict) -> dict[tuple[str, int], Decimal]:
    """{(node, device index): share} of one allocation model."""
    return {(model["node"], g["index"]): Decimal(g["share"]) for g in model["gpus"]}
