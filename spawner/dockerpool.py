"""The warm pool of network sandboxes, as HubgridDockerSpawner uses it.

The spawner's side of spawner/sandboxes.py (a mixin before
HubgridSpawnerMixin in HubgridDockerSpawner's bases; its setting is the
spawner's): an isolated session joins a holder's network namespace taken
from the pool of its engine, image and network, the pool fills again after
the take, and the holder goes with the session. A holder that cannot be
joined is given up and the session starts in a namespace of its own.
"""

from __future__ import annotations

from traitlets import Float, Integer, TraitError, validate
from traitlets.config import Configurable

from .sandboxes import (REAP_INTERVAL, REAP_MIN_AGE, SANDBOXES, PoolKey, joined_mode,
                        loop_running)


class SandboxPoolMixin(Configurable):
    """For HubgridDockerSpawner: the session's holder from the warm pool."""

    sandbox_pool_size = Integer(
        8,
        help="""Idle network sandboxes kept per local engine and session image
        for isolated sessions: containers that only sleep in a namespace of
        their own (``none``, or ``egress_network``). A session joins one
        instead of waiting for Docker to set up its namespace; each serves
        one session and goes with it; the pool fills again in the background
        when no start is under way. Costs that many idle containers (16 MiB
        limit each) per engine and image. 0: no pool (docs/sessions.md).""",
    ).tag(config=True)

    sandbox_reap_interval = Float(
        REAP_INTERVAL,
        help="""Seconds between two passes of the running hub that remove the
        network sandboxes no session took or kept: holders an earlier hub
        process left (killed mid-start: its idle pool, holders taken for
        starts it never finished) and holders of this process that are in
        no pool and joined by no session. A holder a session is taking is
        never removed. Example: ``c.HubgridDockerSpawner.sandbox_reap_interval = 30``.""",
    ).tag(config=True)

    sandbox_reap_min_age = Float(
        REAP_MIN_AGE,
        help="""Seconds a holder of this hub process is left alone by that
        pass after it was made (one being made is in no pool yet). Lower it
        only where holders start fast: a second or two on a busy node.
        Example: ``c.HubgridDockerSpawner.sandbox_reap_min_age = 30``.""",
    ).tag(config=True)

    @validate("sandbox_reap_interval", "sandbox_reap_min_age")
    def _check_reaping(self, proposal):
        if not proposal.value > 0:
            raise TraitError(f"{proposal.trait.name} must be positive, not {proposal.value}")
        return proposal.value

    @validate("sandbox_pool_size")
    def _check_pool_size(self, proposal):
        if proposal.value < 0:
            raise TraitError(f"sandbox_pool_size {proposal.value}: 0 (off) or more")
        return proposal.value

    #: the holder whose network namespace the session joined ("" for none)
    _sandbox = ""
    #: set while a start retries without the pool (its holder failed)
    _skip_pool = False

    def _pool_key(self, mode: str) -> PoolKey:
        return PoolKey(self.docker_url or self.default_docker_url, self.image, mode)

    def _fill_pool(self, key: PoolKey) -> None:
        SANDBOXES.reaping(self.sandbox_reap_interval, self.sandbox_reap_min_age)
        SANDBOXES.fill(key, self._client_for(key.engine), self.sandbox_pool_size,
                       self.hub.api_url if self.hub else "", self.session_uid, self.session_gid)

    def _take_sandbox(self, mode: str) -> str:
        """The network mode of the session: a holder's namespace from the
        pool, or ``mode`` (a namespace of its own) when the pool is empty."""
        if self.sandbox_pool_size <= 0 or self._skip_pool:
            return mode
        key = self._pool_key(mode)
        self._count_start(+1)
        self._sandbox = SANDBOXES.take(key) or ""
        self._fill_pool(key)
        return joined_mode(self._sandbox) if self._sandbox else mode

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # the hub makes a user's spawner at login: the pool of the default
        # engine, image and network begins to fill before the first start
        if self.isolated and self.sandbox_pool_size > 0 and not self.egress_network \
                and self.hub is not None and loop_running():
            self._fill_pool(PoolKey(self.default_docker_url, self.image, "none"))

    _counted = False

    def _count_start(self, delta: int) -> None:  # for the pool's fill: +1, then -1 once
        if self._counted != (delta > 0):
            self._counted = delta > 0
            SANDBOXES.starting(self.docker_url or self.default_docker_url, delta)

    async def _drop_sandbox(self) -> None:
        """The session's container is gone: its holder goes too (never reused)."""
        holder, self._sandbox = self._sandbox, ""
        if holder:
            await SANDBOXES.remove(self.client, holder)

    async def _start_without_sandbox(self, error) -> None:
        """Its holder could not be joined (stopped with its engine, removed): the
        idle ones of that pool go, and the session starts in a namespace of its own."""
        self.log.warning("%s: could not join network sandbox %s (%s); starting without",
                         self._log_name, self._sandbox[:12], getattr(error, "explanation", error))
        key = self._pool_key(self.egress_network or "none")
        for holder in SANDBOXES.forget(key):
            await SANDBOXES.remove(self.client, holder)
        self._fill_pool(key)
        await self.docker("remove_container", self.object_id, force=True)
        await self._drop_sandbox()
        self._skip_pool = True
        try:
            self.object_id = (await self.create_object())["Id"]
        finally:
            self._skip_pool = False
        await super().start_object()
