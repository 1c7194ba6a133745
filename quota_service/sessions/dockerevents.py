"""Following the Docker engines' container exits: a session container that
dies behind the hub's back is released within seconds, not at the hub's
next poll.

Each engine (the nodes' Docker ``backend_url`` and ``docker_hosts``, as
for the image scan) is followed in a daemon thread of its own: docker-py's
event stream blocks. Only ``die`` events of containers carrying the label
the hubgrid spawner puts on every session container (``hubgrid.allocation``,
see spawner/builders.py) are asked for; ``container_exit`` reads one (pure).
A lost engine is asked again with a growing pause (1 s to 30 s), from the
time of the last event it sent, so exits in between are not missed.
``release_exited`` releases the allocation (once: releases are idempotent,
and the spawner's own release and log push still work afterwards).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from sqlalchemy.orm import Session, sessionmaker

from ..core import db
from ..scheduling import ledger
from ..core.models import Allocation

#: the label of a session container naming its allocation (spawner/builders.py)
LABEL = "hubgrid.allocation"
FILTERS = {"type": "container", "event": "die", "label": LABEL}
#: on the first connection, exits this many seconds old are still taken
REPLAY = 60
MAX_PAUSE = 30.0


@dataclass(frozen=True)
class Exit:
    """A session container that exited."""

    allocation: str
    exit_code: int | None
    engine: str
    container: str
    #: when the engine saw it, in seconds since the epoch
    at: float


def container_exit(event: dict, engine: str) -> Exit | None:
    """The ``Exit`` a Docker event reports, or None when it is not the
    ``die`` of a container labelled with an allocation. Pure."""
    if event.get("Type") != "container" or event.get("Action") != "die":
        return None
    actor = event.get("Actor") or {}
    attributes = actor.get("Attributes") or {}
    allocation = attributes.get(LABEL)
    if not allocation:
        return None
    code = attributes.get("exitCode")
    try:
        exit_code = int(code) if code is not None else None
    except ValueError:
        exit_code = None
    if "timeNano" in event:
        at = int(event["timeNano"]) / 1e9
    else:
        at = float(event.get("time") or 0)
    return Exit(allocation, exit_code, engine, str(actor.get("ID") or event.get("id") or ""),
                at)


def release_exited(factory: sessionmaker[Session], ex: Exit, now: dt.datetime,
                   base_url: str = "/") -> dict | None:
    """Release the allocation of a container that exited; its model, or None
    when there was nothing to release (unknown, not running, released
    already)."""
    with db.ledger_transaction(factory) as s:
        a = s.get(Allocation, ex.allocation)
        if a is None or a.state != "allocated":
            return None
        code = "unknown" if ex.exit_code is None else ex.exit_code
        return ledger.release_allocation(s, a, now, f"the container exited (code {code})",
                                         ex.exit_code, base_url)


class EngineFollower:
    """Follows one engine's session container exits in a daemon thread."""

    def __init__(self, url: str, make_client, deliver: Callable[[Exit], None], log,
                 timeout: float = 10.0):
        self.url = url
        self.make_client = make_client
        self.deliver = deliver
        self.log = log
        self.timeout = timeout
        self._stop = threading.Event()
        self._stream = None
        self._thread = threading.Thread(target=self._run, name=f"docker-events {url}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            try:
                stream.close()
            except Exception:  # noqa: BLE001 - closing a broken stream: nothing to do
                pass

    def _run(self) -> None:
        since = time.time() - REPLAY
        pause = 1.0
        while not self._stop.is_set():
            connected = time.time()
            client = None
            try:
                client = self.make_client(self.url, self.timeout)
                self._stream = client.events(since=int(since), filters=FILTERS, decode=True)
                self.log.info("following the container exits of docker engine %s", self.url)
                pause = 1.0
                for event in self._stream:
                    ex = container_exit(event, self.url)
                    if ex is not None:
                        since = max(since, int(ex.at))
                        self.deliver(ex)
                    if self._stop.is_set():
                        return
                problem = "the event stream ended"
            except Exception as e:  # noqa: BLE001 - any failure: ask the engine again later
                problem = f"{type(e).__name__}: {e}"[:300]
            finally:
                self._stream = None
                close = getattr(client, "close", None)
                if close is not None:
                    close()
            if self._stop.is_set():
                return
            since = max(since, connected - 1)
            self.log.info("docker engine %s: %s; following its container exits again in "
                          "%g s", self.url, problem, pause)
            self._stop.wait(pause)
            pause = min(pause * 2, MAX_PAUSE)


class DockerEvents:
    """The followers of a set of engines."""

    def __init__(self, make_client, deliver: Callable[[Exit], None], log,
                 timeout: float = 10.0):
        self.make_client = make_client
        self.deliver = deliver
        self.log = log
        self.timeout = timeout
        self.followers: dict[str, EngineFollower] = {}

    def sync(self, urls: list[str]) -> None:
        """Follow exactly ``urls``."""
        for url in list(self.followers):
            if url not in urls:
                self.log.info("no longer following docker engine %s", url)
                self.followers.pop(url).stop()
        for url in urls:
            if url not in self.followers:
                follower = EngineFollower(url, self.make_client, self.deliver, self.log,
                                          self.timeout)
                self.followers[url] = follower
                follower.start()

    def stop(self) -> None:
        self.sync([])


async def follow(urls_of: Callable[[], list[str]], make_client,
                 on_exit: Callable[[Exit], Awaitable[None]], log, refresh: float = 10.0,
                 timeout: float = 10.0) -> None:
    """Follow the engines ``urls_of()`` names (blocking: asked in a worker
    thread every ``refresh`` seconds, so new nodes are followed) and await
    ``on_exit`` on the event loop for every exit, until cancelled."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task] = set()

    def spawn(ex: Exit) -> None:
        task = asyncio.ensure_future(on_exit(ex))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    events = DockerEvents(make_client, lambda ex: loop.call_soon_threadsafe(spawn, ex), log,
                          timeout)
    try:
        while True:
            try:
                events.sync(await asyncio.to_thread(urls_of))
            except Exception as e:  # noqa: BLE001 - the database may be busy: next time
                log.warning("could not list the docker engines to follow: %s", e)
            await asyncio.sleep(refresh)
    finally:
        events.stop()
