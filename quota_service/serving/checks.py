"""The checks an endpoint passes before it is made (``POST endpoints/validate``
runs them and writes nothing; ``POST endpoints`` runs them and refuses with
every problem): the project, the name, the resource group, the image, the
model folder and its ``model-definition.yaml``, whether the replicas fit
the limits that bind the replicas' owner, and whether one replica fits a
node of the group (``warnings``: what lets replicas wait, refusing nothing).

An IO edge: it reads the database (one session) and the model folder's
definition file. The rules themselves are ``modeldef`` and ``fit``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import fit, modeldef
from ..core import authz
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import ApiError, Hidden
from ..core.models import Allocation, Domain, Project, ResourceGroup, User
from ..core.servingmodels import Endpoint
from ..scheduling import admission, groupview, holdings, ledger
from ..sessions import registry
from ..storage import folders

DEFINITION_FILE = "model-definition.yaml"
#: the session type of an endpoint's replicas
INFERENCE = "inference"


@dataclass
class Checked:
    """What the checks found: the rows a create writes against, the problems."""

    problems: list[dict] = field(default_factory=list)
    #: what does not refuse the endpoint but keeps replicas waiting
    warnings: list[dict] = field(default_factory=list)
    definition: dict | None = None
    domain: Domain | None = None
    project: Project | None = None
    rg: ResourceGroup | None = None
    folder_name: str | None = None

    def add(self, where: str, message: str) -> None:
        self.problems.append({"field": where, "message": message})


def read_definition(root: Path) -> bytes:
    """The definition file of a folder: a regular file, no symlink followed
    (a link could reach outside the folder), at most MAX_BYTES + 1 read."""
    fd = os.open(root / DEFINITION_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(f"{DEFINITION_FILE} is not a regular file")
        with os.fdopen(fd, "rb") as f:
            fd = -1
            return f.read(modeldef.MAX_BYTES + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def definition_model(d: modeldef.ModelDefinition) -> dict:
    """A definition as the API shows it (the parts a caller decides by)."""
    out = []
    for m in d.models:
        svc = m.service
        meta = m.metadata
        out.append({
            "name": m.name, "model_path": m.model_path, "servable": svc is not None,
            "port": svc.port if svc else None,
            "start_command": list(svc.argv) if svc else None,
            "methods": list(svc.methods) if svc else None,  # what e/<id>/ passes on
            "paths": list(svc.allowed_paths) if svc else None,
            "health_check": None if svc is None or svc.health_check is None else {
                "path": svc.health_check.path,
                "interval": str(svc.health_check.interval),
                "max_retries": svc.health_check.max_retries,
                "expected_status_code": svc.health_check.expected_status_code,
                "initial_delay": str(svc.health_check.initial_delay)},
            "title": meta.title if meta else None,
            "task": meta.task if meta else None,
        })
    return {"models": out}


def check_folder(s: Session, p: Principal, folder_id: str, hosts, out: Checked,
                 access=None) -> None:
    """``access``: how the folder is reached (default: the caller's own read
    permission; a Model Store deploy reaches it through the publication)."""
    try:
        acc = (access or (lambda: folders.access(s, p, folder_id, "read", hosts)))()
    except ApiError as e:
        out.add("model_folder", e.message)
        return
    out.folder_name = acc.name
    try:
        raw = read_definition(acc.root)
    except FileNotFoundError:
        out.add("model_folder", f"vfolder {acc.name!r} holds no {DEFINITION_FILE} at its top")
        return
    except OSError:
        out.add("model_folder", f"{DEFINITION_FILE} of vfolder {acc.name!r} is not a "
                "regular file (a link or a directory)")
        return
    try:
        d = modeldef.parse(raw)
    except modeldef.ModelDefinitionError as e:
        for problem in e.detail():
            where = problem["field"]
            out.add(f"{DEFINITION_FILE}:{where}" if where else DEFINITION_FILE,
                    problem["message"])
        return
    out.definition = definition_model(d)
    if not d.servable():
        out.add(DEFINITION_FILE, "no model has a service: nothing says how to serve it")


def check_image(s: Session, p: Principal, body, out: Checked, now) -> None:
    """Registered, allowed for the domain, an image that runs inference
    sessions, and one replica at least its minimum (admission's own image
    rule)."""
    facts = registry.facts(s, body.image, out.domain)
    if facts is None or not facts.usable:
        out.add("image", f"image {body.image!r} is not registered or not allowed in domain "
                f"{out.domain.name!r}")
        return
    req = admission.Request(user=p.name, keypair=None, project=body.project,
                            domain=out.domain.name, resource_group=body.resource_group,
                            slots=dict(body.slots), image=body.image,
                            session_type=INFERENCE)
    snap = admission.Snapshot(now=now, levels=(), group=None, image=facts)
    for reason in admission.check_image(req, snap):
        out.add(f"slots.{reason.slot}" if reason.slot else "image", reason.text)


def check_group(rg: ResourceGroup, body, out: Checked) -> None:
    """The group runs inference sessions, and one replica fits one of its
    nodes (``fit.capacity``: problems and warnings)."""
    if INFERENCE not in rg.session_types:
        out.add("resource_group", f"resource group {rg.name} does not run {INFERENCE} "
                f"sessions (it runs: {', '.join(sorted(rg.session_types))})")
        return
    nodes = [fit.NodeRoom(n.name, groupview.node_capacity(n), n.schedulable)
             for n in rg.nodes]
    problems, warnings = fit.capacity(rg.name, dict(body.slots), body.replicas, nodes)
    out.problems += problems
    out.warnings += warnings


def fit_problems(s: Session, user: User, policy_name: str, project: Project,
                 slots: dict[str, Decimal], replicas: int) -> list[dict]:
    """Whether ``replicas`` x ``slots`` fit what ``user``'s limits leave in
    ``project`` (their policy, the project, the domain: as the spawn form's
    "remaining", ``ledger.spawn_choices``)."""
    return fit.problems(slots, replicas, *room_left(s, user, policy_name, project, slots))


def held_replicas(s: Session, e: Endpoint) -> int:
    """How many of ``e``'s replicas hold a session now (its pending and
    allocated allocations): what the creator's ``room_left`` counts already."""
    return len(s.scalars(select(Allocation.id).where(
        Allocation.endpoint_id == e.id, Allocation.state.in_(ledger.ACTIVE))).all())


def scale_problems(s: Session, e: Endpoint, project: Project, replicas: int,
                   caller: str | None = None) -> list[dict]:
    """Whether ``e`` may have ``replicas`` replicas under its creator's limits
    (whoever asks: the replicas are the creator's sessions). The replicas
    that run or wait already are counted once: in what the limits leave,
    not again among the asked ones. The messages name whose limits."""
    owner = s.scalar(select(User).where(User.name == e.created_by))
    if owner is None:
        return []
    slots = slotlib.from_text(e.slots)
    return fit.problems(slots, replicas,
                        *room_left(s, owner, owner.resource_policy, project, slots),
                        held=held_replicas(s, e), whose=fit.whose_limits(e.created_by, caller))


def room_left(s: Session, user: User, policy_name: str, project: Project,
              slots: dict[str, Decimal]) -> tuple[dict, int | None]:
    """What ``user``'s limits leave in ``project`` of each of ``slots``, and of
    sessions (``fit.problems``' last two arguments), read once."""
    held = holdings.domain_usage(s, project.domain_id)
    levels = ledger.limit_levels(user, project, ledger.policy_of(s, policy_name), held)
    return admission.remaining(levels, tuple(slots)), admission.sessions_left(levels)


def check(s: Session, p: Principal, body, hosts, now, access=None) -> Checked:
    """Every check of an endpoint ``body`` (an ``EndpointCreate``), nothing
    written; ``access`` as ``check_folder``'s."""
    out = Checked()
    out.domain = s.scalar(select(Domain).where(Domain.name == p.domain))
    user = s.scalar(select(User).where(User.name == p.name))
    # a project the caller may not create in is refused, not listed: 404
    # (hidden or missing, alike) or 403, as allocations are
    project = s.scalar(select(Project).where(Project.domain_id == out.domain.id,
                                             Project.name == body.project))
    if project is None:
        raise Hidden(f"project '{p.domain}/{body.project}' not found")
    authz.require_create_endpoint(p, p.domain, body.project)
    if not project.active:
        out.add("project", f"project {body.project!r} is not active")
    else:
        out.project = project
    if body.public:
        try:
            authz.require_set_endpoint_public(p, p.domain)
        except ApiError as e:
            out.add("public", e.message)
    policy_name = p.policy or user.resource_policy
    if out.project is not None:
        if s.scalar(select(Endpoint.id).where(Endpoint.project_id == out.project.id,
                                              Endpoint.name == body.name)):
            out.add("name", f"project {body.project!r} has an endpoint named {body.name!r}")
        rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == body.resource_group))
        if rg is None or not ledger.may_use_group(user, out.project, rg,
                                                  ledger.policy_of(s, policy_name)):
            out.add("resource_group", admission.no_access(body.resource_group).text)
        else:
            out.rg = rg
            check_group(rg, body, out)
        out.problems += fit_problems(s, user, policy_name, out.project, dict(body.slots),
                                     body.replicas)
    check_image(s, p, body, out, now)
    check_folder(s, p, body.model_folder, hosts, out, access)
    return out
