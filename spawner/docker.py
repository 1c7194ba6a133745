"""HubgridDockerSpawner: DockerSpawner with hubgrid admission and placement.

The hubgrid service admits the session and picks its node; the container is
created on that node's Docker engine (the node's ``backend_url``, e.g.
``unix:///var/run/docker.sock`` or ``tcp://gpu-3:2376``) from the pure
builders in ``spawner/builders.py``: the allocation's cpu, memory and pids
limits, device requests for exactly the allocated GPUs and the GPU sharing
environment, labels naming user, domain, project and allocation, no
privileges, all capabilities dropped, a non-root user, and no host paths
but the allowed mounts.

Each session has a network of its own (``isolated``, the default;
spawner/isolation.py): the hub and the proxy reach its server on a Unix
socket in its directory, and it reaches the hub's and the hubgrid API only
through its relay (spawner/relay.py). ``isolated = False`` is the old host
networking (every session and node service reachable from every session),
for engines on other machines, whose sockets the proxy cannot reach.
"""

from __future__ import annotations

import time
from decimal import Decimal
from urllib.parse import urlparse

import docker
from dockerspawner import DockerSpawner
from jupyterhub.spawner import SpawnException
from jupyterhub.utils import random_port
from traitlets import Bool, Enum, Integer, TraitError, Unicode, default, validate

from .builders import SessionSpec, container_config, vfolder_mounts
from .dockerlive import LiveMountsMixin
from .dockernet import SessionNetworkMixin
from .dockerpool import SandboxPoolMixin
from .dockerready import ContainerReadinessMixin
from .dockerrecover import StartRecoveryMixin
from .gpuenv import allocation_gpus
from .inference import InferenceDockerMixin
from .isolation import SERVER_PORT, SessionNetwork, check_root, engine_is_local
from .mixin import HubgridSpawnerMixin

def session_host(docker_url: str) -> str:
    """Where a session of the engine at ``docker_url`` is reached: the
    engine's host for tcp URLs, loopback for a local socket."""
    parsed = urlparse(docker_url)
    if parsed.scheme in ("tcp", "http", "https") and parsed.hostname:
        return parsed.hostname
    return "127.0.0.1"


class HubgridDockerSpawner(LiveMountsMixin, InferenceDockerMixin, SessionNetworkMixin,
                           SandboxPoolMixin, ContainerReadinessMixin, StartRecoveryMixin,
                           HubgridSpawnerMixin, DockerSpawner):
    """Sessions in Docker containers on the node the hubgrid service chose."""

    default_docker_url = Unicode(
        "unix:///var/run/docker.sock",
        help="""Docker engine of nodes whose ``backend_url`` is empty (a
        single-host set-up). Each node of a resource group names its own
        engine in its ``backend_url``.""",
    ).tag(config=True)

    docker_url = Unicode("", help="The engine of the running session (kept in the state).")

    pids_limit = Integer(
        4096, help="Most processes (and threads) a session container may run."
    ).tag(config=True)

    vfolder_mount_root = Unicode(
        "/home/jovyan",
        help="""Directory of the session's vfolders inside the container: each
        folder is mounted at ``<root>/<name>``, read-only unless the user may
        write it. The folder's path on the node is the one the service's
        storage host names: mount a shared filesystem at the same path on
        every node.""",
    ).tag(config=True)

    attach_gpus = Enum(
        ["auto", "always", "never"], "auto",
        help="""Whether containers get Docker device requests for their GPUs.
        ``auto``: when the engine has the NVIDIA runtime. A node whose GPUs
        are only declared in configuration (no NVIDIA runtime, like
        Backend.AI's mock accelerator) gets the GPU environment but no
        devices: Docker would refuse a device request it cannot serve.""",
    ).tag(config=True)

    session_uid = Integer(1000, help="User id the session runs as (never root).").tag(config=True)

    session_gid = Integer(100, help="Group id the session runs as.").tag(config=True)

    isolated = Bool(
        True,
        help="""Each session in a network namespace of its own (Docker's
        ``none`` network, or ``egress_network``): no session reaches another
        or a service of its node. The hub and the proxy reach its server on
        a Unix socket under ``session_socket_root``; it reaches the hub's and
        the hubgrid API through a relay socket next to it, which carries
        nothing else. Needs engines on the hub's machine (unix:// engine
        URLs or tcp:// to this machine): False uses host networking, which
        isolates nothing (docs/sessions.md).""",
    ).tag(config=True)

    session_socket_root = Unicode(
        "/run/hubgrid/sessions",
        help="""Directory of isolated sessions' directories on the node,
        writable by root only (the hub makes it mode 0711 and refuses to
        start sessions under one that others may write). Each session's
        ``<allocation>/`` is root's and holds ``session/`` (owned by
        ``session_uid``, mode 0700, mounted at /run/hubgrid in that session
        only), the relay's ``relay/`` and the server's pinned socket
        (docs/sessions.md). Lowercase: JupyterHub lowercases the socket's URL.""",
    ).tag(config=True)

    relay_port = Integer(
        8081,
        help="""The port of the session's own loopback where an isolated session reaches
        the hub's API, the hubgrid API and the serving gateway (its relay):
        ``JUPYTERHUB_API_URL`` and ``HUBGRID_API_URL`` point there.""",
    ).tag(config=True)

    egress_network = Unicode(
        "",
        help="""A Docker network that gives isolated sessions access to the
        outside (the internet) instead of none at all. Must be a bridge
        created with ``-o com.docker.network.bridge.enable_icc=false``
        (sessions on it cannot reach each other); a start onto any other
        network is refused. The node's own services must not listen on that
        bridge's address (docs/sessions.md). Empty: no egress.""",
    ).tag(config=True)

    @validate("session_socket_root")
    def _check_socket_root(self, proposal):
        try:
            return check_root(proposal.value)
        except ValueError as e:
            raise TraitError(str(e)) from None

    @default("image")
    def _default_image(self):
        return "hubgrid/base:latest"

    @default("network_name")
    def _default_network(self):
        return "host"

    @default("use_internal_ip")
    def _default_internal_ip(self):
        return True

    @default("pull_policy")
    def _default_pull(self):
        return "never"

    @default("remove")
    def _default_remove(self):
        return True

    @default("prefix")
    def _default_prefix(self):
        return "hubgrid"

    # -- one client per engine -----------------------------------------------

    mounts_vfolders = True

    _clients: dict[str, docker.APIClient] = {}
    #: engine URL -> has the NVIDIA runtime (asked once per engine and hub process)
    _has_nvidia_runtime: dict[str, bool] = {}

    @property
    def client(self):
        return self._client_for(self.docker_url or self.default_docker_url)

    def _client_for(self, url: str) -> docker.APIClient:
        client = self._clients.get(url)
        if client is None:
            client = docker.APIClient(base_url=url, version="auto", **self.client_kwargs)
            type(self)._clients[url] = client
        return client

    # -- hubgrid hooks -------------------------------------------------------

    def session_image(self, opts) -> str:
        return opts.image or self.image

    def _apply_allocation(self, allocation, opts):
        super()._apply_allocation(allocation, opts)
        self.image = allocation.get("image") or self.session_image(opts)
        self.docker_url = allocation.get("backend_url") or self.default_docker_url
        self.ip = session_host(self.docker_url)
        self._net = SessionNetwork.of(self.session_socket_root, allocation["id"],
                                      self.relay_port) if self.isolated else None
        self.port = SERVER_PORT if self._net else random_port()
        if self._net and not engine_is_local(self.docker_url):
            # refused before any call to that engine (the allocation is released)
            raise SpawnException(
                f"node {allocation['node']}'s engine {self.docker_url} is on another machine: "
                "its sessions' sockets cannot be reached from here (set "
                "c.HubgridDockerSpawner.isolated = False, which isolates nothing)",
                reason="config", status_code=500)
        self._start_began = time.monotonic()  # the start budget runs from here (mixin)
        if opts.session_type == "batch":
            self.session_env = {**self.session_env, "HUBGRID_BATCH_GO_FILE": self.BATCH_GO_FILE}

    async def _attach_gpus(self) -> bool:
        if self.attach_gpus != "auto":
            return self.attach_gpus == "always"
        url = self.docker_url or self.default_docker_url
        if url not in self._has_nvidia_runtime:  # asked once per engine
            info = await self.docker("info")
            type(self)._has_nvidia_runtime[url] = "nvidia" in (info.get("Runtimes") or {})
        return self._has_nvidia_runtime[url]

    def session_spec(self, attach_gpus: bool = True, image_labels: dict | None = None) -> SessionSpec:
        a = self.allocation
        slots = {k: Decimal(v) for k, v in a["slots"].items()}
        return SessionSpec(
            allocation=a["id"], user=a["user"], domain=a["domain"], project=a["project"],
            image=self.image, cpu=slots.get("cpu", Decimal(1)), mem=int(slots.get("mem", 0)),
            gpus=allocation_gpus(a["gpus"]),
            gpu_mode=self.gpu_sharing_mode, attach_gpus=attach_gpus, uid=self.session_uid, gid=self.session_gid,
            pids_limit=self.pids_limit, env=tuple(sorted(self.get_env().items())),
            mounts=vfolder_mounts(a.get("mounts", []), self.vfolder_mount_root)
            + (self._net.mounts(relay=not self.serving) if self._net else ()) + self._live_mounts(),
            enforcement=self.gpu_enforcement(image_labels or {}),
        )

    async def _image_labels(self) -> dict:
        """The session image's labels, read only in ``hami`` mode (they say
        whether and where the image carries HAMi-core)."""
        if self.gpu_sharing_mode != "hami" or not (self.allocation or {}).get("gpus"):
            return {}
        try:
            info = await self.docker("inspect_image", self.image)
        except docker.errors.ImageNotFound:
            return {}  # create_container says so
        return (info.get("Config") or {}).get("Labels") or {}

    async def create_object(self):
        await self._prepare_live_mounts()  # dockerlive.py: the session's live directory
        try:
            spec = self.session_spec(attach_gpus=await self._attach_gpus(),
                                     image_labels=await self._image_labels())
        except ValueError as e:
            raise SpawnException(f"cannot start the session: {e}", reason="invalid",
                                 status_code=400) from None
        body = container_config(spec)
        network = await self._prepare_network() if self._net else self.network_name
        host_config = {**body["HostConfig"], "NetworkMode": network, "AutoRemove": False}
        try:
            return await self._create(body, host_config)
        except docker.errors.ImageNotFound:
            raise SpawnException(f"image {spec.image} is not on node {self.allocation['node']}",
                                 reason="image", status_code=409) from None
        except docker.errors.APIError as e:  # e.g. a vfolder's path missing on the node
            raise SpawnException(f"node {self.allocation['node']} refused the session: "
                                 f"{e.explanation or e}", reason="backend",
                                 status_code=500) from None

    async def _create(self, body: dict, host_config: dict) -> dict:
        try:
            return await self.docker(
                "create_container", image=body["Image"], command=await self.get_command(),
                name=self.container_name, environment=body["Env"], labels=body["Labels"],
                user=body["User"], host_config=host_config,
            )
        except BaseException:
            self._count_start(-1)
            await self._drop_sandbox()  # no session container joined it
            raise

    def get_args(self):
        args = super().get_args()
        return args + self._net.server_args() if self._net else args

    def get_env(self):
        env = super().get_env()
        if self._net is None:
            return env
        return self.replica_env(self._net.environment(  # a replica: inference.py
            env, self.hub.api_url if self.hub else "/hub/api/", self.hubgrid.api_url))

    async def start(self):
        result = await super().start()
        if self._net is None:
            return result
        self._use_socket()
        await self._live_started()
        return self._net.server_url

    async def poll(self):
        if self._net is not None and self.object_id and not self._stopping:
            await self._check_server_socket()  # dockernet.py
        status = await super().poll()
        if status is None and self._net is not None and self.object_id and not self.serving:
            await self._ensure_relay()  # a hub that restarted
            if self._live_alloc:
                self._keep_live_mounts()
        elif status is not None and not self._stopping:
            # ended by itself: JupyterHub calls no stop() (nor after a failed
            # start whose container is gone), so its relay and directory go here
            await self._discard_network()
            await self._discard_live_mounts()
            await self._drop_sandbox()
        return status

    async def start_object(self):
        try:
            try:
                await super().start_object()
            except docker.errors.APIError as e:
                if not self._sandbox or self._sandbox not in str(e):
                    raise  # not its holder's fault
                await self._start_without_sandbox(e)
            await self._until_answering()
        finally:
            self._count_start(-1)

    async def check_allowed(self, image):
        # the service's image registry admitted the image with the session
        return self.image

    async def get_ip_and_port(self):
        return self.ip, self.port

    #: where a batch session waits for the hub's go (inside the container)
    BATCH_GO_FILE = "/tmp/hubgrid-batch-go"

    async def batch_go(self):
        ex = await self.docker("exec_create", self.object_id, ["touch", self.BATCH_GO_FILE],
                               user=f"{self.session_uid}:{self.session_gid}")
        await self.docker("exec_start", ex["Id"])

    async def stop_object(self):
        if self.object_id:  # a start that failed before the container existed
            await super().stop_object()

    async def stop(self, now=False):
        try:
            await super().stop(now=now)
        finally:
            self._count_start(-1)  # a start the hub gave up on
            await self._discard_network()
            await self._discard_live_mounts()
            await self._drop_sandbox()

    async def remove_object(self):
        # the session's network is not this method's to discard: DockerSpawner
        # also calls it to clear a leftover container before a start, which
        # then needs its network (stop() and poll() discard it when it ends)
        if not self.object_id:
            return
        # the output and exit code are kept before the container goes
        if self.allocation_id:
            await self.session_ended()
        await super().remove_object()
        await self._drop_sandbox()

    async def discard_session(self):
        if self.remove:
            await self.remove_object()
            self.object_id = ""

    # -- state ---------------------------------------------------------------

    def get_state(self):
        state = super().get_state()
        if self.docker_url:
            state.update(hubgrid_docker_url=self.docker_url, hubgrid_port=self.port)
        if self._net is not None:
            net = self._net  # (hubgrid_server_socket: where the serving gateway reaches it)
            state.update(hubgrid_socket_dir=net.directory, hubgrid_relay_port=net.relay_port,
                         hubgrid_server_socket=net.server_socket)
        if self._sandbox:
            state["hubgrid_sandbox"] = self._sandbox
        return state

    def load_state(self, state):
        super().load_state(state)
        self.docker_url = state.get("hubgrid_docker_url", "")
        if self.docker_url:
            self.ip = session_host(self.docker_url)
            self.port = int(state.get("hubgrid_port", 0))
        self._sandbox = state.get("hubgrid_sandbox", "")
        if state.get("hubgrid_socket_dir"):
            self._net = SessionNetwork(state["hubgrid_socket_dir"],
                                       int(state.get("hubgrid_relay_port", self.relay_port)))
            try:
                self._use_socket()
            except Exception:  # noqa: BLE001 - no server yet (a spawner being made)
                pass

    def clear_state(self):
        super().clear_state()
        # the engine is kept until the container is removed (stop() clears
        # the state before the hub forgets the server)
