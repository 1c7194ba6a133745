"""The periodic reclaim pass (IO): read the running sessions and their
policies, the hub's last activity, the utilization readings; judge each
session with the pure rules; write the decisions; stop what is reclaimed
(a hub server through the hub's API, any other allocation by releasing it).

Readings are kept in memory per session (``window.Window``): after a
restart the windows fill again, which only delays a utilization reclaim.

Reading a session's use and judging it are apart: with ``sample_window``
every running session (not an endpoint's replica) is read, for the live use
its detail shows, but only those under a policy with a rule (or with a
notice) are judged; a reading reclaims nothing unless the session's own
policy has a utilization rule."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from sqlalchemy.orm import Session, sessionmaker
from tornado.httpclient import HTTPClientError

from ...core import db
from ...tenancy import audit
from . import activity, rules, savehold, sources, store
from .window import Window, average, judge


@dataclass
class PassReport:
    """What one pass did (ids per action)."""

    judged: int = 0
    warned: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    reclaimed: list[str] = field(default_factory=list)
    shadow: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    #: due, but waiting for the Lab's save (``savehold``)
    held: list[str] = field(default_factory=list)


async def hub_activity(hub) -> dict[str, dt.datetime | None] | None:
    """Allocation id -> the hub's last activity of the server holding it;
    None when the hub could not be read (the idle rule then waits)."""
    if hub is None:
        return {}
    out: dict[str, dt.datetime | None] = {}
    for u in await hub._paged("users", "state=active"):
        for server in (u.get("servers") or {}).values():
            alloc = (server.get("state") or {}).get("hubgrid_allocation")
            if alloc:
                out[alloc] = activity.parse_time(server.get("last_activity"))
    return out


async def stop_hub_server(hub, user: str, server_name: str) -> None:
    """Ask the hub to stop a server (its spawner releases the allocation)."""
    path = (f"users/{quote(user, safe='')}/servers/{quote(server_name, safe='')}"
            if server_name else f"users/{quote(user, safe='')}/server")
    try:
        await hub.call("DELETE", path)
    except HTTPClientError as e:
        if e.code not in (202, 204, 400, 404):  # 400/404: stopped or gone already
            raise


class Reclaimer:
    """The reclaim pass of one service, with the readings it keeps."""

    def __init__(self, factory: sessionmaker[Session], log: logging.Logger):
        self.factory = factory
        self.log = log
        self.windows: dict[str, Window] = {}

    def _judge(self, c: store.Candidate, hub_last, hub_known: bool, now: dt.datetime,
               slack: float, shadow: bool, save_wait: float = 0) -> rules.Decision:
        st = c.settings
        reclaimed_at = activity.parse_time((c.notice or {}).get("reclaimed_at"))
        if reclaimed_at is not None and (now - reclaimed_at).total_seconds() < 5 * slack:
            return rules.Decision("none")  # its server is stopping
        current = rules.notice_from_json(c.notice)
        last, source = activity.latest(hub_last, c.activity, now)
        util = None
        if st.utilization_window and st.thresholds:
            w = self.windows.get(c.id)
            avg = average(w.readings if w else [], now, st.utilization_window, c.cores,
                          c.gpus > 0)
            util = judge(avg, st.thresholds, st.operator, c.gpus > 0)
        found = rules.findings(st, c.started, last, source, util, now, current, c.kept_until)
        if c.origin == "hub" and not hub_known:
            # the hub did not answer: its activity is unknown, never idle
            found = [f for f in found if f.rule != "idle"]
        d = rules.decide(st, found, current, now, slack, shadow)
        if d.action != "reclaim" or reclaimed_at is not None:
            return d  # a stop asked for already is not held again
        held = savehold.hold(d.notice, c.activity, now, save_wait)
        if held is None:
            return d
        # not yet: the notice stays announced (a warning of 0 announces it
        # now), so the Lab's next report hears of it and saves
        self.log.info("reclaim: %s is due (%s rule) but waits: %s", c.id, d.notice.rule,
                      held.why)
        if current is None:
            return rules.Decision("warn", d.notice, held=True)
        same = current.deadline == d.notice.deadline and current.numbers == d.notice.numbers
        return rules.Decision("none" if same else "update", d.notice, held=True)

    @staticmethod
    def keep_of(c: store.Candidate, sample_window: int) -> int:
        """How long ``c``'s readings are kept (0: it is not read): its
        utilization rule's window, or the display's ``sample_window``,
        whichever is longer."""
        st = c.settings
        rule = st.utilization_window if c.judged and st.utilization_window and st.thresholds \
            else 0
        return max(rule or 0, sample_window)

    def _targets(self, cands, docker_hosts: list[str], sample_window: int):
        out = []
        for c in cands:
            if self.keep_of(c, sample_window):
                urls = [c.backend_url] if c.backend_url else list(docker_hosts)
                out.append((c.id, urls, c.backend_url, list(c.gpu_indices)))
        return out

    async def run(self, now: dt.datetime, *, hub, slack: float, shadow: bool,
                  default_warning: int, docker_hosts: list[str], make_client,
                  docker_timeout: float, gpu: sources.GPUSource,
                  released: Callable[[], None] = lambda: None,
                  save_wait: float = 0, sample_window: int = 0) -> PassReport:
        """One pass as of ``now``; ``save_wait``: how long after its deadline
        a stop may wait for a Lab's save (``savehold``; 0: never);
        ``sample_window``: seconds of readings kept of every running session
        for its live use (0: only sessions under a utilization rule are read)."""
        report = PassReport()
        cands = await asyncio.to_thread(self._candidates, default_warning, now,
                                        sample_window > 0)
        live = {c.id for c in cands}
        for gone in set(self.windows) - live:
            del self.windows[gone]
        hub_last: dict | None = {}
        if any(c.origin == "hub" and c.judged for c in cands):
            try:
                hub_last = await hub_activity(hub)
            except Exception as e:
                self.log.warning("reclaim: the hub's activity could not be read: %s", e)
                hub_last = None
        targets = self._targets(cands, docker_hosts, sample_window)
        if targets:
            readings = await asyncio.to_thread(sources.read, targets, make_client,
                                               docker_timeout, gpu, now, self.log)
            keeps = {c.id: self.keep_of(c, sample_window) for c in cands}
            ruled = {c.id for c in cands if self.keep_of(c, 0)}
            for alloc, reading in readings.items():
                if alloc not in ruled and reading.empty:
                    continue  # nothing to show (no container: a local process)
                self.windows.setdefault(alloc, Window()).add(reading, keeps[alloc])
        cands = [c for c in cands if c.judged]  # the rest are only read
        decisions = []
        for c in cands:
            d = self._judge(c, (hub_last or {}).get(c.id), hub_last is not None, now, slack,
                            shadow, save_wait)
            decisions.append((c, d))
        report.judged = len(cands)
        todo = await asyncio.to_thread(self._apply, decisions, now, report)
        for item in todo:
            await self._stop(item, hub, now, report)
        if any(item["origin"] != "hub" for item in todo):
            released()
        return report

    def _candidates(self, default_warning: int, now: dt.datetime, sample_all: bool = False):
        with db.transaction(self.factory) as s:
            return store.candidates(s, default_warning, sample_all)

    def _apply(self, decisions, now: dt.datetime, report: PassReport) -> list[dict]:
        todo = []
        for c, d in decisions:
            if d.held:
                report.held.append(c.id)
            if d.action == "none":
                continue
            with db.ledger_transaction(self.factory) as s:
                item = store.apply(s, c, d, now)
            {"warn": report.warned, "clear": report.cleared, "shadow": report.shadow,
             "reclaim": report.reclaimed}.get(d.action, []).append(c.id)
            if d.action == "warn":
                self.log.info("reclaim: warned %s/%s (%s): %s rule, deadline %s: %s", c.user,
                              c.server_name or c.id, c.id, d.notice.rule,
                              rules.utc_text(d.notice.deadline), d.notice.reason)
            elif d.action == "shadow":
                self.log.info("reclaim (shadow mode, nothing stopped): %s would be reclaimed "
                              "by the %s rule: %s", c.id, d.notice.rule, d.notice.reason)
            if item is not None:
                todo.append(item)
        return todo

    async def _stop(self, item: dict, hub, now: dt.datetime, report: PassReport) -> None:
        self.log.warning("reclaim: %s %s/%s (%s): %s", "stopping" if item["origin"] == "hub"
                         else "released", item["user"], item["server_name"], item["id"],
                         item["reason"])
        began = time.monotonic()
        try:
            if item["origin"] == "hub":
                if hub is None:
                    raise RuntimeError("no hub to stop the server with")
                await stop_hub_server(hub, item["user"], item["server_name"])
            outcome, status = "success", 200
        except Exception as e:
            self.log.error("reclaim: stopping %s failed: %s", item["id"], e)
            report.failed.append(item["id"])
            outcome, status = "error", 502
        final = None
        if item["origin"] == "hub" and outcome == "success":
            # the hub answered once the server stopped (or was stopping):
            # the final record is at the allocation's end, or at this answer
            answered = now + dt.timedelta(seconds=time.monotonic() - began)
            final = await asyncio.to_thread(self._record, item, answered)
        elif item["origin"] != "hub":
            final = item["details"]  # released and recorded with the decision
        # the access log says what the final record says (the numbers as of
        # the stop, at the stop's time), not what the warning said
        numbers = {k: v for k, v in (final or {}).items() if k not in ("reason", "gpus")} \
            if final else item["numbers"]
        reason = f"reclaimed ({item['rule']}): {final['reason']}" if final else item["reason"]
        at = dt.datetime.fromisoformat(final["stopped_at"]) \
            if final and final.get("stopped_at") else now
        rec = audit.Record(action="session.reclaim", outcome=outcome, status=status,
                           actor="hubgrid-reclaim", domain=item["domain"], credential="internal",
                           target=item["id"],
                           detail=f"user: {item['user']}; server: "
                                  f"{item['server_name'] or '(default)'}; rule: {item['rule']}; "
                                  f"numbers: {numbers}; {reason}")
        await asyncio.to_thread(audit.record, self.factory, rec, at)

    def _record(self, item: dict, now: dt.datetime) -> dict | None:
        with db.transaction(self.factory) as s:
            return store.record_reclaimed(s, item["id"], item["rule"], now, item["details"])
