"""A Model Store entry's card and default slots, from a definition's
``metadata`` (Backend.AI's model card fields).

Pure: a ``modeldef.ModelDefinition`` in, plain data out. The card is shown
as text only (the Lab page never renders it as HTML).
"""

from __future__ import annotations

from decimal import Decimal

from . import modeldef
from ..core import slots as slotlib

#: the card's text fields, as ``modeldef.Metadata`` holds them
TEXT = ("title", "author", "description", "task", "category", "license", "architecture",
        "created", "last_modified")
#: Backend.AI's slot names in ``min_resource`` and hubgrid's
SLOT_NAMES = {"cuda.device": "gpu", "cuda.shares": "gpu.shares", "memory": "mem"}


def model_of(d: modeldef.ModelDefinition) -> modeldef.ModelConfig:
    """The model a store entry serves: the first with a service (a replica
    runs that one: ``replicaadmit.service_of``)."""
    return d.servable()[0]


def card(d: modeldef.ModelDefinition) -> dict:
    """The card of the model a replica serves: its name and each metadata
    field (None where the definition says nothing)."""
    m = model_of(d)
    meta = m.metadata or modeldef.Metadata()
    out: dict = {"model": m.name}
    for key in TEXT:
        out[key] = getattr(meta, key)
    out["version"] = None if meta.version is None else str(meta.version)
    out["label"] = list(meta.label or ())
    out["framework"] = list(meta.framework or ())
    out["min_resource"] = (None if meta.min_resource is None else
                           {k: str(v) for k, v in meta.min_resource.items()})
    return out


def default_slots(d: modeldef.ModelDefinition) -> tuple[dict[str, Decimal] | None, list[dict]]:
    """One replica's slots from ``metadata.min_resource`` (Backend.AI's
    names ``cuda.device``, ``cuda.shares`` and ``memory`` read as ``gpu``,
    ``gpu.shares`` and ``mem``): (the slots, or None when it gives none;
    the problems, each with its field path)."""
    i, m = next((i, m) for i, m in enumerate(d.models) if m.service is not None)
    given = m.metadata.min_resource if m.metadata else None
    if not given:
        return None, []
    where = f"model-definition.yaml:models[{i}].metadata.min_resource"
    raw = {SLOT_NAMES.get(k, k): v for k, v in given.items()}
    try:
        slots = slotlib.parse_request({k: str(v) for k, v in raw.items()})
    except ValueError as e:
        return None, [{"field": where, "message": str(e)}]
    if not slots:
        return None, [{"field": where, "message": "asks for nothing (every amount is 0)"}]
    return slots, []
