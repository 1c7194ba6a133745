"""The hub's client of the hubgrid service (internal endpoints)."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.simple_httpclient import SimpleAsyncHTTPClient

#: refusals of a lookup by id (400/422: a query the service does not take)
LOOKUP_REFUSALS = (400, 403, 404, 409, 410, 422)
#: concurrent long-polls of one hub: one per pending spawn (tornado's shared
#: client runs 10 requests at once and queues the rest, logins included;
#: the simple client opens connections as needed, curl's would make them all)
MAX_WAITING = 10_000
_waiting: list = [None, None]  # [event loop, its client of long-polls]


def _waiting_client() -> AsyncHTTPClient:
    """The HTTP client of long-polls, one for the running event loop."""
    loop = asyncio.get_running_loop()
    if _waiting[0] is not loop:
        client = SimpleAsyncHTTPClient(force_instance=True, max_clients=MAX_WAITING)
        _waiting[:] = [loop, client]
    return _waiting[1]


class ServiceUnavailable(Exception):
    """The hubgrid service could not be reached or failed."""


class Refused(Exception):
    """The service refused a user (unknown, inactive, inactive domain)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.message = message
        self.status = status


class HubgridClient:
    def __init__(self, api_url: str, internal_token: str, timeout: float = 20):
        self.api_url = api_url.rstrip("/") + "/"
        self.token = internal_token
        self.timeout = timeout

    async def _call(self, method: str, path: str, body=None, refusals=(403, 404, 409, 410, 422),
                    raw: bytes | None = None, timeout: float | None = None,
                    http: AsyncHTTPClient | None = None):
        req = HTTPRequest(
            self.api_url + path,
            method=method,
            headers={
                "Authorization": f"hubgrid-internal {self.token}",
                "Content-Type": "application/octet-stream" if raw is not None
                else "application/json",
            },
            body=raw if raw is not None else None if body is None else json.dumps(body),
            request_timeout=self.timeout if timeout is None else timeout,
            allow_nonstandard_methods=True,
        )
        try:
            resp = await (http or AsyncHTTPClient()).fetch(req)
        except HTTPClientError as e:
            # 401 means our own token is wrong: a fault of the set-up, not
            # a verdict on the user (it must not log everybody out)
            if e.code in refusals and e.response is not None:
                try:
                    message = json.loads(e.response.body)["message"]
                except (ValueError, KeyError):
                    message = str(e)
                raise Refused(message, e.code) from None
            raise ServiceUnavailable(f"hubgrid service: {e}") from None
        except OSError as e:
            raise ServiceUnavailable(f"hubgrid service unreachable: {e}") from None
        return json.loads(resp.body) if resp.body else None

    async def login(self, username: str, success: bool, source: str | None, reason: str = ""):
        """Record a login; on success the user's identity (Refused if not allowed)."""
        return await self._call(
            "POST",
            "internal/login",
            {"username": username[:255], "success": success, "source": source, "reason": reason},
        )

    async def identity(self, username: str) -> dict:
        """The user's identity; Refused (403) only when hubgrid refuses them."""
        return await self._call("GET", "internal/identity/" + quote(username, safe=""),
                                refusals=(403,))

    async def spawn_choices(self, username: str) -> dict:
        """The projects, resource groups, images and remaining quota the
        spawn form offers ``username``."""
        return await self._call("GET", "internal/spawn-choices/" + quote(username, safe=""),
                                refusals=(403,))

    async def allocate(self, body: dict) -> dict:
        """Ask for resources for ``body["user"]``: allocated, pending, or Refused."""
        return await self._call("POST", "internal/allocations", body)

    async def allocation(self, alloc_id: str, wait: float | None = None) -> dict:
        """The allocation's model. ``wait`` (seconds, 0 < wait <= 60): a
        long-poll; the service answers a pending allocation when its state or
        its pending reasons change, or after ``wait`` seconds. A service
        without long-polls answers at once, or refuses the query (400/422:
        Refused, like an unknown allocation)."""
        path = "internal/allocations/" + quote(alloc_id, safe="")
        if not wait:
            return await self._call("GET", path, refusals=LOOKUP_REFUSALS)
        # the answer may take ``wait`` seconds, then the usual time; long-polls
        # have their own connections (they must not queue the hub's other calls)
        return await self._call("GET", f"{path}?wait={wait:g}", refusals=LOOKUP_REFUSALS,
                                timeout=wait + self.timeout, http=_waiting_client())

    async def release(self, alloc_id: str, reason: str, exit_code: int | None = None) -> dict:
        """Release an allocation (exactly once: a second call changes nothing).
        ``exit_code``: how the session's main process ended, when known."""
        query = "?reason=" + quote(reason[:200], safe="")
        if exit_code is not None:
            query += f"&exit_code={int(exit_code)}"
        return await self._call("DELETE", "internal/allocations/" + quote(alloc_id, safe="") + query)

    async def append_log(self, alloc_id: str, data: bytes) -> dict:
        """Append a session's output (bytes as they come) to its log; the
        service keeps the newest ``session_log_max_bytes``. Refused (410) once
        the log was purged."""
        return await self._call("POST", f"internal/allocations/{quote(alloc_id, safe='')}/logs",
                                raw=bytes(data))

    async def mounts(self, alloc_id: str) -> dict:
        """The session's mounts with host paths, its live ones as permissions
        stand now (``{"state", "live_mounts", "mounts"}``)."""
        return await self._call("GET", f"internal/allocations/{quote(alloc_id, safe='')}/mounts",
                                refusals=LOOKUP_REFUSALS)

    async def live_mounts_on(self, alloc_id: str) -> dict:
        """Say that the session can have folders mounted while it runs."""
        return await self._call("PUT", f"internal/allocations/{quote(alloc_id, safe='')}/mounts",
                                {"live_mounts": True})

    async def sync(self) -> dict:
        return await self._call("POST", "internal/sync", {})
