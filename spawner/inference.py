"""Inference sessions on Docker: an endpoint's replicas (docs/serving.md).

A replica is a named server of the endpoint's creator with user_options
``{session_type: "inference", endpoint: <id>, ...}``; the service checked it
against its endpoint and handed back, with the allocation, how it serves
(``allocation["service"]``: the model definition's ``start_command`` as an
argument vector, its port) and its only mount, the model folder read-only
at ``/models``. The container runs that command instead of a Jupyter server,
in its own network namespace like an isolated session: the hub reaches it on
the session's socket, which the model server takes as
``$HUBGRID_SERVICE_SOCKET`` when its image says its servers do (label
``ai.hubgrid.inference.unix-socket=1``: hubgrid/inference's); any other
server (vLLM: TCP only) runs under ``hubgrid-service-bridge`` (from
images/inference/bin/; an image for replicas carries it), which listens on
the socket and carries each connection to 127.0.0.1:``service.port``. No
Jupyter variable and no token reach it: a model server calls neither the
hub nor the hubgrid API.

The hub adds no proxy route for it (hub_ext/proxyclass.py): a model server
has no authentication of its own.
"""

from __future__ import annotations

import json

from jupyterhub.spawner import SpawnException

from .gatewayenv import VARIABLES
from .isolation import CONTAINER_DIR, SERVER_SOCKET

#: variables a replica does not get: the hub's (its API token among them),
#: the relay's, the hubgrid API's and the gateway's (a replica calls none of
#: them, and has no relay to reach them by)
DROPPED = ("JUPYTERHUB_", "JPY_", "HUBGRID_RELAY_", "HUBGRID_API_URL", "HUBGRID_SERVER_SOCKET",
           *VARIABLES)
SERVICE_SOCKET = f"{CONTAINER_DIR}/{SERVER_SOCKET}"


BRIDGE = "hubgrid-service-bridge"
#: runs the definition's pre-start actions ($HUBGRID_PRESTART), then the command
PRESTART = "hubgrid-prestart"


def replica_command(service: dict, socket: str = SERVICE_SOCKET) -> list[str]:
    """What a replica's container runs: the definition's command, under the
    bridge unless the image's servers take the socket themselves, after the
    pre-start actions when it has any. ``socket``: where the replica listens,
    as it sees it (a Slurm replica: its path on the node)."""
    argv = list(service["argv"])
    if not service.get("unix_socket"):
        argv = [BRIDGE, socket, str(service["port"]), "--", *argv]
    return [PRESTART, "--", *argv] if service.get("pre_start") else argv


def replica_environment(env: dict[str, str], service: dict,
                        socket: str = SERVICE_SOCKET) -> dict[str, str]:
    """A replica's environment: ``env`` less :data:`DROPPED`, with where the
    model server listens (the session's socket, for a server that takes it)
    and its port."""
    out = {k: v for k, v in env.items() if not k.startswith(DROPPED)}
    if service.get("unix_socket"):
        out["HUBGRID_SERVICE_SOCKET"] = socket
    out["HUBGRID_SERVICE_PORT"] = str(service["port"])
    if service.get("pre_start"):
        out["HUBGRID_PRESTART"] = json.dumps(service["pre_start"], separators=(",", ":"))
    out["HUBGRID_MODEL_NAME"] = service["model"]
    return out


class InferenceDockerMixin:
    """Before HubgridDockerSpawner in the bases: a start of session type
    ``inference`` runs the endpoint's model server instead of Jupyter."""

    runs_inference = True

    @property
    def serving(self) -> dict | None:
        """How this start serves (None: not an inference session)."""
        a = self.allocation or {}
        return a.get("service") if a.get("session_type") == "inference" else None

    def _apply_allocation(self, allocation, opts):
        super()._apply_allocation(allocation, opts)
        if allocation.get("session_type") == "inference" and not self.isolated:
            raise SpawnException(
                "not started: inference sessions need isolated sessions (the hub reaches "
                "their model server on its socket only): c.HubgridDockerSpawner.isolated",
                reason="config", status_code=500)
        if allocation.get("session_type") == "inference" and not allocation.get("service"):
            raise SpawnException("not started: the service gave no start command for this "
                                 "replica", reason="invalid", status_code=400)

    async def get_command(self):
        service = self.serving
        return replica_command(service) if service else await super().get_command()

    def get_args(self):
        return [] if self.serving else super().get_args()

    def replica_env(self, env: dict[str, str]) -> dict[str, str]:
        """The session's environment as the spawner made it, as a replica
        gets it (HubgridDockerSpawner.get_env calls this last)."""
        service = self.serving
        return replica_environment(env, service) if service else env
