"""The gateway in step with the service: an IO edge.

Every ``interval`` seconds (and at start) it reads the route table from the
service (``GET serving/routes``), has the balancer serve it, then the
handlers; and reports back what it saw (``POST serving/report``): each
replica's health as haproxy's probes judge it, and the calls counted per
endpoint since the last report. A service that cannot be reached leaves
the last table in force for a while (calls keep flowing to the replicas
known), for ``State.max_age`` seconds after it was read at most: past that
the handlers refuse every call until a sync succeeds again, since a token
revoked or an endpoint deactivated meanwhile would still be honoured.

While calls are held for a cold start (gateway/coldstart.py) it syncs every
half second, and at once after asking the service to wake an endpoint
(``POST serving/wake``).
"""

from __future__ import annotations

import asyncio
import logging

import httpx

from . import table as tablelib
from .app import State
from .balancer import Balancer
from .coldstart import Unavailable

log = logging.getLogger("hubgrid.gateway")


class Sync:
    def __init__(self, api_url: str, token: str, balancer: Balancer, state: State,
                 interval: float = 2.0):
        self.api_url = api_url.rstrip("/") + "/"
        self.headers = {"Authorization": f"hubgrid-internal {token}"}
        self.balancer = balancer
        self.state = state
        self.interval = interval
        self.http = httpx.AsyncClient(timeout=20)
        self.task: asyncio.Task | None = None
        self.wake = asyncio.Event()

    async def once(self) -> None:
        r = await self.http.get(self.api_url + "internal/serving/routes", headers=self.headers)
        r.raise_for_status()
        table = tablelib.read(r.json())
        await self.balancer.apply(table.routes)
        await self.state.set_table(table)
        replicas = [{"endpoint": s.endpoint_id, "name": s.name, "up": s.up, "status": s.status,
                     "check": s.check, "detail": s.check_detail,
                     "down_transitions": s.down_transitions, "calls": s.sessions,
                     "in_flight": s.in_flight}
                    for s in await self.balancer.status()]
        calls = self.state.counts.take()
        try:
            r = await self.http.post(self.api_url + "internal/serving/report", headers=self.headers,
                                     json={"replicas": replicas, "calls": calls})
            r.raise_for_status()
        except httpx.HTTPError:
            self.state.counts.give_back(calls)  # counted again in the next report
            raise

    async def ask_wake(self, endpoint_id: str) -> None:
        """Ask the service for a replica of an endpoint at zero; Unavailable
        with the service's reason when it refuses or cannot be reached."""
        try:
            r = await self.http.post(self.api_url + "internal/serving/wake", headers=self.headers,
                                     json={"endpoint": endpoint_id})
        except httpx.HTTPError as e:
            raise Unavailable("the service cannot be reached to start a replica "
                              f"({type(e).__name__})", "unavailable") from None
        if r.status_code == 200:
            return
        try:
            message = str(r.json().get("message") or "")
        except ValueError:
            message = ""
        raise Unavailable(message or f"the service did not start a replica ({r.status_code})",
                          "scaled_to_zero" if r.status_code == 409 else "unavailable")

    def nudge(self) -> None:
        self.wake.set()

    async def _loop(self) -> None:
        while True:
            try:
                await self.once()
            except Exception as e:  # noqa: BLE001 - the last table, while trusted (app.State)
                log.warning("gateway: cannot sync with the service: %s", e)
            try:
                pace = min(self.interval, 0.5) if self.state.hold.waiting else self.interval
                await asyncio.wait_for(self.wake.wait(), pace)
            except asyncio.TimeoutError:
                pass
            self.wake.clear()

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self.task:
            self.task.cancel()
        await self.http.aclose()
