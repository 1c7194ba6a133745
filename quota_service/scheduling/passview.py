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

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import admission, batchmemo, ledger, holdings
from .policycache import PolicyRow
from ..sessions import registry
from ..core import slots as slotlib
from ..core.models import Allocation, Domain, Keypair, Project, ResourceGroup, User


#: keypairs read per query (well under SQLite's bound on a statement's parameters)
KEYS_PER_QUERY = 500


class PassView:
    """The rows a pass over ``rg``'s queue judges its requests against."""

    def __init__(self, s: Session, rg: ResourceGroup, running: list,
                 queued: list[Allocation] = (), memo: batchmemo.Memo | None = None):
        self.s, self.rg, self.running = s, rg, running
        #: the queue the pass goes over: its keypairs are read together
        self.queued = queued
        #: the transaction's memo (``batchmemo``): what the domains hold and
        #: the group's nodes come from it, and the pass's changes go to it
        #: (``running`` is then the memo's list of the group)
        self.memo = memo
        #: per domain id: what its users, projects and itself hold
        self._held: dict[int, dict[holdings.Key, holdings.Held]] = {}
        self._policies: dict[str, PolicyRow | None] = {}
        self._keypairs: dict[str, str | None] = {}
        self._images: dict[tuple[str | None, int], admission.ImageFacts | None] = {}
        self._group: admission.Group | None = None
        self._cluster = None

    # -- reading, once -----------------------------------------------------------

    def _load(self, domain_id: int) -> dict[holdings.Key, holdings.Held]:
        held = self._held.get(domain_id)
        if held is None:
            held = self._held[domain_id] = (
                self.memo.held(self.s, domain_id) if self.memo is not None
                else holdings.domain_usage(self.s, domain_id))
        return held

    def _count(self, a: Allocation, amounts, sign: int) -> None:
        held = self._held.get(a.domain_id)
        if held is None and self.memo is not None:
            held = self.memo.kept_held(a.domain_id)  # what the memo holds, unread by the pass
        if held is not None:
            holdings.count(held, a.user_id, a.project_id, a.domain_id, a.state, amounts, sign)

    def load_keypairs(self, queued: list[Allocation]) -> None:
        """The policy names of ``queued``'s keypairs, in one query (not one
        per keypair as the pass judges its requests)."""
        wanted = sorted({a.keypair for a in queued if a.keypair} - self._keypairs.keys())
        for at in range(0, len(wanted), KEYS_PER_QUERY):
            chunk = wanted[at:at + KEYS_PER_QUERY]
            found = dict(self.s.execute(select(Keypair.access_key, Keypair.resource_policy)
                                        .where(Keypair.access_key.in_(chunk))).all())
            for key in chunk:
                self._keypairs[key] = found.get(key)

    def policy(self, a: Allocation, user: User) -> PolicyRow | None:
        """The policy a queued request is judged by: its keypair's, else its user's."""
        name = None
        if a.keypair:
            if a.keypair not in self._keypairs:  # the first judged: the whole queue's
                self.load_keypairs([*self.queued, a])
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
            self._cluster = (self.memo.cluster(self.rg, self.running, ledger.cluster_state)
                             if self.memo is not None
                             else ledger.cluster_state(self.rg, self.running))
        return self._cluster

    # -- judging -------------------------------------------------------------------

    def snapshot(self, a: Allocation, amounts, user: User, project: Project,
                 policy: PolicyRow | None, now: dt.datetime) -> admission.Snapshot:
        """What ``ledger.Context.snapshot(now, exclude=a.id)`` would give."""
        domain = user.domain
        own = amounts if a.state == "pending" else None
        levels = ledger.limit_levels(user, project, policy, self._load(domain.id), own)
        if self._group is None:
            self._group = ledger.group_view(self.rg, True)
        accessible = ledger.may_use_group(user, project, self.rg, policy)
        return admission.Snapshot(now=now, levels=levels,
                                  group=dataclasses.replace(self._group, accessible=accessible),
                                  image=self.image(a.image, domain))

    # -- what the pass changed ---------------------------------------------------------

    def admitting(self, a: Allocation, amounts, placement=None) -> None:
        """Call before ``a`` turns from pending to allocated on ``placement``
        (the nodes then give it exactly what a new reading would subtract;
        None: read them again)."""
        self._count(a, amounts, -1)
        self._group = None
        if placement is not None and self._cluster is not None:
            self._cluster.apply(ledger.placement_request(amounts, a.gpu_models), placement)
        else:
            self._cluster = None
            if self.memo is not None:
                self.memo.forget_cluster(self.rg.id)

    def admitted(self, a: Allocation, amounts) -> None:
        """Call after ``a`` was admitted (its state is "allocated")."""
        self.running.append(batchmemo.Running.of(a))
        self._count(a, amounts, 1)

    def cancelling(self, a: Allocation) -> None:
        """Call before a pending ``a`` is cancelled."""
        self._count(a, slotlib.from_text(a.slots), -1)
