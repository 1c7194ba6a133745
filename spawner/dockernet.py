"""An isolated Docker session's directories, relay and pinned server socket.

The IO edge of spawner/isolation.py for HubgridDockerSpawner (a mixin
before it in the bases). The session's directory ``<root>/<allocation>/``
is made by the hub, root's, with the session's own ``session/`` (its uid,
0700) and the relay's ``relay/`` (root's) in it. The hub pins the server's
socket (spawner/sockpin.py) before anything connects to it, and checks at
each poll that the session's name still is the pinned socket: a session
that removes or replaces it (a link to anything) is stopped.
"""

from __future__ import annotations

import os
import shutil

import docker
from jupyterhub.spawner import SpawnException

from . import sockpin
from .isolation import SERVER_SOCKET, SessionNetwork, egress_refusal, gateway_url, relay_routes
from .relay import RELAYS


async def close_network(net: SessionNetwork) -> None:
    """Close a session's relay and remove its directory: ``rmtree`` opens
    each level without following links (what the session left in its own
    ``session/`` is removed, never what a link there points to)."""
    await RELAYS.close(net.relay_socket)
    shutil.rmtree(net.directory, ignore_errors=True)


class SessionNetworkMixin:
    """The isolated network of a HubgridDockerSpawner session."""

    #: an isolated session's sockets (None: host networking, or no session)
    _net: SessionNetwork | None = None

    async def _prepare_network(self) -> str:
        """The session's directories and relay, made before its container; the
        network mode it gets (``none``, or the checked egress network)."""
        mode = "none"
        if self.egress_network:
            try:
                info = await self.docker("inspect_network", self.egress_network)
            except docker.errors.NotFound:
                info = None
            refusal = egress_refusal(info, self.egress_network)
            if refusal:
                raise SpawnException(f"not started: {refusal}", reason="config", status_code=500)
            mode = self.egress_network
        net = self._net
        try:
            os.makedirs(os.path.dirname(os.path.dirname(net.directory)), exist_ok=True)
            sockpin.private_dir(os.path.dirname(net.directory), 0o711, make=True)
        except OSError as e:
            raise SpawnException(f"not started: session_socket_root: {e.strerror}",
                                 reason="config", status_code=500) from None
        await self._close_network()  # what a failed earlier start left
        # modes set outright: the hub may run with umask 077 (make run), and the
        # session must traverse to its relay's socket
        # the session's directory is root's alone: the pin, whose mode the
        # session sets (it is its socket), is reached by root only (the hub,
        # the proxy, haproxy); the session reaches its two directories
        # through its mounts, which need no way through here
        for path, perms in ((net.directory, 0o700), (net.session_dir, 0o700),
                            (net.relay_dir, 0o755)):
            os.mkdir(path, perms)
            os.chmod(path, perms)  # just made, in a directory only root writes
        os.chown(net.session_dir, self.session_uid, self.session_gid, follow_symlinks=False)
        if not self.serving:  # a replica calls nothing: no relay
            await self._ensure_relay()
        return self._take_sandbox(mode)

    def _relay_routes(self):  # the hub's API, the service's, the gateway (through the proxy)
        return relay_routes(self.hub.api_url if self.hub else "", self.hubgrid.api_url,
                            gateway_url(self.public_api_url()))

    async def _ensure_relay(self) -> None:
        await RELAYS.ensure(self._net.relay_socket, self._relay_routes(),
                            self.session_uid, self.session_gid)

    async def _close_network(self) -> None:
        if self._net is not None:
            await close_network(self._net)

    async def _discard_network(self) -> None:
        """The session is gone: its relay and directory go too."""
        await self._close_network()
        self._net = None

    def _use_socket(self) -> None:
        """The hub and the proxy reach the server on its pinned socket (a URL
        with no port and the path's own case: JupyterHub's own parse of
        start()'s URL adds port 80 and lowercases it)."""
        if self._net is not None and self.server is not None:
            self.server.connect_url = self._net.server_url

    def _pin_server(self) -> bool:
        """Pin the server's socket once the session made it: True when
        pinned, False while it is not there yet; PinError when the session
        put something else there."""
        net = self._net
        return sockpin.pin(net.session_dir, SERVER_SOCKET, net.server_socket)

    async def _check_server_socket(self) -> None:
        """Stop a running session whose server's socket is not the pinned one
        any more (removed, or replaced by a link or another socket): nothing
        reaches it then, and a session that swaps its socket is up to no good.
        Pins it first when a hub restarted between its start and its pin."""
        net = self._net
        fresh = sockpin.current(net.session_dir, SERVER_SOCKET, net.server_socket)
        why = "vanished or was replaced"
        if fresh is None:
            try:
                self._pin_server()
                return
            except sockpin.PinError as e:
                fresh, why = False, str(e)
        if fresh is False and await self.session_exit_code() is None:
            self.log.warning("%s: the server's socket %s %s; stopping the session",
                             self._log_name, net.session_dir, why)
            try:
                await self.docker("kill", self.object_id)
            except docker.errors.APIError:
                pass
