"""Inference sessions on Slurm: an endpoint's replicas as Slurm jobs
(docs/serving.md, "Replicas on Slurm").

As on Docker (spawner/inference.py), the service checked the start against
its endpoint and handed back, with the allocation, how it serves
(``allocation["service"]``) and its one mount, the model folder
(``allocation["mounts"][0]["path"]``: its path on the service's storage,
which the nodes see at the same path). There is no container: the job runs
``hubgrid-replica`` (spawner/scripts), which gives the replica a network
and mounts of its own (the folder read-only at ``/models``, a private
``/tmp``, the root filesystem read-only, no capabilities) and execs the
definition's command, under ``hubgrid-prestart`` and
``hubgrid-service-bridge`` as in a container. The replica listens on
``<replica_socket_root>/<allocation>/jupyter.sock`` on the node, in a
directory it writes; the hub pins that socket once it is there
(spawner/sockpin.py) at ``<replica_pin_root>/<allocation>.sock``, where
the hub's readiness check and the gateway's haproxy connect (the spawner's
state ``hubgrid_server_socket``, as for Docker), never to the replica's own
name. So the hub, its gateway and the node are one machine.

No ``JUPYTERHUB_*`` variable or token reaches the job. The job is submitted,
polled and cancelled like any session's, accounted like any (the ledger's
allocation, Slurm's job with its ``--comment``).
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
from pathlib import Path
from urllib.parse import quote

from batchspawner import JobStatus
from jupyterhub.spawner import SpawnException
from traitlets import List, TraitError, Unicode, validate
from traitlets.config import Configurable

from . import readiness, sockpin
from .inference import replica_command, replica_environment
from .isolation import SERVER_SOCKET, check_root

REPLICA_SCRIPT = Path(__file__).parent / "scripts" / "hubgrid-replica"
MODELS = "/models"
#: how often a starting replica's socket is asked (seconds)
REPLICA_POLL = 0.25


class InferenceSlurmMixin(Configurable):
    """Before HubgridSpawnerMixin in HubgridSlurmSpawner's bases: a start of
    session type ``inference`` runs the endpoint's model server as the job."""

    runs_inference = True

    replica_socket_root = Unicode(
        "/run/hubgrid/slurm-replicas",
        help="""Directory of the replicas' socket directories on the node (one per
        replica, ``<root>/<allocation>``, mode 0700, made by the job and
        owned by the user its model server runs as; with ``unix_users`` the
        root must let every user make one, e.g. mode 1777). The hub and its gateway connect to the sockets there, so
        they run on the node's machine. Not under /tmp (a replica has its own).
        Lowercase: JupyterHub lowercases the socket's URL.""",
    ).tag(config=True)

    replica_pin_root = Unicode(
        "/run/hubgrid/replica-pins",
        help="""Directory where the hub links each replica's socket once it has
        checked that the socket is the replica's own (a socket, owned by the
        owner of its directory, with no other name): the hub and the
        gateway's haproxy connect there, never to a name in a directory a
        replica writes. Made by the hub (root's, mode 0700); must be on the
        same filesystem as ``replica_socket_root`` (a hard link). Lowercase.""",
    ).tag(config=True)

    @validate("replica_pin_root")
    def _check_pin_root(self, proposal):
        try:
            return check_root(proposal.value)
        except ValueError as e:
            raise TraitError(str(e).replace("session_socket_root", "replica_pin_root")) from None

    replica_path = List(
        Unicode(),
        help="""Directories put first on a replica's ``PATH``: where the node has
        the model servers a definition's ``start_command`` names, and
        ``hubgrid-prestart`` and ``hubgrid-service-bridge``. The demo's
        configuration names this checkout's ``images/inference/host`` and
        ``images/inference/bin``.""",
    ).tag(config=True)

    @validate("replica_socket_root")
    def _check_replica_root(self, proposal):
        try:
            root = check_root(proposal.value)
        except ValueError as e:
            raise TraitError(str(e).replace("session_socket_root", "replica_socket_root")) \
                from None
        if root == "/tmp" or root.startswith("/tmp/"):
            raise TraitError(f"replica_socket_root {root!r}: not under /tmp (each replica "
                             "has a /tmp of its own)")
        return root

    #: the replica's socket on the node ("" when this is no replica)
    _replica_socket = ""
    #: where the hub pinned it (spawner/sockpin.py)
    _replica_pin = ""

    @property
    def serving(self) -> dict | None:
        """How this start serves (None: not an inference session)."""
        a = getattr(self, "allocation", None) or {}
        return a.get("service") if a.get("session_type") == "inference" else None

    def session_image(self, opts) -> str | None:
        # the registry entry naming the nodes' model servers (its labels count)
        return opts.image if opts.session_type == "inference" else super().session_image(opts)

    def _apply_allocation(self, allocation, opts):
        super()._apply_allocation(allocation, opts)
        if allocation.get("session_type") != "inference":
            self._replica_socket = ""
            return
        mounts = allocation.get("mounts") or []
        if not allocation.get("service") or len(mounts) != 1 or not mounts[0].get("path"):
            raise SpawnException("not started: the service gave no start command or model "
                                 "folder for this replica", reason="invalid", status_code=400)
        self._replica_socket = posixpath.join(self.replica_socket_root, allocation["id"],
                                              SERVER_SOCKET)
        self._replica_pin = posixpath.join(self.replica_pin_root, f"{allocation['id']}.sock")

    def replica_spec(self) -> dict:
        """What hubgrid-replica does ($HUBGRID_REPLICA)."""
        service = self.serving
        return {"socket_dir": posixpath.dirname(self._replica_socket),
                "models": self.allocation["mounts"][0]["path"], "mount_point": MODELS,
                "argv": replica_command(service, self._replica_socket)}

    def get_env(self):
        env = super().get_env()
        service = self.serving
        if not service or not self._replica_socket:
            return env
        out = replica_environment(env, service, self._replica_socket)
        if self.replica_path:
            out["PATH"] = os.pathsep.join([*self.replica_path, env.get("PATH", os.defpath)])
        out["HUBGRID_REPLICA"] = json.dumps(self.replica_spec(), separators=(",", ":"))
        return out

    def cmd_formatted_for_batch(self):
        if self.serving:
            return f"exec python3 -I {REPLICA_SCRIPT}"
        return super().cmd_formatted_for_batch()

    async def job_running(self) -> None:
        """A replica's job runs: wait until its server answers on the socket
        (the hub's own check), so that a job that ends first fails the start
        with the reason from its log (the endpoint shows it)."""
        await super().job_running()
        if not self.serving:
            return
        try:
            os.makedirs(os.path.dirname(self.replica_pin_root), exist_ok=True)
            # root's alone: a pin has the mode its replica gave its socket
            sockpin.private_dir(self.replica_pin_root, 0o700, make=True)
        except OSError as e:
            raise SpawnException(f"not started: replica_pin_root: {e.strerror}",
                                 reason="config", status_code=500) from None
        base = self.server.base_url if self.server is not None else "/"
        url = "http+unix://" + quote(self._replica_pin, safe="") + base + "api"
        try:
            up = await readiness.until_answering(url, interval=REPLICA_POLL,
                                                 timeout=max(self.http_timeout, 1),
                                                 exit_code=self._job_ended,
                                                 ready=self._pin_replica)
        except readiness.ServerExited:
            raise await self._ended() from None
        except (sockpin.PinError, OSError) as e:
            raise SpawnException(f"not started: {e}", reason="backend", status_code=500) \
                from None
        if not up:  # as the hub's own check would (its job is cancelled at the stop)
            raise SpawnException(f"the replica's server did not answer within "
                                 f"{self.http_timeout:g} s (http_timeout)", reason="timeout",
                                 status_code=500)

    def _pin_replica(self) -> bool:
        return sockpin.pin(posixpath.dirname(self._replica_socket), SERVER_SOCKET,
                           self._replica_pin)

    async def poll(self):
        """A running replica whose socket is not the pinned one any more
        (removed, or replaced by a link or another socket) is cancelled:
        nothing reaches it, and one that swaps its socket is up to no good."""
        if self._replica_socket and (not self._replica_pin or sockpin.current(
                posixpath.dirname(self._replica_socket), SERVER_SOCKET,
                self._replica_pin) is False):  # (no pin: started by a hub that pinned none)
            self.log.warning("%s: the replica's socket %s vanished or was replaced; "
                             "cancelling its job", self._log_name, self._replica_socket)
            await self.cancel_batch_job()
        return await super().poll()

    async def ended_before_start(self):
        # a replica's job that ended before it was even seen running (a
        # command that fails at once) says why as one seen running does
        return await self._ended() if self.serving else await super().ended_before_start()

    async def _ended(self) -> SpawnException:
        last = await self._last_log_line()
        return SpawnException("the replica's job ended before its server answered"
                              + (f": {last}" if last else ""), reason="backend",
                              status_code=500)

    async def _job_ended(self) -> int | None:
        status = await self.query_job_status()
        return None if status in (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.UNKNOWN) else 1

    async def _last_log_line(self) -> str:
        try:
            text = (await self.session_log(0)).decode(errors="replace")
        except (OSError, RuntimeError, SpawnException):
            return ""
        lines = [x.strip() for x in text.splitlines() if x.strip()]
        return lines[-1][:300] if lines else ""

    async def start(self):
        result = await super().start()
        if self.serving and self._replica_pin:
            # the hub's readiness check and the proxy's URL: the replica's pinned socket
            return "http+unix://" + quote(self._replica_pin, safe="")
        return result

    async def session_ended(self) -> None:
        await super().session_ended()
        if not self._replica_socket:
            return
        # (not in clear_state: batchspawner's poll clears the state before this)
        where, self._replica_socket = posixpath.dirname(self._replica_socket), ""
        pinned, self._replica_pin = self._replica_pin, ""
        if pinned:
            try:
                os.unlink(pinned)  # root's directory: no link of a replica's there
            except FileNotFoundError:
                pass
        try:
            if self.runs_as_user:  # the user's directory: removed as the user
                await self.job_files()._run("rm", "-rf", "--", where)
            else:
                shutil.rmtree(where, ignore_errors=True)
        except (OSError, RuntimeError, SpawnException) as e:
            self.log.warning("could not remove %s of %s: %s", where, self._log_name, e)

    def get_state(self):
        state = super().get_state()
        if self._replica_socket:  # hubgrid_server_socket: where the serving gateway reaches it
            state.update(hubgrid_replica_socket=self._replica_socket,
                         hubgrid_server_socket=self._replica_pin)
        return state

    def load_state(self, state):
        super().load_state(state)
        self._replica_socket = state.get("hubgrid_replica_socket", "") \
            or state.get("hubgrid_server_socket", "")
        self._replica_pin = state.get("hubgrid_server_socket", "") \
            if state.get("hubgrid_replica_socket") else ""
