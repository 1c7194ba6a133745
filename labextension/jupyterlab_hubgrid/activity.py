"""The session's activity reporter: inside a hubgrid session, every
``HubgridLab.activity_interval`` seconds, tell the hubgrid service what this
Jupyter server's kernels and terminals are doing (``POST
allocations/{id}/activity``), so that its idle reclamation sees what the hub
cannot: a kernel busy with a long cell and no browser attached, a terminal
in use.

The report (the body the service's ``ActivityReport`` expects)::

    {"kernels": 2, "busy_kernels": 1, "terminals": 0, "connections": 0,
     "last_activity": "2026-11-25T10:00:00+00:00"}

``last_activity`` is the latest kernel or terminal activity (a kernel's
messages, a terminal's input or output) or input in the Lab (typing in a
notebook that runs nothing, clicks: the front end posts ``hubgrid/input``,
``reclaimwatch.py``), not the server's API traffic (the hub's own
``last_activity`` counts that, minutes late). The service counts a report
with a busy kernel as activity at the moment it arrives, and answers with
the session's announced reclaim, which the reporter hands to the
``ReclaimWatch`` (the Lab saves its documents before the deadline).

Each report also says how many Labs listen for the reclaim and how their
save of the announced notice went (``listening``, ``save``: the service's
stop waits for them); news of the save is reported at once, not at the
next tick.

It runs only in a hubgrid session: ``$HUBGRID_ALLOCATION`` set (the spawner
sets it), an ``api_url`` and a credential (``HubgridLab``), and an interval
above 0. With ``activity_interval`` 0 it reports every
``reclaim_check_interval`` seconds without the activity (only what the
reclaim's save needs). A failed report is logged (once until it works
again) and retried at the next tick; reports never overlap.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from urllib.parse import quote

from tornado.httpclient import HTTPRequest
from tornado.ioloop import PeriodicCallback


def _time(value) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        t = value
    elif isinstance(value, str) and value:
        try:
            t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def summarize(kernels: list[dict], terminals: list[dict],
              input_at: dt.datetime | None = None) -> dict:
    """The report from Jupyter's kernel and terminal models (pure):
    ``execution_state``, ``connections`` and ``last_activity`` of each
    kernel, ``last_activity`` of each terminal; ``input_at``: the Lab's last
    input (typing, clicks)."""
    times = [t for m in (*kernels, *terminals) if (t := _time(m.get("last_activity")))]
    if (t := _time(input_at)) is not None:
        times.append(t)
    last = max(times) if times else None
    return {
        "kernels": len(kernels),
        "busy_kernels": sum(1 for k in kernels if k.get("execution_state") == "busy"),
        "terminals": len(terminals),
        "connections": sum(int(k.get("connections") or 0) for k in kernels),
        "last_activity": last.astimezone(dt.timezone.utc).isoformat() if last else None,
    }


def read(server_app, activity: bool = True) -> dict:
    """This server's report, from its kernel manager and terminal manager (if
    any), the Lab's last input, and the reclaim watch (the Labs listening,
    the save); ``activity`` False: only the watch's part."""
    watch = server_app.web_app.settings.get("hubgrid_reclaim_watch")
    body = {}
    if activity:
        km = getattr(server_app, "kernel_manager", None)
        kernels = km.list_kernels() if km is not None else []
        tm = server_app.web_app.settings.get("terminal_manager")
        terminals = tm.list() if tm is not None else []
        body = summarize(kernels, terminals, watch.input_at if watch is not None else None)
    if watch is not None:
        body["listening"] = watch.listening()
        if watch.save is not None:
            body["save"] = dict(watch.save)
    return body


class ActivityReporter:
    """Posts this server's activity report every ``interval`` seconds."""

    def __init__(self, server_app, config, allocation: str, interval: float,
                 activity: bool = True):
        self.server_app = server_app
        #: False: activity reporting is off, only the reclaim's part is sent
        self.activity = activity
        self.config = config
        self.allocation = allocation
        self.interval = interval
        self.log = server_app.log
        self.url = f"{config.api_url}allocations/{quote(allocation, safe='')}/activity"
        #: the last report sent and the service's status (0: unreachable)
        self.last: tuple[dict, int] | None = None
        self._busy = False
        self._again = False
        self._failing = False
        self._timer = PeriodicCallback(self.tick, interval * 1000)
        self.watch = server_app.web_app.settings.get("hubgrid_reclaim_watch")
        if self.watch is not None:
            self.watch.confirm = self.tick
            self.watch.announce = self.soon

    def start(self) -> None:
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    async def tick(self) -> None:
        if self._busy:  # the previous report has not come back yet
            return
        self._busy = True
        try:
            await self.report()
            while self._again:  # news came while it was out: one more
                self._again = False
                await self.report()
        finally:
            self._busy = False

    async def soon(self) -> None:
        """Report now, or right after the report in flight (the save's news
        must not wait for the next tick)."""
        if self._busy:
            self._again = True
            return
        await self.tick()

    async def report(self) -> int:
        """Send one report; the service's status (0: unreachable)."""
        body = read(self.server_app, self.activity)
        request = HTTPRequest(
            self.url, method="POST", body=json.dumps(body),
            headers={"Authorization": self.config.authorization(),
                     "Content-Type": "application/json"},
            request_timeout=min(self.config.request_timeout, max(self.interval, 10.0)),
            connect_timeout=min(10.0, self.config.request_timeout))
        try:
            response = await self.config.client().fetch(request, raise_error=False)
            code = response.code if response.code != 599 else 0
            why = response.body[:300].decode(errors="replace") if code != 200 else ""
            if code == 0:
                why = str(response.error)
        except Exception as e:  # a report must never break the server
            code, why = 0, str(e)
        self.last = (body, code)
        if code == 200 and self.watch is not None:
            try:
                self.watch.update(json.loads(response.body).get("reclaim"))
            except (ValueError, AttributeError) as e:
                self.log.warning("jupyterlab_hubgrid: an activity answer without its "
                                 "reclaim: %s", e)
        if code == 200:
            if self._failing:
                self.log.info("jupyterlab_hubgrid: activity reports reach hubgrid again")
            self._failing = False
        elif not self._failing:
            self._failing = True
            self.log.warning("jupyterlab_hubgrid: the activity report of allocation %s failed "
                             "(%s): %s; retrying every %s s", self.allocation, code or
                             "unreachable", why, self.interval)
        return code


def start_reporter(server_app, config) -> ActivityReporter | None:
    """Start the reporter when this server is a hubgrid session (else None,
    with a log line saying why not, when only part of a session is there)."""
    allocation = os.environ.get("HUBGRID_ALLOCATION", "").strip()
    activity = config.activity_interval > 0
    # a config without the reclaim check (a bare stand-in) has it off
    interval = (config.activity_interval if activity
                else getattr(config, "reclaim_check_interval", 0.0))
    if not allocation or interval <= 0:
        return None
    if not config.api_url or not config.authorization():
        server_app.log.warning(
            "jupyterlab_hubgrid: allocation %s, but no hubgrid API URL or credential: "
            "no activity reports (the session may be reclaimed while a kernel is busy)",
            allocation)
        return None
    reporter = ActivityReporter(server_app, config, allocation, interval, activity)
    reporter.start()
    server_app.web_app.settings["hubgrid_activity"] = reporter
    server_app.log.info("jupyterlab_hubgrid: reporting %s of allocation %s every %s s",
                        "the kernels' activity" if activity else
                        "(activity reports off) only the reclaim's save", allocation, interval)
    return reporter
