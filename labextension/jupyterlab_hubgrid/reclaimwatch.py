"""The session's side of an announced reclaim, and the browser's input.

- **Input**: the Lab front end posts ``<base_url>hubgrid/input`` (at most
  every half minute while someone types, clicks or scrolls in it); the time
  joins the activity report's ``last_activity`` (``activity.py``), so typing
  in a notebook that runs nothing, or reading and scrolling, keeps the
  session. The hub's own ``last_activity`` of a server lags by up to its
  ``last_activity_interval`` (5 min), too late for short idle timeouts.
- **Reclaim**: the service answers each activity report with the session's
  announced reclaim (``reclaim``: rule, deadline, reason, numbers). From
  ``reclaim_save_ahead`` seconds before the deadline on (the reporter asks
  the service again at that moment, so a notice withdrawn meanwhile is not
  acted on), ``GET <base_url>hubgrid/reclaim?seen=<key>`` answers the
  notice: the front end saves every open document, and keeps the notice to
  say why the server went away. The call waits (no timeout) until a notice
  other than ``seen`` is due: a waiting call is no traffic, and an answer
  only when it matters keeps an idle Lab idle (every answered request
  through the hub's proxy counts as activity).

Both answer only the server's owner (``HubgridLab.owner``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web


def _parse(value) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def notice_key(notice: dict | None) -> str:
    """A notice's identity for the front end: its warning and its deadline."""
    if not notice:
        return ""
    return f"{notice.get('warned_at', '')}|{notice.get('deadline', '')}"


def save_at(notice: dict | None, ahead: float) -> dt.datetime | None:
    """When the Lab saves before the notice's deadline (None: no notice)."""
    deadline = _parse((notice or {}).get("deadline"))
    return deadline - dt.timedelta(seconds=ahead) if deadline else None


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class ReclaimWatch:
    """This session's announced reclaim (from the activity reports' answers),
    the browser's last input, and the Lab calls waiting for a due notice."""

    def __init__(self, ahead: float, clock: Callable[[], dt.datetime] = _now):
        self.ahead = ahead
        self.clock = clock
        self.notice: dict | None = None
        #: the last input in the Lab (typing, clicks), as the browser posted it
        self.input_at: dt.datetime | None = None
        #: asks the service again (the reporter's report); set by the reporter
        self.confirm: Callable[[], Awaitable[object]] | None = None
        self._waiters: list[tuple[str, asyncio.Future]] = []
        self._timer: asyncio.TimerHandle | None = None

    def note_input(self) -> None:
        self.input_at = self.clock()

    def due(self) -> dict | None:
        """The notice whose save time has come, or None."""
        at = save_at(self.notice, self.ahead)
        return self.notice if at is not None and at <= self.clock() else None

    def update(self, notice: dict | None) -> None:
        """The service's current notice (None: nothing announced)."""
        self.notice = notice or None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        at = save_at(self.notice, self.ahead)
        if at is None:
            return
        if at <= self.clock():
            self._signal()
        else:
            delay = (at - self.clock()).total_seconds()
            self._timer = asyncio.get_event_loop().call_later(delay, self._at_save_time)

    def _at_save_time(self) -> None:
        self._timer = None
        if self.confirm is None:
            self._signal()
            return
        # the service's word first: a notice withdrawn meanwhile saves nothing;
        # the report's answer calls update(), which signals if still due
        task = asyncio.ensure_future(self.confirm())
        task.add_done_callback(lambda f: f.cancelled() or f.exception())

    def _signal(self) -> None:
        notice = self.due()
        if notice is None:
            return
        key = notice_key(notice)
        for seen, fut in list(self._waiters):
            if seen != key and not fut.done():
                fut.set_result(notice)
        self._waiters = [(s, f) for s, f in self._waiters if not f.done()]

    def wait(self, seen: str) -> asyncio.Future:
        """A future of the next due notice other than ``seen``."""
        fut = asyncio.get_event_loop().create_future()
        notice = self.due()
        if notice is not None and notice_key(notice) != seen:
            fut.set_result(notice)
        else:
            self._waiters.append((seen, fut))
        return fut

    def forget(self, fut: asyncio.Future) -> None:
        self._waiters = [(s, f) for s, f in self._waiters if f is not fut]
        if not fut.done():
            fut.cancel()

    def waiting(self) -> int:
        return len(self._waiters)


class _OwnerHandler(APIHandler):
    def initialize(self, config, watch: ReclaimWatch):
        self.hubgrid = config
        self.watch = watch

    def check_owner(self) -> None:
        owner = self.hubgrid.owner
        if owner and self.current_user.username != owner:
            raise web.HTTPError(403, f"hubgrid: only {owner}, who owns this server, may use this")


class InputHandler(_OwnerHandler):
    """The Lab had input (typing, clicks): activity for idle reclamation."""

    @web.authenticated
    def post(self):
        self.check_owner()
        self.watch.note_input()
        self.set_status(204)
        self.finish()


class ReclaimHandler(_OwnerHandler):
    """Wait for this session's reclaim to be due (the Lab saves then)."""

    _fut: asyncio.Future | None = None

    @web.authenticated
    async def get(self):
        self.check_owner()
        seen = self.get_query_argument("seen", "")
        self._fut = self.watch.wait(seen)
        try:
            notice = await self._fut
        except asyncio.CancelledError:
            return  # the browser went away
        self.finish({"reclaim": notice, "key": notice_key(notice),
                     "save_ahead": self.watch.ahead})

    def on_connection_close(self):
        if self._fut is not None:
            self.watch.forget(self._fut)
        super().on_connection_close()


def setup_reclaim_handlers(web_app, config) -> ReclaimWatch:
    """Add ``hubgrid/input`` and ``hubgrid/reclaim``; returns the watch."""
    watch = ReclaimWatch(config.reclaim_save_ahead)
    base = web_app.settings["base_url"]
    args = {"config": config, "watch": watch}
    web_app.add_handlers(".*$", [
        (url_path_join(base, "hubgrid", "input"), InputHandler, args),
        (url_path_join(base, "hubgrid", "reclaim"), ReclaimHandler, args),
    ])
    web_app.settings["hubgrid_reclaim_watch"] = watch
    return watch
