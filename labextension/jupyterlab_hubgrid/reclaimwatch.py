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
- **Save**: the service's stop of a session that is due waits (bounded by
  its ``reclaim_save_wait``) for the Labs that listen: each report says
  how many do (``listening``: calls waiting on ``hubgrid/reclaim``, and a
  Lab whose call ended less than ``LINGER`` seconds ago, which is retrying
  after a failed call) and how the save of the announced notice went
  (``save``). A Lab that takes a notice starts the save (``saving``, sent
  at once); it posts its result to ``POST hubgrid/reclaim`` (``saved`` or
  ``failed``, sent at once), after which the service stops the session.

All three answer only the server's owner (``HubgridLab.owner``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from collections.abc import Awaitable, Callable

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

#: seconds a Lab whose call ended still counts as listening: the front end
#: calls again 30 s after a failed call (its back-off), then hears the notice
LINGER = 90.0
#: what a Lab may post about its save, and the counts it carries
RESULTS = ("saved", "failed")
COUNTS = ("documents", "saved", "copies", "unsaved")


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
        #: sends a report now, after the one in flight (the save's news); set by the reporter
        self.announce: Callable[[], Awaitable[object]] | None = None
        #: the save of the latest notice a Lab took (the report's ``save``), or None
        self.save: dict | None = None
        #: when a Lab's call last started or ended (a Lab retrying still listens)
        self.seen_at: dt.datetime | None = None
        self._waiters: list[tuple[str, asyncio.Future]] = []
        self._timer: asyncio.TimerHandle | None = None

    def note_input(self) -> None:
        self.input_at = self.clock()

    def report_now(self) -> None:
        """Send the service a report now (the input a warning asked for)."""
        self._tell()

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

    def listening(self) -> int:
        """Labs listening for this session's reclaim: the calls waiting, or
        one whose call ended less than ``LINGER`` seconds ago (it calls again)."""
        if self._waiters:
            return len(self._waiters)
        recent = self.seen_at is not None and \
            (self.clock() - self.seen_at).total_seconds() <= LINGER
        return 1 if recent else 0

    def taken(self, notice: dict) -> None:
        """A Lab took ``notice`` and saves its documents: ``saving``, told at once."""
        warned = notice.get("warned_at", "")
        if self.save is not None and self.save.get("warned_at") == warned:
            return  # another tab of the same save
        self.save = {"warned_at": warned, "state": "saving", "at": self.clock().isoformat()}
        self._tell()

    def finished(self, key: str, state: str, counts: dict, error: str = "") -> bool:
        """A Lab's save of the notice ``key`` ended (``saved`` or ``failed``);
        told at once. Several tabs add up: one that failed makes it failed.
        False when ``key`` is not the notice being saved."""
        if self.save is None or self.save.get("warned_at") != key.split("|", 1)[0]:
            return False
        before = self.save if self.save.get("state") in RESULTS else {}
        merged = {k: int(before.get(k) or 0) + int(counts.get(k) or 0) for k in COUNTS}
        failed = state == "failed" or before.get("state") == "failed"
        errors = "; ".join(e for e in (before.get("error", ""), error) if e)[:300]
        self.save = dict(merged, warned_at=self.save["warned_at"],
                         state="failed" if failed else "saved",
                         at=self.clock().isoformat(), error=errors)
        self._tell()
        return True

    def _tell(self) -> None:
        if self.announce is None:
            return
        task = asyncio.ensure_future(self.announce())
        task.add_done_callback(lambda f: f.cancelled() or f.exception())

    def wait(self, seen: str) -> asyncio.Future:
        """A future of the next due notice other than ``seen``."""
        self.seen_at = self.clock()
        fut = asyncio.get_event_loop().create_future()
        notice = self.due()
        if notice is not None and notice_key(notice) != seen:
            fut.set_result(notice)
        else:
            self._waiters.append((seen, fut))
        return fut

    def forget(self, fut: asyncio.Future) -> None:
        self.seen_at = self.clock()
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
    """The Lab had input (typing, clicks): activity for idle reclamation.
    ``?now=1`` (the warning's "Keep it running"): reported to the service
    at once, not at the next report, so the warning clears before its
    deadline."""

    @web.authenticated
    def post(self):
        self.check_owner()
        self.watch.note_input()
        if self.get_query_argument("now", "") == "1":
            self.watch.report_now()
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
        self.watch.seen_at = self.watch.clock()
        self.watch.taken(notice)  # the service waits for this save from now on
        self.finish({"reclaim": notice, "key": notice_key(notice),
                     "save_ahead": self.watch.ahead,
                     # the Lab asks the service for the final record with it
                     "allocation": os.environ.get("HUBGRID_ALLOCATION", "").strip()})

    @web.authenticated
    def post(self):
        """The Lab's save ended: ``{"key", "state": "saved" | "failed",
        "documents", "saved", "copies", "unsaved", "error"}``."""
        self.check_owner()
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "hubgrid: a JSON body is expected") from None
        state = body.get("state") if isinstance(body, dict) else None
        if state not in RESULTS or not isinstance(body.get("key"), str):
            raise web.HTTPError(400, "hubgrid: key and state (saved or failed) are expected")
        counts = {}
        for k in COUNTS:
            v = body.get(k, 0)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 100_000:
                raise web.HTTPError(400, f"hubgrid: {k} is a count")
            counts[k] = v
        error = body.get("error") or ""
        if not self.watch.finished(body["key"], state, counts, str(error)[:300]):
            raise web.HTTPError(409, "hubgrid: that notice is not the one being saved")
        self.set_status(204)
        self.finish()

    def on_connection_close(self):
        if self._fut is not None:
            self.watch.forget(self._fut)
        super().on_connection_close()


def setup_reclaim_handlers(web_app, config) -> ReclaimWatch:
    """Add ``hubgrid/input`` and ``hubgrid/reclaim`` (GET: wait for the
    reclaim; POST: the save's result); returns the watch."""
    watch = ReclaimWatch(config.reclaim_save_ahead)
    base = web_app.settings["base_url"]
    args = {"config": config, "watch": watch}
    web_app.add_handlers(".*$", [
        (url_path_join(base, "hubgrid", "input"), InputHandler, args),
        (url_path_join(base, "hubgrid", "reclaim"), ReclaimHandler, args),
    ])
    web_app.settings["hubgrid_reclaim_watch"] = watch
    return watch
