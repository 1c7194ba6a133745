"""The allocation ledger: the IO edge around admission and placement.

Every decision reads one snapshot and writes its result in ONE transaction
that holds the ledger lock (``db.ledger_transaction``), so two racing
requests can never both take the last GPU or pass a limit. The decisions
themselves are pure: ``admission.decide`` and the placement strategies of
``scheduling.placement``. The pending queue's pass is ``scheduling.queue``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import admission, batchmemo, groupcache, holdings, inventory, policycache, sessionaudit
from ..core import authz
from ..core import generations, images, rowinsert, rowupdate
from ..operations import usage_store
from ..sessions import registry
from ..storage import mounts
from ..tenancy import accounts, people
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import Conflict, Denied, Hidden, Invalid, NotFound
from ..core.models import Allocation, Project, ResourceGroup, User
from ..core.names import format_amount
from ..core.orm import aware, iso
from ..operations.reclaim import rules as reclaim_rules
from .groupview import cluster_state, group_view
from .placement import GPU_MILLI, ClusterState
from .placement import Request as PRequest
from .placement.placement import Decision as Placement

ACTIVE = holdings.ACTIVE
ZERO = Decimal(0)
THOUSAND = Decimal(1000)


# --- reading the world -----------------------------------------------------

def policy_of(s: Session, name: str) -> policycache.PolicyRow | None:
    """The policy ``name``'s columns (read-only), kept between transactions
    while nobody changes the policies (``policycache``)."""
    return generations.once(s, ("policy", name), policycache.TABLES,
                            lambda: policycache.policy(s, name))


def policy_limits(level: str, name: str,
                  pol: policycache.PolicyRow | None) -> admission.Limits:
    if pol is None:  # fail closed: a policy that does not exist allows nothing
        return admission.Limits(level, name, unspecified_limited=True, max_sessions=0)
    return admission.Limits(
        level=level,
        name=name,
        slots=slotlib.from_text(pol.total_resource_slots),
        unspecified_limited=pol.unspecified_limited,
        max_sessions=pol.max_concurrent_sessions,
        max_pending_sessions=pol.max_pending_sessions,
        max_pending_slots=slotlib.from_text(pol.max_pending_resource_slots),
        max_gpus_per_session=(Decimal(pol.max_gpus_per_session)
                              if pol.max_gpus_per_session is not None else None),
    )


def may_use_group(user: User, project: Project, rg: ResourceGroup,
                  pol: policycache.PolicyRow | None) -> bool:
    """Union of grants to the domain, the project and the user (Backend.AI),
    narrowed by the policy's allowed resource groups when it names any."""
    if not rg.active:
        return False
    if pol is not None and pol.allowed_resource_groups and rg.name not in pol.allowed_resource_groups:
        return False
    for g in rg.grants:
        if (g.domain_id == user.domain_id or g.project_id == project.id
                or g.user_id == user.id):
            return True
    return False


def placement_request(amounts: dict[str, Decimal], models: list[str]) -> PRequest:
    gpus = amounts.get("gpu", ZERO)
    shares = amounts.get("gpu.shares", ZERO)
    return PRequest(
        cpu=int(amounts.get("cpu", ZERO) * THOUSAND),
        mem=int(amounts.get("mem", ZERO)),
        num_gpu=int(gpus) if gpus else (1 if shares else 0),
        gpu_milli=GPU_MILLI if gpus else int(shares * THOUSAND),
        models=frozenset(models),
    )


# --- the snapshot of one request --------------------------------------------

def limit_levels(user: User, project: Project, policy: policycache.PolicyRow | None,
                 held: dict[holdings.Key, holdings.Held], minus: dict[str, Decimal] | None = None):
    """(limits, usage) of the user's policy, the project and the domain;
    ``held``: what the domain's levels hold (``holdings.domain_usage``);
    ``minus``: a pending request's own amounts, left out of the pending."""
    domain = user.domain

    def of(key: holdings.Key) -> admission.Usage:
        return held.get(key, holdings.Held()).usage(minus)

    u, p, d = holdings.keys(user.id, project.id, domain.id)
    return (
        (policy_limits("user", user.name, policy), of(u)),
        (admission.Limits(
            "project", project.name,
            slots=slotlib.from_text(project.total_resource_slots),
            max_sessions=project.max_concurrent_sessions), of(p)),
        (admission.Limits("domain", domain.name,
                          slots=slotlib.from_text(domain.total_resource_slots)), of(d)),
    )


class Context:
    """The rows one request is judged against, read in its transaction."""

    def __init__(self, s: Session, user: User, project: Project, rg: ResourceGroup,
                 policy_name: str, credential: str, image: str | None = None):
        self.user, self.project, self.rg = user, project, rg
        self.domain = user.domain
        self.image_name = image
        self.image = registry.facts(s, image, self.domain)
        self.policy = policy_of(s, policy_name)
        self.policy_name = policy_name
        self.credential = credential
        self.s = s
        memo = batchmemo.of(s)  # in a batch: read once, kept current by its writes
        if memo is not None:
            self.held = memo.held(s, self.domain.id)
            self.rg_running = memo.running(s, rg, running_in)
        else:
            self.held = holdings.domain_usage(s, self.domain.id)
            self.rg_running = running_in(s, rg)
        self._group: admission.Group | None = None
        self._memo = memo

    def cluster(self):
        """The group's nodes with what runs subtracted (in a batch: its
        memo's, kept current by the batch's admissions)."""
        if self._memo is not None:
            return self._memo.cluster(self.rg, self.rg_running, cluster_state)
        return cluster_state(self.rg, self.rg_running)

    def snapshot(self, now: dt.datetime, exclude: str | None = None) -> admission.Snapshot:
        held = self.held if exclude is None else holdings.domain_usage(self.s, self.domain.id,
                                                                   exclude)
        levels = limit_levels(self.user, self.project, self.policy, held)
        if self._group is None:  # the group's view is the same for every snapshot
            accessible = may_use_group(self.user, self.project, self.rg, self.policy)
            self._group = group_view(self.rg, accessible)
        return admission.Snapshot(now=now, levels=levels, group=self._group, image=self.image)


def running_in(s: Session, rg: ResourceGroup) -> list:
    """What the group's allocated sessions hold, as rows of the columns
    ``group_view``, ``cluster_state`` and the queue's order read (``node_id``,
    ``slots``, ``gpus``, ``user_id``; ``batchmemo.Running``): no ORM
    objects, which cost more to build than the decision."""
    return s.execute(select(Allocation.id, Allocation.node_id, Allocation.slots,
                            Allocation.gpus, Allocation.user_id).where(
        Allocation.resource_group_id == rg.id, Allocation.state == "allocated")).all()


def group_for_decision(s: Session, name: str) -> groupcache.GroupRow | None:
    """The resource group ``name`` with its grants, nodes and their devices,
    from memory unless they changed (``groupcache``)."""
    return groupcache.group(s, name)


#: the slots the spawn form offers and shows the remaining quota of
FORM_SLOTS = ("cpu", "mem", "gpu", "gpu.shares")


def spawn_choices(s: Session, user_name: str) -> dict:
    """What ``user_name`` may start now, for the hub's spawn form: per active
    project, the resource groups they may use and what their limits leave
    (user policy, project and domain together; ``None``: unlimited), and
    the images their domain may use with each image's minimum;
    ``domain_admin``: the user administers their domain (a user in no
    project is then told to make one, rather than whom to ask)."""
    p = accounts.principal_for_hub_user(s, user_name)
    user = s.scalar(select(User).where(User.name == user_name))
    domain = user.domain
    policy = policy_of(s, p.policy or user.resource_policy)
    held = holdings.domain_usage(s, domain.id)
    groups = list(s.scalars(select(ResourceGroup).order_by(ResourceGroup.name)))
    projects = []
    for project in s.scalars(select(Project).where(Project.domain_id == domain.id)
                             .order_by(Project.name)):
        if (domain.name, project.name) not in p.projects or not project.active:
            continue
        levels = limit_levels(user, project, policy, held)
        left = admission.remaining(levels, FORM_SLOTS)
        projects.append({
            "name": project.name,
            "resource_groups": [
                {"name": rg.name, "session_types": sorted(rg.session_types)}
                for rg in groups if may_use_group(user, project, rg, policy)],
            "remaining": {k: (None if v is None else format_amount(v)) for k, v in left.items()},
            "sessions_left": admission.sessions_left(levels),
        })
    # the form starts interactive and batch sessions: no inference image
    images_ = [{"name": i["name"], "min_slots": i["min_slots"]}
               for i in registry.list_images(s, p)
               if {"interactive", "batch"} & set(i["session_types"])]
    return {"user": user.name, "domain": domain.name, "domain_admin": p.administers(domain.name),
            "projects": projects, "images": images_}


def _lookup_request(s: Session, p: Principal, body) -> tuple[people.UserRow, people.ProjectRow,
                                                             groupcache.GroupRow]:
    user = people.user_named(s, p.name)
    if user is None:  # (gone since the caller was authenticated)
        raise Hidden(f"user {p.name!r} not found")
    domain = user.domain
    if (domain.name, body.project) not in p.projects:
        raise Hidden(f"project {domain.name}/{body.project} not found")
    project = people.project_named(s, domain.id, body.project)
    if project is None or not project.active:
        raise Invalid(f"project {body.project!r} is not active")
    rg = group_for_decision(s, body.resource_group)
    if rg is None or not may_use_group(user, project, rg,
                                       policy_of(s, p.policy or user.resource_policy)):
        # a missing group and one the caller may not use (another domain's) are
        # refused alike, dry runs too: the answer tells no group's existence
        reason = admission.no_access(body.resource_group)
        raise Invalid(reason.text, detail=[reason.as_dict()])
    if body.priority and not p.administers(user.domain.name):
        raise Denied("only an admin of your domain may set a priority")
    return user, project, rg


def admission_request(ctx: Context, amounts, session_type, queued: bool = False,
                      models=()):
    return admission.Request(
        user=ctx.user.name, keypair=None, project=ctx.project.name,
        domain=ctx.domain.name, resource_group=ctx.rg.name, slots=amounts,
        session_type=session_type, queued=queued, gpu_models=frozenset(models),
        image=ctx.image_name,
    )


def evaluate(ctx: Context, amounts, models, session_type, now, strategy,
             queued: bool = False, exclude: str | None = None):
    """(decision, placement or None) for one request, with no writes."""
    req = admission_request(ctx, amounts, session_type, queued, models)
    return judge(req, ctx.snapshot(now, exclude),
                 ctx.cluster, strategy, ctx.rg)


def judge(req: admission.Request, snap: admission.Snapshot, state, strategy,
          rg: ResourceGroup | None = None):
    """(decision, placement or None): admission, then placement on the
    cluster ``state()`` returns (asked only for an admitted request). ``rg``:
    the group, whose nodes say why a share waits when they cannot enforce it."""
    decision = admission.decide(req, snap)
    if decision.verdict != "admit":
        return decision, None
    cluster = state()
    preq = placement_request(req.slots, req.gpu_models)
    placement = strategy.choose(cluster, preq)
    if placement is None:
        return admission.waiting_for_capacity(req, snap, node_room(cluster, preq),
                                              unenforced_shares(rg, preq) if rg else ()), None
    return decision, placement


def is_share(preq: PRequest) -> bool:
    return preq.num_gpu == 1 and preq.gpu_milli < GPU_MILLI


def unenforced_shares(rg: ResourceGroup, preq: PRequest) -> tuple[str, ...]:
    """For a share: the group's nodes that take none because their shares
    cannot be enforced now, each with the reason (``node: reason``)."""
    if not is_share(preq):
        return ()
    return tuple(f"{n.name}: {n.share_check}" for n in sorted(rg.nodes, key=lambda n: n.name)
                 if n.schedulable and n.share_check and not n.shares_unenforced)


def node_room(cluster: ClusterState, preq: PRequest) -> tuple[dict[str, Decimal], ...]:
    """What each node that could hold ``preq`` (schedulable; for GPUs, an
    allowed model; for a share, one that takes shares) has free now, in
    slots: ``gpu`` whole free GPUs, ``gpu.shares`` the most free on one GPU."""
    out = []
    for n in cluster.nodes():
        if not n.schedulable or (preq.num_gpu and not preq.allows_model(n.gpu_model)):
            continue
        if is_share(preq) and not n.takes_shares:
            continue
        out.append({"cpu": Decimal(n.cpu_free) / THOUSAND, "mem": Decimal(n.mem_free),
                    "gpu": Decimal(sum(1 for f in n.gpu_free if f == GPU_MILLI)),
                    "gpu.shares": Decimal(max(n.gpu_free, default=0)) / THOUSAND})
    return tuple(out)


# --- models ------------------------------------------------------------------

def allocation_model(s: Session, a: Allocation, base_url: str = "/",
                     mount_paths: bool = False) -> dict:
    """The allocation as the API shows it; ``apps`` are the service ports of
    its image under the hub's ``base_url``, while it is allocated. The
    vfolder ``mounts`` carry host paths only for the hub (``mount_paths``)."""
    rg = groupcache.group_by_id(s, a.resource_group_id)
    node = groupcache.node_of(s, rg, a.node_id)
    user = people.user(s, a.user_id)
    project = people.project(s, a.project_id)
    apps = []
    if a.state == "allocated" and a.image:
        apps = images.session_apps(base_url, user.name, a.server_name,
                                   registry.service_ports(s, a.image))
    return {
        "id": a.id,
        "user": user.name,
        "domain": user.domain.name,
        "project": project.name,
        "resource_group": rg.name,
        "session_type": a.session_type,
        "slots": a.slots,
        "gpu_models": a.gpu_models,
        "state": a.state,
        "node": node.name if node else None,
        "backend_url": node.backend_url if node else None,
        "gpus": a.gpus,
        # how its node enforces GPU shares (mode, enforced, reason, the admin's mark)
        "shares": inventory.shares_model(node) if node else None,
        "reasons": a.reasons,
        "created_at": iso(a.created_at),
        "admitted_at": iso(a.admitted_at),
        "released_at": iso(a.released_at),
        "release_reason": a.release_reason,
        "origin": a.origin,
        "image": a.image,
        "server_name": a.server_name,
        "command": a.command,
        # an endpoint's replica: its endpoint and how it serves (model, argv, port)
        "endpoint": a.endpoint_id,
        "service": a.service,
        "apps": apps,
        "exit_code": a.exit_code,
        "ended_at": iso(a.ended_at),
        "log_purged_at": iso(a.log_purged_at),
        "mounts": list(a.mounts or []) if mount_paths else mounts.public(a.mounts or []),
        # whether folders can be mounted into it while it runs ("mount now")
        "live_mounts": bool(a.live_mounts),
        # the reclaim announced to the owner (idle reclamation), or None
        "reclaim": reclaim_rules.public(a.reclaim_notice, a.keeps or 0, aware(a.kept_until)),
    }


def placement_gpus(rg: groupcache.GroupRow, placement: Placement) -> list[dict]:
    """The GPUs of a placement: each device's index (placement counts
    positions in the node's device list, which need not start at 0 or be
    contiguous), its UUID ("" when unknown), the share, and the device memory
    the share may use (``floor(share * memory)`` bytes; 0 when the device's
    memory is unknown), which the spawner turns into the session's caps."""
    devices = _node(rg, placement.node).devices
    return [{"index": devices[i].index, "uuid": devices[i].uuid or "",
             "share": format_amount(Decimal(m) / THOUSAND),
             "memory": devices[i].memory * m // 1000}
            for i, m in placement.gpus]


def _node(rg: groupcache.GroupRow, name: str) -> groupcache.NodeRow:
    return rg.node(name)


def _node_id(rg: groupcache.GroupRow, name: str) -> int:
    return _node(rg, name).id


# --- the verbs ---------------------------------------------------------------

def submit(s: Session, p: Principal, body, now: dt.datetime, strategy, dry_run=False,
           origin: str = "api", base_url: str = "/", hosts=None,
           mount_paths: bool = False, via: sessionaudit.Via | None = None,
           replica: dict | None = None) -> dict:
    """Admit and place now, queue as pending, or refuse (Invalid with reasons).

    ``dry_run``: the same judgement, nothing written. ``hosts``: the vfolder
    storage hosts; given, the session's mounts are resolved (the folders
    ``body.vfolders`` names and every dot-folder; see ``mounts``) before
    anything is written. The access log gets ``session.start`` or
    ``session.queue`` (``via``: who asked, how; default the user).
    ``replica``: an endpoint's replica (``serving.replicaadmit``): its
    endpoint, its only mount (the model folder) and how it serves.
    """
    user, project, rg = _lookup_request(s, p, body)
    requested = list(getattr(body, "vfolders", None) or [])
    if replica is not None:
        session_mounts = replica["mounts"]
    elif hosts is not None:
        session_mounts = mounts.resolve(mounts.candidates(s, user, project, hosts), requested)
    elif requested:
        raise Invalid("vfolders: this request cannot mount vfolders")
    else:
        session_mounts = []
    amounts = dict(body.slots)
    ctx = Context(s, user, project, rg, p.policy or user.resource_policy, p.credential,
                  body.image)
    decision, placement = evaluate(ctx, amounts, body.gpu_models, body.session_type, now, strategy)
    memo = batchmemo.of(s)
    ahead = memo.blocking(s, rg, blocking_queue) if memo is not None else blocking_queue(s, rg)
    if placement is not None and ahead:
        # earlier requests wait for capacity: do not overtake them
        placement = None
        decision = admission.waiting_in_line(
            admission_request(ctx, amounts, body.session_type, models=body.gpu_models),
            ctx.snapshot(now), ahead)
    reasons = [r.as_dict() for r in decision.reasons]
    if dry_run:
        return {
            "verdict": decision.verdict,
            "fits_now": placement is not None,
            "node": placement.node if placement else None,
            "gpus": placement_gpus(rg, placement) if placement else [],
            "reasons": reasons,
        }
    if decision.verdict == "refuse":
        raise Invalid(decision.text, detail=reasons)
    a = Allocation(
        id=str(uuid.uuid4()), user_id=user.id, keypair=p.keypair, project_id=project.id,
        domain_id=user.domain_id, resource_group_id=rg.id, session_type=body.session_type,
        slots=slotlib.to_text(amounts), gpu_models=sorted(body.gpu_models),
        priority=body.priority, created_at=now, reasons=reasons, origin=origin,
        state="allocated" if placement else "pending",
        image=body.image, server_name=body.server_name, command=body.command,
        mounts=session_mounts,
        endpoint_id=replica["endpoint"] if replica else None,
        service=replica["service"] if replica else None,
    )
    if placement is not None:
        a.node_id = _node_id(rg, placement.node)
        a.gpus = placement_gpus(rg, placement)
        a.admitted_at = now
        a.reasons = []
    rowinsert.insert(s, a)  # one plain INSERT, not the ORM's unit of work
    if memo is not None:
        memo.added(a, rg.hol_passes)
        if placement is not None:
            memo.placed(rg.id, placement_request(amounts, body.gpu_models), placement)
    sessionaudit.started(s, a, now, via)
    return allocation_model(s, a, base_url, mount_paths)


def blocking_queue(s: Session, rg: ResourceGroup) -> int:
    """How many pending requests of the group still hold the head of the line."""
    pending = s.execute(select(Allocation.reasons).where(
        Allocation.resource_group_id == rg.id, Allocation.state == "pending",
        Allocation.passes < rg.hol_passes))
    return sum(1 for (reasons,) in pending if batchmemo.waits_for_the_group(reasons))


def visible_allocation(s: Session, p: Principal, alloc_id: str) -> Allocation:
    a = get_allocation(s, alloc_id)
    seen_by(s, p, a)
    return a


def seen_by(s: Session, p: Principal, a: Allocation) -> people.UserRow:
    """The owner of ``a``, if ``p`` may see it (else Hidden: not found)."""
    owner = people.user(s, a.user_id)
    if owner is None or not authz.can_see_user(p, owner.name, owner.domain.name):
        raise Hidden(f"allocation {a.id!r} not found")
    return owner


def get_allocation(s: Session, alloc_id: str) -> Allocation:
    a = s.get(Allocation, alloc_id)
    if a is None:
        raise NotFound(f"allocation {alloc_id!r} not found")
    return a


def release(s: Session, p: Principal, alloc_id: str, now: dt.datetime, reason: str,
            base_url: str = "/", via: sessionaudit.Via | None = None) -> dict:
    """End an allocation the caller may see (or cancel a pending one). Idempotent.

    An allocation held by a hub server is released by the hub when the server
    stops; through the API it would free a GPU the server still uses."""
    a = visible_allocation(s, p, alloc_id)
    releasable(a)
    return release_allocation(s, a, now, reason, base_url=base_url, via=via)


def releasable(a: Allocation) -> None:
    """Refuse to end, through the API, what a running hub server holds."""
    if a.origin == "hub" and a.state == "allocated":
        raise Conflict("this allocation belongs to a running server: stop the server instead")


def release_allocation(s: Session, a: Allocation, now: dt.datetime, reason: str,
                       exit_code: int | None = None, base_url: str = "/",
                       mount_paths: bool = False, via: sessionaudit.Via | None = None,
                       model: bool = True) -> dict | None:
    """End an allocation exactly once: a session that ran is released (it
    ended now, with ``exit_code`` when the spawner knows it), a pending one
    cancelled. Releasing it again changes nothing and answers the same (its
    model; None without ``model``).
    A session the reclaim pass stopped ends for the rule that stopped it,
    whoever releases it (its spawner says only "stopped"). The access log
    gets ``session.end``, saying how (``sessionaudit.ending``)."""
    if a.state in ACTIVE:
        was = a.state
        values = {"state": "cancelled", "released_at": now, "release_reason": (
            (a.reclaim_notice or {}).get("reclaim_reason") or reason)[:255]}
        if was == "allocated":
            values.update(state="released", ended_at=now, exit_code=exit_code)
        rowupdate.update(s, a, values)  # (one UPDATE, no unit of work)
        if was == "allocated":
            usage_store.record(s, a)  # the usage record's interval
        memo = batchmemo.of(s)
        if memo is not None:
            memo.removed(a, was)
        sessionaudit.ended(s, a, was, reason, now, via)
    return allocation_model(s, a, base_url, mount_paths) if model else None


# --- the hub -----------------------------------------------------------------

@dataclass(frozen=True)
class Reconciled:
    """What one reconciliation with the hub did."""

    released: list[str]
    #: when an allocation spared for being too young leaves its grace:
    #: reconcile again then (None: nothing is waiting to be confirmed)
    recheck_at: dt.datetime | None = None


def reconcile(s: Session, held: frozenset[str], as_of: dt.datetime, grace: float,
              now: dt.datetime, pending_servers: frozenset[tuple[str, str]] = frozenset(),
              ) -> Reconciled:
    """Release hub-held allocations that no hub server holds any more (the
    server died or was removed while the hub or the service was down).

    ``held`` is what the hub's servers reported at ``as_of``;
    ``pending_servers`` the (user, server name) of servers the hub lists as
    pending, which hold the allocations of that name too (a spawn whose
    allocation the spawner has not recorded yet). Allocations made less than
    ``grace`` seconds before ``as_of`` are left alone, their spawner may not
    have recorded them yet: ``recheck_at`` says when to look again."""
    released: list[str] = []
    recheck: dt.datetime | None = None
    rows = s.execute(select(Allocation, User.name).join(User, User.id == Allocation.user_id)
                     .where(Allocation.origin == "hub", Allocation.state.in_(ACTIVE)))
    for a, user in rows:
        if a.id in held:
            continue
        created = aware(a.created_at)
        due = unheld_check_due(created, (user, a.server_name) in pending_servers, as_of, grace)
        if due is None:
            age = (as_of - created).total_seconds()
            release_allocation(s, a, now, f"no hub server holds it (reconciled {age:.0f} s "
                               "after it was made)")
            released.append(a.id)
            continue
        recheck = due if recheck is None else min(recheck, due)
    return Reconciled(released, recheck)


def unheld_check_due(created: dt.datetime, starting: bool, as_of: dt.datetime,
                     grace: float) -> dt.datetime | None:
    """A live hub allocation no hub server held at ``as_of``: None when it
    is to be released (no server holds it and it is older than ``grace``),
    else when to look again (it is younger, or ``starting``: a pending
    server of its name holds it until ``grace`` after ``as_of``). Pure."""
    if starting:
        return max(created, as_of) + dt.timedelta(seconds=grace)
    if created < as_of - dt.timedelta(seconds=grace):
        return None
    return created + dt.timedelta(seconds=grace)


def reconcile_hub(s: Session, held: frozenset[str], as_of: dt.datetime, grace: float,
                  now: dt.datetime) -> list[str]:
    """``reconcile``'s released ids."""
    return reconcile(s, held, as_of, grace, now).released
