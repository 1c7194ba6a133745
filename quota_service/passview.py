"""What one queue pass reads once and keeps current as it admits.

Judging a queued request needs what its user, project and domain hold, the
group's free capacity, its policy and its image. ``ledger.Context`` reads
those per request; a pass over a long queue reads them once here, and moves
a request's amounts from pending to used when it admits it, so judging one
request costs the same however long the queue is.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import admission, ledger, registry
from . import slots as slotlib
from .models import Allocation, Domain, Keypair, Project, ResourceGroup, ResourcePolicy, User


@dataclasses.dataclass
class _Held:
    used: dict[str, Decimal] = dataclasses.field(default_factory=dict)
    sessions: int = 0
    pending: dict[str, Decimal] = dataclasses.field(default_factory=dict)
    pending_sessions: int = 0

    def add(self, state: str, amounts: dict[str, Decimal], sign: int = 1) -> None:
        signed = {k: v * sign for k, v in amounts.items()}
        if state == "allocated":
            self.used = slotlib.add(self.used, signed)
            self.sessions += sign
        elif state == "pending":
            self.pending = slotlib.add(self.pending, signed)
            self.pending_sessions += sign

    def usage(self, minus: dict[str, Decimal] | None = None) -> admission.Usage:
        """``minus``: a pending request's own amounts, left out of the pending."""
        if minus is None:
            return admission.Usage(dict(self.used), self.sessions, dict(self.pending),
                                   self.pending_sessions)
        pending = slotlib.add(self.pending, {k: -v for k, v in minus.items()})
        return admission.Usage(dict(self.used), self.sessions, pending,
                               self.pending_sessions - 1)


class PassView:
    """The rows a pass over ``rg``'s queue judges its requests against."""

    def __init__(self, s: Session, rg: ResourceGroup, running: list[Allocation]):
        self.s, self.rg, self.running = s, rg, running
        self._held: dict[tuple[str, int], _Held] = {}
        self._domains: set[int] = set()
        self._policies: dict[str, ResourcePolicy | None] = {}
        self._keypairs: dict[str, str | None] = {}
        self._images: dict[tuple[str | None, int], admission.ImageFacts | None] = {}
        self._group: admission.Group | None = None
        self._cluster = None

    # -- reading, once -----------------------------------------------------------

    def _load(self, domain_id: int) -> None:
        if domain_id in self._domains:
            return
        self._domains.add(domain_id)
        # the columns only: a long queue is many rows
        rows = self.s.execute(select(
            Allocation.user_id, Allocation.project_id, Allocation.domain_id, Allocation.state,
            Allocation.slots).where(Allocation.domain_id == domain_id,
                                    Allocation.state.in_(ledger.ACTIVE)))
        for user_id, project_id, domain_id_, state, slots in rows:
            self._count(user_id, project_id, domain_id_, state, slotlib.from_text(slots), 1)

    def _count(self, user_id: int, project_id: int, domain_id: int, state: str, amounts,
               sign: int) -> None:
        for key in (("user", user_id), ("project", project_id), ("domain", domain_id)):
            self._held.setdefault(key, _Held()).add(state, amounts, sign)

    def _count_allocation(self, a: Allocation, amounts, sign: int) -> None:
        if a.domain_id in self._domains:
            self._count(a.user_id, a.project_id, a.domain_id, a.state, amounts, sign)

    def policy(self, a: Allocation, user: User) -> ResourcePolicy | None:
        """The policy a queued request is judged by: its keypair's, else its user's."""
        name = None
        if a.keypair:
            if a.keypair not in self._keypairs:
                k = self.s.scalar(select(Keypair).where(Keypair.access_key == a.keypair))
                self._keypairs[a.keypair] = k.resource_policy if k is not None else None
            name = self._keypairs[a.keypair]
        name = name or user.resource_policy
        if name not in self._policies:
            self._policies[name] = ledger.policy_of(self.s, name)
        return self._policies[name]

    def image(self, name: str | None, domain: Domain) -> admission.ImageFacts | None:
        key = (name, domain.id)
        if key not in self._images:
            self._images[key] = registry.facts(self.s, name, domain)
        return self._images[key]

    def cluster(self):
        """The group's nodes with what runs on them subtracted."""
        if self._cluster is None:
            self._cluster = ledger.cluster_state(self.rg, self.running)
        return self._cluster

    # -- judging -------------------------------------------------------------------

    def snapshot(self, a: Allocation, amounts, user: User, project: Project,
                 policy: ResourcePolicy | None, now: dt.datetime) -> admission.Snapshot:
        """What ``ledger.Context.snapshot(now, exclude=a.id)`` would give."""
        domain = user.domain
        self._load(domain.id)
        own = amounts if a.state == "pending" else None

        def usage(level: str, ident: int) -> admission.Usage:
            return self._held.get((level, ident), _Held()).usage(own)

        levels = (
            (ledger.policy_limits("user", user.name, policy), usage("user", user.id)),
            (admission.Limits("project", project.name,
                              slots=slotlib.from_text(project.total_resource_slots),
                              max_sessions=project.max_concurrent_sessions),
             usage("project", project.id)),
            (admission.Limits("domain", domain.name,
                              slots=slotlib.from_text(domain.total_resource_slots)),
             usage("domain", domain.id)),
        )
        if self._group is None:
            self._group = ledger.group_view(self.rg, True, self.running)
        accessible = ledger.may_use_group(user, project, self.rg, policy)
        return admission.Snapshot(now=now, levels=levels,
                                  group=dataclasses.replace(self._group, accessible=accessible),
                                  image=self.image(a.image, domain))

    # -- what the pass changed ---------------------------------------------------------

    def admitting(self, a: Allocation, amounts) -> None:
        """Call before ``a`` turns from pending to allocated."""
        self._count_allocation(a, amounts, -1)
        self._group = self._cluster = None

    def admitted(self, a: Allocation, amounts) -> None:
        """Call after ``a`` was admitted (its state is "allocated")."""
        self.running.append(a)
        self._count_allocation(a, amounts, 1)

    def cancelling(self, a: Allocation) -> None:
        """Call before a pending ``a`` is cancelled."""
        if a.domain_id in self._domains:
            self._count_allocation(a, slotlib.from_text(a.slots), -1)
