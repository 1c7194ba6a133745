"""Session images as data: names, the ``ai.hubgrid.*`` labels, who may use one.

Pure functions, no IO. The registry (``quota_service.registry``) stores what
``parse_labels`` reads from an image; the scan (``quota_service.dockerscan``)
feeds it what Docker reports. An image declares itself with labels::

    ai.hubgrid.session-image=1                       # scans register it: interactive, batch
    ai.hubgrid.inference-image=1                     # scans register it: inference (replicas)
    ai.hubgrid.resource.min.cpu=0.5                  # any registered slot
    ai.hubgrid.resource.min.mem=256M                 # sizes as for requests
    ai.hubgrid.service-ports=jupyterlab:http:lab,terminal:http:lab/terminals/1

A malformed label is a ``LabelError`` naming the label and what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import quote

from . import slots as slotlib

LABEL_PREFIX = "ai.hubgrid."
MARKER = "ai.hubgrid.session-image"
#: an image for the replicas of model-serving endpoints (docs/serving.md)
INFERENCE_MARKER = "ai.hubgrid.inference-image"
#: the labels a scan looks for: an image carrying either is registered
MARKERS = (MARKER, INFERENCE_MARKER)
#: the session types each marker label says an image runs
MARKER_TYPES = {MARKER: ("batch", "interactive"), INFERENCE_MARKER: ("inference",)}
#: what an image marked with neither runs (one added through the API without
#: labels): sessions, as before inference images existed
UNMARKED_TYPES = MARKER_TYPES[MARKER]
MIN_PREFIX = "ai.hubgrid.resource.min."
PORTS = "ai.hubgrid.service-ports"

# Docker's reference grammar, lowercase: path components of alphanumerics
# joined by '.', '_', '__' or dashes, separated by '/'; then ':tag'
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REPOSITORY = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*", re.ASCII)
TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)
MAX_REPOSITORY = 255
MAX_NAME = MAX_REPOSITORY + 1 + 128

PORT_NAME = re.compile(r"[a-z0-9-]{1,32}", re.ASCII)
PORT_PROTOCOLS = ("http",)
# a relative URL path: unreserved characters and '/', nothing that could
# leave the session's URL space ('..', a scheme, a leading '/', '%', '?')
PORT_PATH = re.compile(r"[A-Za-z0-9._~/-]{0,256}", re.ASCII)
MAX_PORTS = 32
MAX_LABELS = 64
MAX_LABEL_VALUE = 4096


class LabelError(ValueError):
    """A label of an image that cannot be used as it stands."""


def check_name(value: str) -> str:
    """An image name ``repository:tag``, e.g. ``hubgrid/base:latest``."""
    if not isinstance(value, str):
        raise ValueError("image name must be a string")
    repository, colon, tag = value.rpartition(":")
    if not colon or "/" in tag:
        raise ValueError(f"image name {_short(value)} needs a tag: repository:tag")
    if len(repository) > MAX_REPOSITORY or not REPOSITORY.fullmatch(repository):
        raise ValueError(
            f"image name {_short(value)}: the repository must be 1 to {MAX_REPOSITORY} "
            "lowercase letters, digits and '._-' in '/'-separated parts, each starting "
            "and ending with a letter or digit"
        )
    if not TAG.fullmatch(tag):
        raise ValueError(
            f"image name {_short(value)}: the tag must be 1 to 128 letters, digits or '_.-', "
            "not starting with '.' or '-'"
        )
    return value


def _short(value: str) -> str:
    return repr(value if len(value) <= 60 else value[:60] + "...")


@dataclass(frozen=True)
class ServicePort:
    """An app a session of the image serves, at ``path`` under the server's URL."""

    name: str
    protocol: str
    path: str

    def as_dict(self) -> dict:
        return {"name": self.name, "protocol": self.protocol, "path": self.path}


def check_port(name: str, protocol: str, path: str) -> ServicePort:
    if not PORT_NAME.fullmatch(name):
        raise ValueError(f"service port name {_short(name)}: use 1 to 32 of a-z, 0-9 and '-'")
    if protocol not in PORT_PROTOCOLS:
        raise ValueError(f"service port {name}: protocol {_short(protocol)} is not supported "
                         f"(use {', '.join(PORT_PROTOCOLS)})")
    if path.startswith("/"):
        raise ValueError(f"service port {name}: path {_short(path)} must be relative "
                         "(no leading '/')")
    if ".." in path:
        raise ValueError(f"service port {name}: path {_short(path)} must not contain '..'")
    if not PORT_PATH.fullmatch(path):
        raise ValueError(f"service port {name}: path {_short(path)} may hold only letters, "
                         "digits and '._~/-' (at most 256; no scheme, query or '%')")
    return ServicePort(name, protocol, path)


def check_ports(ports) -> list[ServicePort]:
    """Service ports from ``[{"name", "protocol", "path"}]`` (or ServicePorts)."""
    out = []
    for p in ports:
        port = p if isinstance(p, ServicePort) else check_port(p["name"], p["protocol"], p["path"])
        out.append(port)
    if len(out) > MAX_PORTS:
        raise ValueError(f"at most {MAX_PORTS} service ports")
    names = [p.name for p in out]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ValueError(f"service port names must be unique: {', '.join(doubled)}")
    return out


def parse_ports(text: str) -> list[ServicePort]:
    """``name:protocol:path,...`` -> ServicePorts (empty text: none)."""
    if not text.strip():
        return []
    ports = []
    for item in text.split(","):
        parts = item.strip().split(":", 2)
        if len(parts) != 3:
            raise ValueError(f"{_short(item.strip())} is not name:protocol:path")
        ports.append(check_port(*parts))
    return check_ports(ports)


def check_min_slots(raw: Mapping) -> dict[str, str]:
    """A minimum request: a valid request slot map, amounts as canonical text."""
    return slotlib.to_text(slotlib.parse_request(raw))


def session_types(labels: Mapping[str, str] | None) -> tuple[str, ...]:
    """The session types an image runs, sorted, from its marker labels:
    ``session-image`` interactive and batch, ``inference-image`` inference
    (replicas of endpoints; no Jupyter server in it), both all three; an
    image with neither (added through the API) interactive and batch."""
    found = sorted({t for marker, types in MARKER_TYPES.items() if marker in (labels or {})
                    for t in types})
    return tuple(found) if found else UNMARKED_TYPES


@dataclass(frozen=True)
class ImageSpec:
    """What an image's labels declare."""

    labels: Mapping[str, str]
    min_slots: Mapping[str, str]
    service_ports: tuple[ServicePort, ...]

    @property
    def session_types(self) -> tuple[str, ...]:
        return session_types(self.labels)

    @property
    def ports(self) -> list[dict]:
        return [p.as_dict() for p in self.service_ports]


def hubgrid_labels(labels: Mapping[str, str] | None) -> dict[str, str]:
    """The ``ai.hubgrid.*`` labels of an image, sorted (others are not ours)."""
    return {k: v for k, v in sorted((labels or {}).items()) if k.startswith(LABEL_PREFIX)}


def parse_labels(labels: Mapping[str, str]) -> ImageSpec:
    """Read an image's ``ai.hubgrid.*`` labels (other labels are ignored).

    Raises LabelError naming the first label that cannot be used: a minimum
    of an unknown slot or a bad amount, a malformed service-ports list, too
    many or too long labels.
    """
    ours = hubgrid_labels(labels)
    if len(ours) > MAX_LABELS:
        raise LabelError(f"an image may carry at most {MAX_LABELS} ai.hubgrid.* labels")
    minimum: dict[str, str] = {}
    ports: list[ServicePort] = []
    for key, value in ours.items():
        if not isinstance(value, str):
            raise LabelError(f"label {key}: the value must be text")
        if len(value) > MAX_LABEL_VALUE:
            raise LabelError(f"label {key}: longer than {MAX_LABEL_VALUE} characters")
        try:
            if key.startswith(MIN_PREFIX):
                slot = key[len(MIN_PREFIX):]
                check_min_slots({slot: value.strip()})
                minimum[slot] = value.strip()
            elif key == PORTS:
                ports = parse_ports(value)
        except ValueError as e:
            raise LabelError(f"label {key}: {e}") from None
    try:  # the rules across slots (whole devices or a share, not both)
        min_slots = check_min_slots(minimum)
    except ValueError as e:
        raise LabelError(f"labels {MIN_PREFIX}*: {e}") from None
    return ImageSpec(labels=ours, min_slots=min_slots, service_ports=tuple(ports))


# --- who may use an image -----------------------------------------------------

def usable_by(image_name: str, image_domains, domain: str, domain_allowed_images) -> bool:
    """May ``domain`` use the image? Both lists must allow it: the image's
    ``domains`` (empty: every domain) and the domain's ``allowed_images``
    (empty: every image)."""
    return (not image_domains or domain in image_domains) and (
        not domain_allowed_images or image_name in domain_allowed_images
    )


# --- the apps of a session ------------------------------------------------------

def session_apps(hub_base_url: str, user: str, server_name: str, ports) -> list[dict]:
    """``[{"name", "url"}]``: where each service port of a session is served,
    ``{hub_base_url}user/{user}/{server_name/}{path}`` (escaped as the hub does)."""
    base = hub_base_url if hub_base_url.endswith("/") else hub_base_url + "/"
    server = f"{quote(server_name, safe='@~')}/" if server_name else ""
    root = f"{base}user/{quote(user, safe='@~')}/{server}"
    return [{"name": p["name"], "url": root + p["path"]} for p in ports]
