"""The Model Store: model folders an admin published, each a
card read from its ``model-definition.yaml``, deployed by a user in one
call as an endpoint whose replicas mount the published folder read-only at
``/models`` (no clone).

Who may do what is ``core/authz.py``: a superadmin publishes to every
domain, a domain admin to their domain, a folder they may read. The
folder's owner keeps every right they had (they may still change its
files: the next replica reads what is there then). A deploy reaches the
folder through the publication (``folders.access_published``), only as
the replicas' read-only mount of an endpoint deployed from the entry: the
user gets no other access to the folder (no listing, download or mount in
a Jupyter session unless they had it before). Unpublishing is refused
(409, naming them) while endpoints deployed from the entry exist.

An IO edge: ORM over the handler's session and the folder's definition
file; the card's rules are ``storecard``, an endpoint's checks ``checks``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from types import SimpleNamespace

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import checks, endpoints, modeldef, storecard
from ..core import authz, images, names
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import ApiError, Conflict, Hidden, Invalid
from ..core.foldermodels import VFolder
from ..core.models import Domain, Image, Project
from ..core.orm import flush, iso
from ..core.servingmodels import Endpoint
from ..core.storemodels import StoreDeployment, StoreModel
from ..sessions import registry
from ..storage import folders

ID_LENGTH = 32


def _domain_name(s: Session, e: StoreModel) -> str | None:
    return None if e.domain_id is None else s.get(Domain, e.domain_id).name


def entry_model(s: Session, e: StoreModel, p: Principal) -> dict:
    """One entry as the API shows it; ``can_manage``: whether ``p`` may
    change or unpublish it (the page shows the buttons by it)."""
    domain = _domain_name(s, e)
    folder = s.get(VFolder, e.folder_id)
    return {"id": e.id, "name": e.name, "domain": domain,
            "folder": {"id": e.folder_id, "name": folder.name if folder else None,
                       "available": folder is not None and folder.status == "active"},
            "image": e.image, "slots": e.slots, "card": e.card,
            "published_by": e.published_by, "published_at": iso(e.published_at),
            "updated_at": iso(e.updated_at),
            "can_manage": authz.can_see_store_model(p, domain) and _may_publish(p, domain)}


def _may_publish(p: Principal, domain: str | None) -> bool:
    try:
        authz.require_publish_store_model(p, domain)
    except ApiError:
        return False
    return True


def find(s: Session, p: Principal, entry_id: str) -> tuple[StoreModel, str | None]:
    """The entry and its domain (None: every domain); Hidden for one the
    caller may not see."""
    e = s.get(StoreModel, entry_id) if len(entry_id) == ID_LENGTH else None
    if e is None:
        raise Hidden(f"model {entry_id[:40]!r} not found")
    domain = _domain_name(s, e)
    authz.require_see_store_model(p, domain, entry_id)
    return e, domain


def list_entries(s: Session, p: Principal) -> list[dict]:
    rows = s.scalars(select(StoreModel).order_by(StoreModel.name, StoreModel.id))
    out = []
    for e in rows:
        if authz.can_see_store_model(p, _domain_name(s, e)):
            out.append(entry_model(s, e, p))
    return out


def get(s: Session, p: Principal, entry_id: str) -> dict:
    return entry_model(s, find(s, p, entry_id)[0], p)


# --- publish and change ----------------------------------------------------------

def _read(acc: folders.FolderAccess, problems: list[dict]) -> modeldef.ModelDefinition | None:
    """The folder's definition, or None with its problems added (field paths
    as an endpoint's validate names them)."""
    out = checks.Checked()
    checks.check_folder(None, None, acc.folder_id, None, out, lambda: acc)
    problems += [x | {"field": "folder"} if x["field"] == "model_folder" else x
                 for x in out.problems]
    if out.problems:
        return None
    return modeldef.parse(checks.read_definition(acc.root))


def _image_problems(s: Session, image: str, domain: str | None,
                    slots: dict | None) -> list[dict]:
    """Registered, usable in the entry's scope (every domain: an image with
    no domain list), one that runs inference sessions, and the slots at
    least its minimum."""
    dom = None if domain is None else s.scalar(select(Domain).where(Domain.name == domain))
    img = s.scalar(select(Image).where(Image.name == image))
    where = "every domain" if domain is None else f"domain {domain!r}"
    if img is None or not (registry.usable(img, dom) if dom is not None else not img.domains):
        return [{"field": "image", "message": f"image {image!r} is not registered or not "
                 f"allowed in {where}"}]
    types = sorted(images.session_types(img.labels))
    if checks.INFERENCE not in types:
        return [{"field": "image", "message": f"image {image} does not run "
                 f"{checks.INFERENCE} sessions (it runs: {', '.join(types)})"}]
    out = []
    for slot, minimum in sorted(slotlib.from_text(img.min_slots).items()):
        if slots is not None and slots.get(slot, 0) < minimum:
            out.append({"field": f"slots.{slot}", "message": f"image {image} needs at least "
                        f"{slot} {minimum} (one replica of this model asks for "
                        f"{slots.get(slot, 0)})"})
    return out


def _fill(s: Session, e: StoreModel, acc, image: str, slots, domain: str | None,
          now: dt.datetime) -> None:
    """Read the definition, check the image and the slots, set the card and
    the slots of ``e``; Invalid (422) with every problem."""
    problems: list[dict] = []
    d = _read(acc, problems)
    chosen = slots
    if d is not None:
        e.card = storecard.card(d)
        defaults, wrong = storecard.default_slots(d)
        if chosen is None:
            problems += wrong
            chosen = defaults
            if defaults is None and not wrong:
                problems.append({"field": "slots", "message": "required: the definition's "
                                 "metadata gives no min_resource"})
    problems += _image_problems(s, image, domain, chosen)
    if problems:
        raise Invalid("the model cannot be published: " + "; ".join(
            f"{x['field']}: {x['message']}" for x in problems), detail=problems)
    e.image, e.slots, e.updated_at = image, slotlib.to_text(chosen), now


def publish(s: Session, p: Principal, body, hosts, now: dt.datetime) -> dict:
    """A new entry (201), or Invalid (422) with every problem; 409 when the
    folder is already published to that scope."""
    domain = body.domain
    if domain is not None and s.scalar(select(Domain).where(Domain.name == domain)) is None:
        raise Hidden(f"domain {domain!r} not found")
    authz.require_publish_store_model(p, domain)
    try:
        acc = folders.access(s, p, body.folder, "read", hosts)
    except ApiError as err:
        raise Invalid(f"folder: {err.message}",
                      detail=[{"field": "folder", "message": err.message}]) from None
    name = body.name or acc.name
    try:
        names.check_entity_name(name)
    except ValueError as err:
        raise Invalid(f"name: {err} (the folder's name is not a usable endpoint name: "
                      "give `name`)", detail=[{"field": "name", "message": str(err)}]) from None
    domain_id = None if domain is None else s.scalar(
        select(Domain.id).where(Domain.name == domain))
    taken = (f"vfolder {acc.name!r} is already published to "
             + ("every domain" if domain is None else f"domain {domain!r}"))
    # (a unique key does not hold for every domain's NULL: asked here too)
    if s.scalar(select(StoreModel.id).where(StoreModel.folder_id == acc.folder_id,
                                            StoreModel.domain_id.is_(None) if domain is None
                                            else StoreModel.domain_id == domain_id)):
        raise Conflict(taken)
    e = StoreModel(id=uuid.uuid4().hex, folder_id=acc.folder_id, domain_id=domain_id,
                   name=name, published_by=p.name, published_at=now)
    _fill(s, e, acc, body.image, body.slots, domain, now)
    s.add(e)
    flush(s, taken)
    return entry_model(s, e, p)


def update(s: Session, p: Principal, entry_id: str, body, hosts, now: dt.datetime) -> dict:
    """Change the image, the slots or the name; the card is read again from
    the folder (its definition may have changed)."""
    e, domain = find(s, p, entry_id)
    authz.require_manage_store_model(p, domain, entry_id)
    try:
        acc = folders.access_published(s, e.folder_id, hosts)
    except ApiError as err:
        raise Conflict(err.message) from None
    if body.name is not None:
        e.name = body.name
    _fill(s, e, acc, body.image or e.image,
          body.slots if body.slots is not None else slotlib.from_text(e.slots), domain, now)
    s.flush()
    return entry_model(s, e, p)


def unpublish(s: Session, p: Principal, entry_id: str) -> str | None:
    """Remove an entry (its folder stays as it is); 409 while endpoints
    deployed from it exist, naming them. Its domain."""
    e, domain = find(s, p, entry_id)
    authz.require_manage_store_model(p, domain, entry_id)
    used = s.execute(select(Project, Endpoint).join(
        StoreDeployment, StoreDeployment.endpoint_id == Endpoint.id)
        .join(Project, Project.id == Endpoint.project_id)
        .where(StoreDeployment.store_model_id == e.id).order_by(Project.name, Endpoint.name))
    named = [f"{proj.domain.name}/{proj.name}/{ep.name}" for proj, ep in used]
    if named:
        raise Conflict(f"model {e.name!r} is used by {len(named)} endpoint(s): "
                       f"{', '.join(named)}; delete them first", detail=named)
    s.delete(e)
    s.flush()
    return domain


# --- check and deploy ------------------------------------------------------------

def _endpoint_body(e: StoreModel, body):
    """A deploy as the endpoint create it is (``checks`` reads these fields)."""
    return SimpleNamespace(name=body.name or e.name, project=body.project,
                           resource_group=body.resource_group, image=e.image,
                           model_folder=e.folder_id, slots=slotlib.from_text(e.slots),
                           replicas=body.replicas, public=False)


def _through_publication(s: Session, e: StoreModel, hosts):
    return lambda: folders.access_published(s, e.folder_id, hosts)


def check(s: Session, p: Principal, entry_id: str, body, hosts, now: dt.datetime) -> dict:
    """The checks of a deploy for the caller, nothing written: the same
    answer as ``POST endpoints/validate`` (``ok``, ``problems`` by field,
    ``warnings``, ``definition``) and what would be made (``endpoint``)."""
    e, _ = find(s, p, entry_id)
    spec = _endpoint_body(e, body)
    found = checks.check(s, p, spec, hosts, now, _through_publication(s, e, hosts))
    return {"ok": not found.problems, "problems": found.problems,
            "warnings": found.warnings, "definition": found.definition,
            "endpoint": {"name": spec.name, "project": spec.project,
                         "resource_group": spec.resource_group, "image": spec.image,
                         "slots": e.slots, "replicas": spec.replicas}}


def deploy(s: Session, p: Principal, entry_id: str, body, hosts, now: dt.datetime) -> dict:
    """An endpoint of the caller over the published folder (``provisioning``),
    recording the entry; Invalid (422) with every problem of the check."""
    e, _ = find(s, p, entry_id)
    return endpoints.create(s, p, _endpoint_body(e, body), hosts, now,
                            _through_publication(s, e, hosts), store_model=e.id)


def replica_folder(s: Session, p: Principal, e: Endpoint, hosts) -> folders.FolderAccess:
    """The model folder a replica of ``e`` mounts, as ``p`` (its creator)
    reaches it: through the publication for an endpoint deployed from the
    store while its creator may still see the entry, else their own read."""
    entry_id = s.scalar(select(StoreDeployment.store_model_id)
                        .where(StoreDeployment.endpoint_id == e.id))
    if entry_id is not None:
        entry = s.get(StoreModel, entry_id)
        if entry.folder_id == e.model_folder and authz.can_see_store_model(
                p, _domain_name(s, entry)):
            return folders.access_published(s, e.model_folder, hosts)
    return folders.access(s, p, e.model_folder, "read", hosts)
