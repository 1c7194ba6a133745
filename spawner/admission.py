"""Waiting for admission: follow a pending allocation until the service decides.

The spawner keeps one long-poll open (``GET internal/allocations/{id}?wait=``)
while its request waits in the queue: the service answers when the state or
the pending reasons change, and an open long-poll tells it that someone still
waits. A service without long-polls answers at once (or refuses the query):
then this polls, never more often than ``Waiting.interval``.

A service restart does not end the wait: while the service is unreachable
the request is retried with capped exponential backoff (every few seconds at
most, so the request is never taken for abandoned), until the service has
been down longer than ``Waiting.outage_limit``.

Every way a start can fail here is a SpawnException whose ``reason`` is one
of :data:`REASONS` (a metric label of the hub).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Protocol

from jupyterhub.spawner import SpawnException

from hub_ext.client import HubgridClient, Refused, ServiceUnavailable

#: the ``reason`` of every SpawnException of a hubgrid spawner, and what it means
REASONS = {
    "config": "the hub is not set up for hubgrid spawners",
    "invalid": "the session options are invalid",
    "user-refused": "hubgrid does not admit this user (unknown, inactive, inactive domain)",
    "no-project": "the user is in no project",
    "refused": "the request was refused (quota, policy, capacity, image)",
    "cancelled": "the request was cancelled while pending (pending_timeout, an admin, "
                 "a removed image)",
    "queue-timeout": "the request waited longer than max_queue_wait",
    "unavailable": "the hubgrid service could not be reached",
    "unenforced": "the node cannot enforce the session's GPU share now (MPS daemon "
                  "not answering, HAMi-core library absent)",
}

UNAVAILABLE = "hubgrid service unavailable"


def fail(message: str, reason: str, status_code: int) -> SpawnException:
    """A SpawnException with a reason of :data:`REASONS`."""
    assert reason in REASONS, reason
    return SpawnException(message, reason=reason, status_code=status_code)


def unavailable(e: ServiceUnavailable, how: str = "") -> SpawnException:
    """The service could not be reached: 503, reason ``unavailable``."""
    return fail(f"{UNAVAILABLE}{how}: {e}", "unavailable", 503)


def user_refused(e: Refused) -> SpawnException:
    """hubgrid refuses the user (their identity): 403, reason ``user-refused``;
    the service's message, told whom to ask where it does not say so itself."""
    message = e.message if "ask an admin" in e.message else f"{e.message}; ask an admin"
    return fail(message, "user-refused", 403)


#: what a pending request waits for (the service's ``queue.waits_for``), in words
WAITS_FOR = {"capacity": "waiting for free capacity",
             "limits": "waiting until your limits allow it"}


def pending_text(allocation: dict) -> str:
    """Why a pending request waits, as the progress page shows it: its place
    in the queue (the service's ``queue``, when it tells), what it waits
    for and the reasons, e.g. ``pending: in the queue of resource group
    default, number 2 of 3 in line, waiting for free capacity: cpu short by 1``."""
    reasons = "; ".join(r["text"] for r in allocation.get("reasons") or [])
    queue = allocation.get("queue")
    if queue:
        where = (f"in the queue of resource group {queue['resource_group']}, number "
                 f"{queue['position']} of {queue['pending']} in line")
        what = WAITS_FOR.get(queue.get("waits_for") or "", "waiting")
        return f"pending: {where}, {what}" + (f": {reasons}" if reasons else "")
    return f"pending: {reasons}" if reasons else "pending"


#: the progress page's last message for a start cancelled while it waited
CANCELLED_QUEUED = "Your queued start was cancelled: nothing was started."
#: ... and for one cancelled once admitted, while its server was starting
CANCELLED_STARTING = "Your start was cancelled: its server was stopped."


def ready_unless_cancelled(spawner, ready_event: dict) -> dict:
    """The hubgrid spawners' ``progress_ready_hook``: a start that was
    cancelled (the spawn-pending page's Cancel, the hub's API) ends the
    progress page with a failed event saying so. Without it JupyterHub
    sends "Server ready": a cancelled start still has its server record
    for a moment (until the hub's stop clears it), which counts as ready."""
    message = getattr(spawner, "cancelled_message", "")
    if message:
        return {"progress": 100, "failed": True, "message": message}
    return ready_event


async def fresh_pending_text(client: HubgridClient, allocation_id: str) -> str:
    """``pending_text`` of the allocation as the service has it now (its
    current place in the queue: a held long-poll may carry an older one);
    "" when it is no longer pending or cannot be read now."""
    try:
        allocation = await client.allocation(allocation_id)
    except (Refused, ServiceUnavailable):
        return ""
    return pending_text(allocation) if allocation["state"] == "pending" else ""


class Progress:
    """The message a waiting start shows, and a wake-up for its readers (the
    progress page reads it without polling: it sleeps until it changes)."""

    def __init__(self):
        self.message = ""
        self._changed: asyncio.Event | None = None

    def show(self, message: str) -> bool:
        """Show ``message`` from now on; False if it was shown already."""
        if message == self.message:
            return False
        self.message = message
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()  # wakes every reader of the old message
        return True

    async def messages(self):
        """Every new non-empty message, as it comes (endless)."""
        shown = ""
        while True:
            if self._changed is None:
                self._changed = asyncio.Event()
            changed = self._changed
            if self.message and self.message != shown:
                shown = self.message
                yield shown
            await changed.wait()


class Clock(Protocol):
    def time(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class LoopClock:
    """The running event loop's monotonic clock."""

    def time(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class Waiting:
    """How a pending spawn waits for the service's decision."""

    #: seconds of one long-poll (0: plain polling)
    wait: float
    #: at least this many seconds between two requests
    interval: float
    #: give up once the service has been unreachable this many seconds
    outage_limit: float
    #: the first retry after a failed request, doubled up to ``retry_cap``
    retry_first: float = 0.5
    retry_cap: float = 3.0


async def follow(client: HubgridClient, allocation: dict, waiting: Waiting,
                 report: Callable[[str], None], clock: Clock | None = None) -> dict:
    """Follow ``allocation`` while it is pending; its first other model.

    ``report`` gets every new progress message. Raises SpawnException
    (``cancelled``: the service no longer knows the request; ``unavailable``:
    the service stayed unreachable longer than ``waiting.outage_limit``).
    """
    clock = clock or LoopClock()
    long_poll = waiting.wait > 0
    down_since: float | None = None
    backoff = waiting.retry_first
    last_request = clock.time()
    while allocation["state"] == "pending":
        if down_since is None:
            report(pending_text(allocation))
        pause = waiting.interval - (clock.time() - last_request)
        if pause > 0:
            await clock.sleep(pause)
        last_request = clock.time()
        try:
            allocation = await client.allocation(allocation["id"],
                                                 wait=waiting.wait if long_poll else None)
        except Refused as e:
            if long_poll and e.status in (400, 422) and "wait" in e.message:
                long_poll = False  # a service without long-polls: poll
                continue
            raise fail(f"not started: {e.message}", "cancelled", 409) from None
        except ServiceUnavailable as e:
            now = clock.time()
            down_since = now if down_since is None else down_since
            if now - down_since >= waiting.outage_limit:
                raise unavailable(e, f" for {now - down_since:.0f} s (longer than "
                                     f"service_outage_limit)") from None
            report(f"{UNAVAILABLE}, retrying ({e})")
            await clock.sleep(backoff)
            backoff = min(backoff * 2, waiting.retry_cap)
            continue
        down_since, backoff = None, waiting.retry_first
    return allocation
