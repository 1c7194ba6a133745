"""A Docker session whose start a killed hub never saw finish.

JupyterHub writes a spawner's state only once start() returns: a hub killed
in between leaves a server in its database with no state (no allocation,
no engine, no socket), and the restarted hub polls it before its services
run. The container tells which allocation it was made for (the
``hubgrid.allocation`` and ``hubgrid.user`` labels the hub set), and its
mounts and network mode tell its session directory, live directory and
network sandbox (``claim_of``). None of it is taken as this server's until
the service's record of that allocation agrees (``refusal``): the same id,
this user, this server's name, the engine the container is on.

- Its server up (the socket pinned as a start pins it, and the spawner's
  readiness check answered through the pin, never the session's own
  name): kept. Until the service confirms the allocation (it starts after
  the hub's check), the server's state names it, so the service does not
  take it for unheld and release it; confirmed, it is the server's as if
  its start had finished (written into the hub's database at once);
  refused, the container is killed, the hub's next poll removes it, and
  nothing named by its labels is touched.
- Not up: stopped at once. Its directory (relay, pinned socket, the
  session's own ``session/``: removed without following a link), its live
  directory and its holder go, and its allocation is released, once the
  service confirms the allocation is this server's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import docker
from traitlets.config import Configurable

from hub_ext.client import Refused, ServiceUnavailable

from . import readiness, sockpin
from .dockernet import close_network
from .isolation import SERVER_PORT, SERVER_SOCKET, SessionNetwork
from .livemounts import Node
from .relay import RELAYS
from .sandboxes import SANDBOXES

ALLOCATION_LABEL = "hubgrid.allocation"
USER_LABEL = "hubgrid.user"
#: seconds the restarted hub's check waits for a recovered server's answer
UP_CHECK_TIMEOUT = 2.0
#: seconds between two lookups of a recovered allocation while the service does not answer
CONFIRM_RETRY = 0.5
LIVE = ("pending", "allocated")


@dataclass(frozen=True)
class Claim:
    """What a container says of the start it was made for (unchecked)."""

    container: str
    allocation: str
    user: str
    engine: str
    #: its session directory, when the container mounts it (an isolated session)
    network: SessionNetwork | None
    #: the holder whose network namespace it joined ("": none)
    sandbox: str
    #: whether it mounts its live directory
    live: bool


def claim_of(container: dict, engine: str, socket_root: str, live_root: str,
             relay_port: int) -> Claim | None:
    """The claim of ``container`` (``docker inspect``) on ``engine``, or None
    when its labels name no allocation that can name a directory."""
    labels = (container.get("Config") or {}).get("Labels") or {}
    alloc = labels.get(ALLOCATION_LABEL) or ""
    try:
        net = SessionNetwork.of(socket_root, alloc, relay_port)
    except ValueError:
        return None
    sources = {m.get("Source") for m in container.get("Mounts") or ()}
    mode = (container.get("HostConfig") or {}).get("NetworkMode") or ""
    live = bool(live_root) and Node(live_root).directory(alloc) in sources
    return Claim(container["Id"], alloc, labels.get(USER_LABEL) or "", engine,
                 net if net.session_dir in sources else None,
                 mode.split(":", 1)[1] if mode.startswith("container:") else "", live)


def refusal(claim: Claim, record: dict | None, user: str, server_name: str,
            default_engine: str) -> str:
    """Why ``claim`` is not ``user``'s server ``server_name``'s by the
    service's ``record`` of its allocation (None: unknown); "" when it is."""
    a = claim.allocation
    if record is None:
        return f"the service knows no allocation {a}"
    if record.get("id") != a:
        return f"the service answered for allocation {record.get('id')}, not {a}"
    if record.get("user") != user or claim.user != user:
        return f"allocation {a} is not {user}'s"
    if (record.get("server_name") or "") != server_name:
        return f"allocation {a} is not of server {server_name!r}"
    if (record.get("backend_url") or default_engine) != claim.engine:
        return f"allocation {a} is not on engine {claim.engine}, where its container is"
    return ""


class StartRecoveryMixin(Configurable):
    """For HubgridDockerSpawner (before HubgridSpawnerMixin in its bases):
    ``recover_start`` for a start cut by a hub that was killed."""

    #: a kept session's recovered start, until the service confirms it
    _claim: Claim | None = None
    #: the lookup that confirms a claim once the service answers
    _confirming: asyncio.Task | None = None

    async def recover_start(self, status) -> bool:
        if self._claim is not None:  # kept, not confirmed yet
            if status is None:
                return True
            await self._unclaim()  # it ended meanwhile: the confirmation cleans up
            return False
        claim = await self._container_claim()
        if claim is None:
            return False
        try:
            record = await self.hubgrid.allocation(claim.allocation)
        except Refused:
            record = None
        except ServiceUnavailable:  # it starts after the hub's check of its servers
            up = status is None and await self._up(claim)
            if up:
                self._claim = claim
                self._use_claim(claim, confirmed=False)
            self._confirming = asyncio.ensure_future(self._confirm_later(claim))
            return up
        why = refusal(claim, record, self.user.name, self.name or "", self.default_docker_url)
        if why:
            self.log.warning("%s: its unfinished start is not recovered: %s", self._log_name, why)
            return False
        self._use_claim(claim, confirmed=True)
        if record["state"] in LIVE:  # released by the mixin unless kept
            self.allocation_id = claim.allocation
        if record["state"] == "allocated" and status is None and await self._up(claim):
            await self._adopted(record)
            return True
        return False

    async def _container_claim(self) -> Claim | None:
        if not self.object_id:
            return None
        try:
            info = await self.docker("inspect_container", self.object_id)
        except docker.errors.NotFound:
            return None
        return claim_of(info, self.docker_url or self.default_docker_url,
                        self.session_socket_root, self.live_mount_root, self.relay_port)

    async def _up(self, claim: Claim) -> bool:
        """Whether the claim's server answers, through its pinned socket."""
        net = claim.network
        if net is None or self.server is None:
            return False  # host networking: where it listens is not recovered
        try:
            if not sockpin.pin(net.session_dir, SERVER_SOCKET, net.server_socket):
                return False
        except (sockpin.PinError, OSError) as e:
            self.log.warning("%s: the server's socket of its unfinished start: %s",
                             self._log_name, e)
            return False
        return await readiness.answers_once(f"{net.server_url}{self.server.base_url}api",
                                            UP_CHECK_TIMEOUT)

    def _use_claim(self, claim: Claim, confirmed: bool) -> None:
        """The spawner's state as its start would have left it: the engine
        and socket; its holder and live directory once confirmed (they go
        with the session)."""
        self.docker_url, self.port = claim.engine, SERVER_PORT
        self._net = claim.network
        if confirmed:
            self._sandbox = claim.sandbox
            self._live_alloc = claim.allocation if claim.live else ""
        self._use_socket()

    async def _adopted(self, record: dict) -> None:
        self.allocation = record
        self.log.info("%s: its start, cut by a hub restart, is recovered (allocation %s, "
                      "server up)", self._log_name, self.allocation_id)
        orm = self.orm_spawner  # JupyterHub writes the state only when a start finishes
        if orm is not None and self.db is not None:
            orm.state = self.get_state()
            self.db.commit()
        await self._live_started()

    async def _unclaim(self) -> None:
        """Drop an unconfirmed claim: nothing it names is this spawner's."""
        claim, self._claim = self._claim, None
        if claim is not None and claim.network is not None:
            await RELAYS.close(claim.network.relay_socket)
        self._net = None

    async def _confirm_later(self, claim: Claim) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.service_outage_limit
        while True:
            await asyncio.sleep(CONFIRM_RETRY)
            try:
                record = await self.hubgrid.allocation(claim.allocation)
                break
            except Refused:
                record = None
                break
            except ServiceUnavailable as e:
                if loop.time() > deadline:
                    self.log.warning("%s: allocation %s of its unfinished start not confirmed: "
                                     "%s", self._log_name, claim.allocation, e)
                    return
        why = refusal(claim, record, self.user.name, self.name or "", self.default_docker_url)
        kept = self._claim is claim
        if not why and kept and record["state"] == "allocated":
            self._claim = None
            self._use_claim(claim, confirmed=True)
            self.allocation_id = claim.allocation
            await self._adopted(record)
            return
        if why:
            self.log.warning("%s: its unfinished start is not recovered: %s", self._log_name, why)
        if kept:  # killed: the hub's next poll removes it
            await self._unclaim()
            try:
                await asyncio.to_thread(self._client_for(claim.engine).kill, claim.container)
            except docker.errors.APIError:
                pass
        elif not why:
            await self._discard_claim(claim, record)

    async def _discard_claim(self, claim: Claim, record: dict) -> None:
        """What a stopped unfinished start left, now known to be this server's."""
        client = self._client_for(claim.engine)
        try:
            await asyncio.to_thread(client.remove_container, claim.container, force=True)
        except docker.errors.APIError:  # gone, or being removed
            pass
        if claim.network is not None:
            await close_network(claim.network)
        if claim.live and self.live_mount_root:
            await asyncio.to_thread(Node(self.live_mount_root).discard, claim.allocation)
        if claim.sandbox:
            await SANDBOXES.remove(client, claim.sandbox)
        if record["state"] in LIVE:
            try:
                await self.hubgrid.release(claim.allocation, "its start did not finish before "
                                           "the hub restarted")
            except (Refused, ServiceUnavailable) as e:
                self.log.warning("could not release allocation %s: %s", claim.allocation, e)

    async def stop(self, now=False):
        if self._claim is not None:  # before its confirmation, which then cleans up
            await self._unclaim()
        await super().stop(now=now)

    def get_state(self):
        state = super().get_state()
        if self._claim is not None and not self.allocation_id:
            # held until confirmed: else the service takes it for unheld
            state["hubgrid_allocation"] = self._claim.allocation
        return state
