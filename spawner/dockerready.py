"""Whether a HubgridDockerSpawner session's server answers, and how its container ended.

The spawner's side of spawner/readiness.py (a mixin before
HubgridSpawnerMixin in HubgridDockerSpawner's bases; its setting is the
spawner's): start() returns once the server answers, an isolated session's
only once its socket is pinned; a container that exits or is removed first
fails the start at once. The container's output and exit code are what
HubgridSpawnerMixin keeps in the session's log when it ends.
"""

from __future__ import annotations

import time

import docker
from jupyterhub.spawner import SpawnException
from jupyterhub.utils import fmt_ip_url
from traitlets import Float
from traitlets.config import Configurable

from . import readiness
from .sockpin import PinError


class ContainerReadinessMixin(Configurable):
    """For HubgridDockerSpawner: waiting for the server, and the container's end."""

    ready_poll_interval = Float(
        0.1,
        help="""How often start() asks the started server whether it answers
        (seconds): start() returns once it does, so the hub's first check finds
        it (the hub's own checks come at random times up to 5 s apart, about
        1.5 s late on average). It waits at most ``http_timeout`` (then the
        start fails, as the hub's check would) and within ``start_timeout``;
        a container that exits first fails the start at once. 0: start()
        returns as soon as the container runs; an isolated session's is
        still waited for (every 0.1 s), since the hub reaches its server only
        once the spawner has pinned its socket (docs/sessions.md).""",
    ).tag(config=True)

    #: when the start budget began (set when the allocation is applied)
    _start_began = 0.0

    async def _until_answering(self):
        """Return once the server answers (ready_poll_interval); an isolated
        session's only once its socket is pinned, whatever the interval (the
        hub and the proxy reach it nowhere else)."""
        interval = self.ready_poll_interval
        if self._net is None and (interval <= 0 or self.internal_ssl or self.server is None):
            return
        budget_left = self.start_timeout - (time.monotonic() - self._start_began) - 1
        window = min(self.http_timeout, budget_left)
        origin = self._net.server_url if self._net else f"http://{fmt_ip_url(self.ip)}:{self.port}"
        url = f"{origin}{self.server.base_url if self.server else '/'}api"
        try:
            up = await readiness.until_answering(url, interval=interval if interval > 0 else 0.1,
                                                 timeout=max(window, 0),
                                                 exit_code=self._exit_code_while_starting,
                                                 ready=self._pin_server if self._net else None)
        except readiness.ServerExited as e:
            raise SpawnException(f"the session's server exited with code {e.code} before "
                                 "it answered", reason="backend", status_code=500) from None
        except PinError as e:
            raise SpawnException(f"not started: {e}", reason="backend", status_code=500) from None
        if not up and window >= self.http_timeout:
            raise SpawnException(f"the session's server did not answer within "
                                 f"{self.http_timeout:g} s (http_timeout)", reason="timeout",
                                 status_code=500)
        # else the start budget is nearly spent: the hub's own checks go on

    async def session_log(self, offset: int) -> bytes:
        if not self.object_id:
            return b""
        try:
            data = await self.docker("logs", self.object_id, stdout=True, stderr=True)
        except docker.errors.NotFound:
            return b""
        return data[offset:]

    async def _exit_code_while_starting(self) -> int | None:
        """session_exit_code (one inspect), and a container removed while its server
        starts (``docker rm -f`` by someone else) fails the start at once,
        not after http_timeout as a server that did not answer."""
        try:
            state = (await self.docker("inspect_container", self.object_id))["State"]
        except docker.errors.NotFound:
            raise SpawnException("the session's container was removed before its server "
                                 "answered", reason="backend", status_code=500) from None
        return None if state["Running"] else int(state["ExitCode"])

    async def session_exit_code(self) -> int | None:
        if not self.object_id:
            return None
        try:
            state = (await self.docker("inspect_container", self.object_id))["State"]
        except docker.errors.NotFound:
            return None
        return None if state["Running"] else int(state["ExitCode"])
