"""Calls to an endpoint with no replica routed: held while one starts.

What a call finds (``verdict``, pure), once it is allowed in:

- ``route``: replicas are routed: it goes on;
- ``wake``: the endpoint is scaled to zero by its autoscaling rules: the
  gateway asks the service for a replica (``POST internal/serving/wake``,
  once per endpoint however many calls wait) and holds the call;
- ``wait``: the endpoint wants replicas and none is routed yet (starting,
  or just woken): the call is held;
- ``failed``: the endpoint failed: 503 at once, with its reason;
- ``zero``: it is at zero replicas by hand (no rule may wake it): 503 at
  once, saying so.

A held call goes on as soon as a replica is routed (the gateway syncs every
half second while calls wait) and answers (haproxy's first probe may still
be pending: the call is tried again, never sent twice to a replica since
haproxy answered it itself); after ``timeout`` seconds it is a 503 saying
how long it waited. The time held counts in the call's time.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

from .table import Endpoint, Table


class Unavailable(Exception):
    """A held call that cannot go on: its message says why (a 503)."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.message, self.code = message, code


def verdict(e: Endpoint) -> str:
    """``route``, ``wake``, ``wait``, ``failed`` or ``zero`` (see the module's text)."""
    if e.route.replicas:
        return "route"
    if e.state == "failed":
        return "failed"
    if e.wanted > 0:
        return "wait"
    return "wake" if e.wake else "zero"


class Hold:
    """Holds calls until their endpoint has a replica routed.

    ``table`` gives the gateway's current table, ``changed`` an event set
    at the next table, ``ask_wake`` asks the service for a replica (raises
    Unavailable when it refuses), ``nudge`` syncs at once."""

    def __init__(self, table: Callable[[], Table], changed: Callable[[], asyncio.Event],
                 ask_wake: Callable[[str], Awaitable[None]], nudge: Callable[[], None],
                 timeout: float = 180.0):
        self.table, self.changed, self.ask_wake, self.nudge = table, changed, ask_wake, nudge
        self.timeout = timeout
        self.waiting = 0  # calls held now (the sync's pace follows it)
        self.asked: dict[str, tuple[asyncio.Future, float]] = {}

    def deadline(self) -> float:
        return time.monotonic() + self.timeout

    async def _wake(self, endpoint_id: str) -> None:
        """Ask once for the calls that wait (again after 5 s if still at zero)."""
        task, at = self.asked.get(endpoint_id, (None, 0.0))
        if task is None or (task.done() and time.monotonic() - at > 5):
            task = asyncio.ensure_future(self.ask_wake(endpoint_id))
            self.asked[endpoint_id] = (task, time.monotonic())
        try:
            await asyncio.shield(task)
        except Unavailable:
            self.asked.pop(endpoint_id, None)
            raise
        self.nudge()

    async def ready(self, endpoint_id: str, deadline: float) -> Endpoint:
        """The endpoint once a replica of it is routed; Unavailable otherwise."""
        while True:
            e = self.table().endpoints.get(endpoint_id)
            if e is None:
                raise Unavailable("the endpoint is gone", "gone")
            v = verdict(e)
            if v == "route":
                self.asked.pop(endpoint_id, None)
                return e
            if v == "failed":
                raise Unavailable(f"endpoint {e.name!r} failed: {e.state_reason}", "failed")
            if v == "zero":
                raise Unavailable(f"endpoint {e.name!r} is scaled to zero and no autoscaling "
                                  "rule of it may start it: its owner or an admin must scale "
                                  "it up", "scaled_to_zero")
            left = deadline - time.monotonic()
            if left <= 0:
                raise Unavailable(f"no replica of endpoint {e.name!r} was ready within "
                                  f"{self.timeout:g} s (it is starting: try again shortly)"
                                  if self.timeout else f"endpoint {e.name!r} has no replica "
                                  "ready; try again shortly", "no_replica")
            changed = self.changed()
            if v == "wake":
                await self._wake(endpoint_id)
            self.waiting += 1
            try:
                await asyncio.wait_for(changed.wait(), left)
            except asyncio.TimeoutError:
                pass
            finally:
                self.waiting -= 1
