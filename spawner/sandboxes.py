"""A warm pool of network sandboxes per local Docker engine (isolated sessions).

Docker sets up a network sandbox (a network namespace) whenever it starts a
container with a network of its own, ``none`` included, and that costs a
start about 0.1 s more than host networking, more when several start at
once. A container that joins the namespace of a running one
(``NetworkMode: container:<id>``) starts as fast as a host-networked one.
So, as Kubernetes' pause containers do, the hub keeps a few idle *holders*
per (engine, image, network): small containers that only sleep in a
namespace of their own (``none``, or the admin's checked egress network).
An isolated session takes one and joins its namespace; each holder serves
exactly one session and is removed with it, never reused (a namespace a
session had is never given to another). After a take the pool fills again
in the background, once no session of the hub is starting on that engine
(a holder's start costs what a session's does: made during a burst, it
slows the burst down). An empty pool (the first start, a burst, an image the
holders cannot run) costs nothing: the session gets a namespace of its own
from Docker, as without a pool.

The holders run the session image being started (it is on that engine for
sure) with ``sleep infinity`` as entrypoint: no capabilities, no new
privileges, a read-only root filesystem, 16 MiB and 8 processes at most,
the sessions' non-root uid. Their labels say whose they are:
``hubgrid.sandbox`` (the hub: its API URL) and ``hubgrid.sandbox.process``
(this hub process). The first fill of a pool on an engine removes that
hub's holders left by an earlier process of it and not joined by any
container (pool members never taken, holders whose session is gone). While
the hub runs, a pass every ``REAP_INTERVAL`` seconds removes the holders no
session took or kept: an earlier process's that no container joined (a
session a restarted hub stopped leaves its holder), and this process's that
are neither idle in a pool, nor taken by a session starting or running, nor
joined by a container, nor younger than ``REAP_MIN_AGE`` (one being made).
The spawner's ``sandbox_reap_interval`` and ``sandbox_reap_min_age`` set
those two (``Sandboxes.reaping``).

Decisions are pure functions (``holder_config``, ``stale_holders``); the
``Sandboxes`` registry (``SANDBOXES``, like relay.py's ``RELAYS``) does the
Docker calls, in threads, on the spawner's clients.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import time
import uuid
from dataclasses import dataclass, field

import docker

log = logging.getLogger("JupyterHub")

#: the labels of a holder: the hub that owns it, and the hub process that made it
HUB_LABEL = "hubgrid.sandbox"
PROCESS_LABEL = "hubgrid.sandbox.process"
#: a holder's limits (it runs one sleep)
HOLDER_MEMORY = 16 * 2**20
HOLDER_PIDS = 8
#: holders a fill makes at once (Docker sets their namespaces up side by side:
#: a pool fills in the time of a few starts, not of one start per holder)
FILL_AT_ONCE = 4
#: after a failed fill (e.g. the image cannot run ``sleep``), wait this long before trying again
RETRY_AFTER = 30.0
#: a fill waits until no session of this hub is starting on the engine (a
#: holder's start costs what a session's start costs: made during a burst it
#: slows the burst down), but at most this long
QUIET_WAIT = 120.0
#: seconds between two passes that remove the holders nobody took or kept
REAP_INTERVAL = 60.0
#: a holder younger than this is never reaped: it may be being made
REAP_MIN_AGE = 120.0
#: a holder taken this long ago and still joined by no container is reaped
#: (its session's start is over, one way or another)
TAKEN_GRACE = 900.0


@dataclass(frozen=True)
class PoolKey:
    """Holders are interchangeable within one key: same engine, same image,
    same network mode (``none`` or the egress network's name)."""

    engine: str
    image: str
    network: str


def holder_config(key: PoolKey, owner: str, process: str, uid: int, gid: int) -> dict:
    """``create_container`` keyword arguments (less host_config's building)
    of one holder: ``host_config`` is the HostConfig dict."""
    return {
        "image": key.image,
        "entrypoint": ["sleep"],
        "command": ["infinity"],
        "user": f"{uid}:{gid}",
        "labels": {HUB_LABEL: owner, PROCESS_LABEL: process},
        "host_config": {
            "NetworkMode": key.network,
            "Memory": HOLDER_MEMORY,
            "MemorySwap": HOLDER_MEMORY,
            "PidsLimit": HOLDER_PIDS,
            "Privileged": False,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "ReadonlyRootfs": True,
            "AutoRemove": False,
        },
    }


def loop_running() -> bool:
    """Whether an asyncio loop runs here (a fill can be started)."""
    try:
        return asyncio.get_running_loop() is not None
    except RuntimeError:
        return False


def joined_mode(holder_id: str) -> str:
    """The NetworkMode of a session in ``holder_id``'s namespace."""
    return f"container:{holder_id}"


def stale_holders(holders: list[dict], containers: list[dict], owner: str,
                  process: str, kept: frozenset[str] | None = None,
                  now: float | None = None, min_age: float | None = None) -> list[str]:
    """Ids of the ``holders`` (``docker ps -a`` entries labelled
    ``hubgrid.sandbox``) to remove: ``owner``'s that no container of
    ``containers`` (every container of the engine) has joined, from another
    process than ``process``; and, when ``kept`` is given (the holders this
    process keeps: idle in a pool, taken by a session), this process's that
    are not kept and were made ``min_age`` (default ``REAP_MIN_AGE``)
    seconds or more before ``now`` (epoch seconds: docker's ``Created``).
    Other hubs' holders are theirs to clean."""
    min_age = REAP_MIN_AGE if min_age is None else min_age
    joined = {(c.get("HostConfig") or {}).get("NetworkMode", "") for c in containers}
    out = []
    for h in holders:
        labels = h.get("Labels") or {}
        if labels.get(HUB_LABEL) != owner:
            continue
        if joined_mode(h["Id"]) in joined:
            continue  # a session still runs in it: its stop() removes it
        if labels.get(PROCESS_LABEL) == process:
            if kept is None or h["Id"] in kept or now is None \
                    or now - float(h.get("Created") or now) < min_age:
                continue
        out.append(h["Id"])
    return out


@dataclass
class _Pool:
    idle: list[str] = field(default_factory=list)
    task: asyncio.Task | None = None
    failed_at: float = -RETRY_AFTER


class Sandboxes:
    """The hub's pools, by PoolKey (one hub process)."""

    def __init__(self):
        self.process = uuid.uuid4().hex
        self._pools: dict[PoolKey, _Pool] = {}
        self._cleaned: set[str] = set()  # engines whose stale holders went
        self._clients: dict[str, docker.APIClient] = {}  # engine -> client (for drain)
        self._starting: dict[str, int] = {}  # engine -> sessions of this hub starting there
        self._taken: dict[str, float] = {}  # holder -> when a session took it (monotonic)
        self._reaper: asyncio.Task | None = None
        #: the pass's interval and the youngest holder it reaps (None: the defaults)
        self.reap_interval: float | None = None
        self.reap_min_age: float | None = None

    def reaping(self, interval: float, min_age: float) -> None:
        """Reap every ``interval`` seconds the holders made ``min_age``
        seconds ago or more (the spawner's settings; the next pass on)."""
        self.reap_interval, self.reap_min_age = interval, min_age

    def starting(self, engine: str, delta: int) -> None:
        """A session begins (+1) or ends (-1) its start on ``engine``."""
        self._starting[engine] = max(0, self._starting.get(engine, 0) + delta)

    async def _quiet(self, engine: str) -> None:
        deadline = time.monotonic() + QUIET_WAIT
        while self._starting.get(engine, 0) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)

    def idle(self, key: PoolKey) -> list[str]:
        pool = self._pools.get(key)
        return list(pool.idle) if pool else []

    def take(self, key: PoolKey) -> str | None:
        """An idle holder of ``key`` (now the caller's alone), or None."""
        pool = self._pools.get(key)
        if not pool or not pool.idle:
            return None
        holder = pool.idle.pop(0)
        self._taken[holder] = time.monotonic()
        return holder

    def kept(self) -> frozenset[str]:
        """The holders this process keeps: idle in a pool, or taken by a
        session less than TAKEN_GRACE seconds ago (joined ones are kept by
        their container)."""
        now = time.monotonic()
        taken = {h for h, at in self._taken.items() if now - at < TAKEN_GRACE}
        return frozenset(taken.union(*(p.idle for p in self._pools.values())))

    def forget(self, key: PoolKey) -> list[str]:
        """Drop every idle holder of ``key`` (they failed a session): the ids."""
        pool = self._pools.get(key)
        if pool is None:
            return []
        gone, pool.idle = pool.idle, []
        return gone

    def fill(self, key: PoolKey, client: docker.APIClient, size: int, owner: str,
             uid: int, gid: int) -> asyncio.Task | None:
        """Start filling ``key``'s pool up to ``size`` in the background
        (unless it is filling, full, or failed less than RETRY_AFTER ago)."""
        pool = self._pools.setdefault(key, _Pool())
        if not self._clients and size > 0:
            atexit.register(self.drain)
        self._clients.setdefault(key.engine, client)
        if size > 0 and (self._reaper is None or self._reaper.done()):
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever(owner))
        if size <= 0 or (pool.task and not pool.task.done()) or len(pool.idle) >= size \
                or time.monotonic() - pool.failed_at < RETRY_AFTER:
            return None
        pool.task = asyncio.get_running_loop().create_task(
            self._fill(key, pool, client, size, owner, uid, gid))
        return pool.task

    async def _fill(self, key, pool, client, size, owner, uid, gid) -> None:
        try:
            if key.engine not in self._cleaned:
                self._cleaned.add(key.engine)
                await self.clean(client, owner)
            config = holder_config(key, owner, self.process, uid, gid)
            while len(pool.idle) < size:
                await self._quiet(key.engine)
                made = await asyncio.gather(*(
                    self._make(client, config)
                    for _ in range(min(size - len(pool.idle), FILL_AT_ONCE))),
                    return_exceptions=True)
                pool.idle += [m for m in made if isinstance(m, str)]
                failed = [m for m in made if not isinstance(m, str)]
                if failed:
                    raise failed[0]
        except Exception as e:  # noqa: BLE001 - a pool that cannot fill is only slower
            pool.failed_at = time.monotonic()
            log.warning("network sandboxes of %s on %s: %s (sessions start without)",
                        key.image, key.engine, getattr(e, "explanation", None) or e)

    def drain(self) -> None:
        """Remove every idle holder (blocking): the hub is exiting. Taken
        holders stay with their sessions; a holder still being made when
        the hub stops is left to the next fill's clean."""
        for key, pool in self._pools.items():
            idle, pool.idle = pool.idle, []
            for holder in idle:
                try:
                    self._clients[key.engine].remove_container(holder, force=True)
                except Exception:  # noqa: BLE001 - exiting: the next clean takes it
                    pass

    async def _make(self, client: docker.APIClient, config: dict) -> str:
        holder = (await asyncio.to_thread(lambda: client.create_container(**config)))["Id"]
        try:
            await asyncio.to_thread(client.start, holder)
        except BaseException:
            await self.remove(client, holder)
            raise
        return holder

    async def clean(self, client: docker.APIClient, owner: str,
                    reap: bool = False) -> list[str]:
        """Remove ``owner``'s stale holders on ``client``'s engine: their ids.
        ``reap``: this process's holders that nobody keeps too (the pass)."""
        holders = await asyncio.to_thread(client.containers, all=True,
                                          filters={"label": [HUB_LABEL]})
        mine = [h for h in holders if (h.get("Labels") or {}).get(HUB_LABEL) == owner]
        if not mine:
            return []
        everything = await asyncio.to_thread(client.containers, all=True)
        # what this process keeps is read after the listings: a holder taken
        # or put in a pool meanwhile is in it
        stale = stale_holders(mine, everything, owner, self.process,
                              self.kept() if reap else None, time.time(), self.reap_min_age)
        for holder in stale:
            await self.remove(client, holder)
        if stale:
            log.info("removed %d network sandbox(es) no session took or kept", len(stale))
        return stale

    async def reap(self, owner: str) -> list[str]:
        """One pass over every engine this process has a pool on."""
        gone = []
        for engine, client in list(self._clients.items()):
            try:
                gone += await self.clean(client, owner, reap=True)
            except Exception as e:  # noqa: BLE001 - an engine down: the next pass
                log.warning("network sandboxes on %s: could not reap: %s", engine, e)
        return gone

    async def _reap_forever(self, owner: str) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL if self.reap_interval is None
                                else self.reap_interval)
            await self.reap(owner)

    async def remove(self, client: docker.APIClient, holder: str) -> None:
        self._taken.pop(holder, None)
        try:
            await asyncio.to_thread(client.remove_container, holder, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if e.status_code != 409:  # 409: already being removed
                log.warning("could not remove network sandbox %s: %s", holder[:12], e)


#: the hub's network sandboxes
SANDBOXES = Sandboxes()
