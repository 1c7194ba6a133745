"""The image registry: which images exist, what they run and who may use them.

Same shape as ``scheduling.inventory``: functions over one session and the caller,
plain dicts out, refusals as ApiErrors. Everybody lists the images their
domain may use (``images.usable_by``); an image one's domain may not use is
answered like one that does not exist (404). Writes are for superadmins.
Scans (``dockerscan``) report what Docker hosts hold; ``apply_scan``
records it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..scheduling import admission
from ..core import images
from ..core import authz
from ..core.authz import Principal
from ..core.errors import ApiError, Conflict, Hidden, Invalid, NotFound
from ..core.models import Domain, Image
from ..core.schemas import changes
from ..core.orm import flush, iso


class BadLabel(ApiError):
    """A label of an image given through the API cannot be used (400)."""

    status = 400
    reason = "bad-label"


def image_model(img: Image) -> dict:
    return {
        "name": img.name,
        "labels": img.labels,
        "min_slots": img.min_slots,
        "service_ports": img.service_ports,
        #: what it runs (from its marker labels: ``images.session_types``)
        "session_types": list(images.session_types(img.labels)),
        "domains": img.domains,
        "source": img.source,
        "created_at": iso(img.created_at),
        "updated_at": iso(img.updated_at),
    }


def _caller_domain(s: Session, p: Principal) -> Domain:
    return s.scalar(select(Domain).where(Domain.name == p.domain))


def usable(img: Image, domain: Domain) -> bool:
    return images.usable_by(img.name, img.domains, domain.name, domain.allowed_images)


def can_see(s: Session, p: Principal, img: Image) -> bool:
    return p.is_superadmin or usable(img, _caller_domain(s, p))


def _image(s: Session, p: Principal, name: str) -> Image:
    img = s.scalar(select(Image).where(Image.name == name))
    if img is None:
        raise (NotFound if p.is_superadmin else Hidden)(f"image {name!r} not found")
    if not can_see(s, p, img):
        raise Hidden(f"image {name!r} not found")
    return img


def list_images(s: Session, p: Principal) -> list[dict]:
    rows = s.scalars(select(Image).order_by(Image.name))
    if p.is_superadmin:
        return [image_model(i) for i in rows]
    domain = _caller_domain(s, p)
    return [image_model(i) for i in rows if usable(i, domain)]


def get_image(s: Session, p: Principal, name: str) -> dict:
    return image_model(_image(s, p, name))


def _check_domains(s: Session, names: list[str]) -> list[str]:
    known = set(s.scalars(select(Domain.name).where(Domain.name.in_(names))))
    missing = sorted(set(names) - known)
    if missing:
        raise Invalid(f"domains: no domain named {', '.join(map(repr, missing))}")
    return sorted(set(names))


def spec_of_body_labels(labels: dict[str, str]) -> images.ImageSpec:
    """The labels of an API body: only ``ai.hubgrid.*`` ones, all usable."""
    foreign = sorted(k for k in labels if not k.startswith(images.LABEL_PREFIX))
    if foreign:
        raise BadLabel(f"label {foreign[0]!r}: only {images.LABEL_PREFIX}* labels are kept")
    try:
        return images.parse_labels(labels)
    except images.LabelError as e:
        raise BadLabel(str(e)) from None


def create_image(s: Session, p: Principal, body, now: dt.datetime) -> dict:
    authz.require_superadmin(p, "add images")
    spec = spec_of_body_labels(body.labels)
    if s.scalar(select(Image.id).where(Image.name == body.name)) is not None:
        raise Conflict(f"image {body.name!r} already exists")
    img = Image(
        name=body.name, labels=dict(spec.labels), source="api",
        min_slots=body.min_slots if body.min_slots is not None else dict(spec.min_slots),
        service_ports=body.service_ports if body.service_ports is not None else spec.ports,
        domains=_check_domains(s, body.domains), created_at=now, updated_at=now,
    )
    s.add(img)
    flush(s, f"image {body.name!r} already exists")
    return image_model(img)


def update_image(s: Session, p: Principal, name: str, body, now: dt.datetime) -> dict:
    img = _image(s, p, name)
    authz.require_superadmin(p, "change images")
    change = changes(body)
    if "domains" in change:
        change["domains"] = _check_domains(s, change["domains"])
    for key, value in change.items():
        setattr(img, key, value)
    if change:
        img.updated_at = now
    s.flush()
    return image_model(img)


def delete_image(s: Session, p: Principal, name: str) -> None:
    """Remove an image from the registry. Sessions running it go on; their
    allocations keep its name; new sessions may no longer ask for it."""
    img = _image(s, p, name)
    authz.require_superadmin(p, "remove images")
    s.delete(img)
    s.flush()


# --- what admission and the allocation model read ------------------------------

def facts(s: Session, name: str | None, domain: Domain) -> admission.ImageFacts | None:
    """The registry entry of ``name`` for a request of ``domain`` (None: none)."""
    if name is None:
        return None
    img = s.scalar(select(Image).where(Image.name == name))
    if img is None:
        return None
    return admission.ImageFacts(
        name=img.name,
        min_slots={k: Decimal(v) for k, v in img.min_slots.items()},
        usable=usable(img, domain),
        session_types=frozenset(images.session_types(img.labels)),
    )


def service_ports(s: Session, name: str | None) -> list[dict]:
    if name is None:
        return []
    img = s.scalar(select(Image).where(Image.name == name))
    return list(img.service_ports) if img is not None else []


# --- scans ---------------------------------------------------------------------

@dataclass
class ScanReport:
    """What one scan found and did; ``hosts``: one entry per Docker host."""

    hosts: list[dict] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"hosts": self.hosts, "added": self.added, "updated": self.updated,
                "unchanged": self.unchanged, "skipped": self.skipped}

    @property
    def summary(self) -> str:
        failed = [h["url"] for h in self.hosts if not h["ok"]]
        text = (f"{len(self.hosts)} host(s), added {len(self.added)}, updated "
                f"{len(self.updated)}, unchanged {len(self.unchanged)}, skipped {len(self.skipped)}")
        return text + (f"; unreachable: {', '.join(failed)}" if failed else "")


def plan_scan(found: dict[str, list[dict]]) -> tuple[dict[str, images.ImageSpec], list[dict]]:
    """From ``{host url: [{"name", "labels"}]}``, the images to record (by
    name) and the ones to skip with the reason. Pure.

    Skipped: a name that is not ``repository:tag``, malformed labels, and a
    name whose labels differ between hosts (which one would be right?)."""
    seen: dict[str, list[tuple[str, dict]]] = {}
    for url, found_images in found.items():
        for item in found_images:
            seen.setdefault(item["name"], []).append((url, images.hubgrid_labels(item["labels"])))
    specs: dict[str, images.ImageSpec] = {}
    skipped: list[dict] = []
    for name, where in sorted(seen.items()):
        try:
            images.check_name(name)
        except ValueError as e:
            skipped.append({"name": name, "reason": str(e)})
            continue
        variants = {tuple(sorted(labels.items())) for _url, labels in where}
        if len(variants) > 1:
            hosts = ", ".join(sorted({url for url, _ in where}))
            skipped.append({"name": name, "reason": f"its labels differ between hosts {hosts}"})
            continue
        try:
            specs[name] = images.parse_labels(where[0][1])
        except images.LabelError as e:
            skipped.append({"name": name, "reason": str(e)})
    return specs, skipped


def apply_scan(s: Session, found: dict[str, list[dict]], errors: dict[str, str],
               now: dt.datetime) -> ScanReport:
    """Record what a scan found. New images are added (source ``scan``, usable
    by every domain); an image a scan added before is updated when its labels
    changed (its ``domains`` stay as an admin set them); an image added
    through the API is never changed by a scan. Scans never remove images (a
    host that is down would take its images with it)."""
    report = ScanReport()
    for url in sorted(set(found) | set(errors)):
        if url in errors:
            report.hosts.append({"url": url, "ok": False, "error": errors[url]})
        else:
            report.hosts.append({"url": url, "ok": True, "images": len(found[url])})
    specs, report.skipped = plan_scan(found)
    for name, spec in specs.items():
        img = s.scalar(select(Image).where(Image.name == name))
        if img is None:
            s.add(Image(name=name, labels=dict(spec.labels), min_slots=dict(spec.min_slots),
                        service_ports=spec.ports, domains=[], source="scan",
                        created_at=now, updated_at=now))
            report.added.append(name)
        elif img.source != "scan":
            report.skipped.append({"name": name, "reason": "added through the API; "
                                   "scans do not change it"})
        elif img.labels == dict(spec.labels):
            report.unchanged.append(name)
        else:
            img.labels, img.min_slots = dict(spec.labels), dict(spec.min_slots)
            img.service_ports, img.updated_at = spec.ports, now
            report.updated.append(name)
    flush(s, "an image was added at the same time; scan again")
    return report
