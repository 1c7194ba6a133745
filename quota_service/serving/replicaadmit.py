"""Admission of a replica: what an ``inference`` allocation must match.

A replica is a JupyterHub named server of the endpoint's creator, started by
the serving controller (``replicas``) with user_options ``{session_type:
"inference", endpoint: <id>, ...}``. The hub's spawner passes them on as
they came, so the service checks them against the endpoint before the
ledger decides: the caller is the endpoint's creator, and the project,
resource group, image and slots are the endpoint's (nobody forges a replica
through the spawn form). The replica gets the model folder read-only at
``/models`` (its only mount) and how it serves, read here from the folder's
``model-definition.yaml``: the spawner runs that command and never reads
the folder itself.

An IO edge: the database and the model folder's definition file.
"""

from __future__ import annotations

import json
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import checks, modeldef, store
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import ApiError, Invalid
from ..core.models import Image, Project, ResourceGroup
from ..core.servingmodels import Endpoint


#: the most the pre-start actions may be, as JSON (they reach the replica in
#: one environment variable: Linux takes at most 128 KiB in one)
MAX_PRESTART = 100_000
#: an image whose model servers listen on ``$HUBGRID_SERVICE_SOCKET`` themselves
UNIX_SOCKET_LABEL = "ai.hubgrid.inference.unix-socket"


def service_of(d: modeldef.ModelDefinition, image_labels: dict | None = None) -> dict:
    """How a replica serves: the first model with a service; ``unix_socket``:
    its image's servers take the socket (else the spawner bridges the
    socket to the port: spawner/inference.py)."""
    m = d.servable()[0]
    svc = m.service
    h = svc.health_check
    out = {"model": m.name, "argv": list(svc.argv), "port": svc.port,
           "health_path": h.path if h else None,
           # what the gateway passes on to it at e/<id>/ (serving/routes.py)
           "methods": list(svc.methods),
           "paths": list(svc.allowed_paths),
           "unix_socket": (image_labels or {}).get(UNIX_SOCKET_LABEL) == "1",
           # run in the replica before argv (spawner/inference.py, hubgrid-prestart)
           "pre_start": [{"action": a.action, "args": {k: (list(v) if isinstance(v, tuple)
                                                          else v) for k, v in a.args.items()}}
                         for a in svc.pre_start_actions]}
    if h:  # the gateway's balancer probes as the definition says (serving/routes.py)
        out.update(health_interval=str(h.interval), health_max_retries=h.max_retries,
                   health_expected_status=h.expected_status_code)
    return out


def _same_slots(a: dict, b: dict) -> bool:
    def clean(x):
        return {k: Decimal(v) for k, v in x.items() if Decimal(v) != 0}
    return clean(a) == clean(b)


def replica(s: Session, p: Principal, body, hosts) -> dict:
    """``{"endpoint", "mounts", "service"}`` for the ledger, or Invalid (422)
    saying what does not match the endpoint."""
    e = s.get(Endpoint, body.endpoint)
    if e is None or e.created_by != p.name:
        # another's endpoint reads as a missing one: its existence is not told
        raise Invalid(f"endpoint {body.endpoint!r}: no endpoint of yours; a replica runs "
                      "as its endpoint's creator")
    if e.state == "terminating":
        raise Invalid(f"endpoint {e.name!r} is being deleted: no new replica")
    project = s.get(Project, e.project_id)
    rg = s.get(ResourceGroup, e.resource_group_id)
    wrong = []
    if body.project != project.name:
        wrong.append(f"project {body.project!r} (the endpoint's: {project.name!r})")
    if body.resource_group != rg.name:
        wrong.append(f"resource_group {body.resource_group!r} (the endpoint's: {rg.name!r})")
    if body.image != e.image:
        wrong.append(f"image {body.image!r} (the endpoint's: {e.image!r})")
    if not _same_slots(dict(body.slots), e.slots):
        wrong.append(f"slots {slotlib.to_text(dict(body.slots))} (the endpoint's: {e.slots})")
    if body.vfolders:
        wrong.append("vfolders (a replica mounts its model folder only)")
    if body.gpu_models:
        wrong.append("gpu_models (the endpoint's resource group decides)")
    if wrong:
        raise Invalid(f"not a replica of endpoint {e.name!r}: " + "; ".join(wrong))
    try:
        # a Model Store deploy's through the publication, else the creator's own read
        acc = store.replica_folder(s, p, e, hosts)
        d = modeldef.parse(checks.read_definition(acc.root))
        image = s.scalar(select(Image).where(Image.name == e.image))
        service = service_of(d, image.labels if image is not None else None)
    except ApiError as err:
        raise Invalid(f"endpoint {e.name!r}: model folder: {err.message}") from None
    except (OSError, modeldef.ModelDefinitionError, IndexError) as err:
        raise Invalid(f"endpoint {e.name!r}: the model folder's {checks.DEFINITION_FILE} "
                      f"cannot be served: {err or 'no model has a service'}") from None
    if len(json.dumps(service["pre_start"])) > MAX_PRESTART:
        raise Invalid(f"endpoint {e.name!r}: the pre-start actions of its definition are "
                      f"more than {MAX_PRESTART} bytes as JSON: too large to hand to a replica")
    mount = {"folder": e.model_folder, "name": acc.name, "path": str(acc.root), "mode": "ro",
             "target": modeldef.MODELS_ROOT}
    return {"endpoint": e.id, "mounts": [mount], "service": service}
