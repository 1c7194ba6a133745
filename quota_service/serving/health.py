"""Endpoints' health and calls as the gateway reports them: pure, in memory.

The gateway's balancer probes every replica (the model definition's
``health_check``) and reports each sync (``POST internal/serving/report``):
each replica's state as the probes judge it, and the calls it passed on per
endpoint and outcome since its last report. This keeps the latest state, a
short history of each replica's changes, and the calls counted since the
service started (for the metrics).

An endpoint's health is separate from its state (``provisioning``,
``running``...: whether its replicas run):

- ``healthy``: as many replicas pass their probe as the endpoint asks for;
- ``degraded``: some do, fewer than asked for (one failed, was taken out
  of rotation, or is being replaced): reachable, with less capacity;
- ``down``: replicas are asked for (or routed) and none passes: not
  reachable;
- ``unknown``: none is asked for or routed, or the gateway has not
  reported for ``stale_after`` seconds (its view is not trusted then).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, deque
from decimal import Decimal

HISTORY = 20
#: seconds after which a gateway's silence makes every endpoint's health unknown
STALE_AFTER = 30.0


class Reports:
    def __init__(self, history: int = HISTORY):
        self.history_size = history
        self.latest: dict[str, dict[str, dict]] = {}  # endpoint -> replica -> state
        self.history: dict[tuple[str, str], deque] = {}
        self.calls: Counter = Counter()               # (endpoint, "2xx") -> calls
        self.seconds: dict[tuple[str, str], Decimal] = {}
        self.reported_at: dt.datetime | None = None
        #: endpoint -> what autoscaling judges, per routed replica (``measures``)
        self.measured: dict[str, dict[str, Decimal]] = {}

    def record(self, report: dict, now: dt.datetime) -> None:
        latest: dict[str, dict[str, dict]] = {}
        for r in report.get("replicas") or ():
            state = {"name": r["name"], "up": bool(r["up"]), "status": str(r["status"]),
                     "check": str(r.get("check") or ""), "detail": str(r.get("detail") or ""),
                     "calls": int(r.get("calls") or 0)}
            latest.setdefault(r["endpoint"], {})[r["name"]] = state
            key = (r["endpoint"], r["name"])
            past = self.history.setdefault(key, deque(maxlen=self.history_size))
            # INI: a reload's new worker has not probed it yet; not a change
            if (not past or (past[-1]["up"], past[-1]["check"]) != (state["up"], state["check"])
                    ) and not (past and state["check"] == "INI"):
                past.append({"at": now, "up": state["up"], "status": state["status"],
                             "check": state["check"], "detail": state["detail"]})
        for key in [k for k in self.history if k[1] not in latest.get(k[0], {})]:
            del self.history[key]  # a replica no longer routed
        self.latest = latest
        self._measure(report, now)
        for c in report.get("calls") or ():
            key = (str(c["endpoint"]), str(c["code"]))
            self.calls[key] += int(c["calls"])
            self.seconds[key] = self.seconds.get(key, Decimal(0)) + Decimal(str(c["seconds"]))
        self.reported_at = now

    def _measure(self, report: dict, now: dt.datetime) -> None:
        """Requests per second since the last report and calls in flight now,
        each per replica up, for every endpoint with a routed replica."""
        seconds = (Decimal(str((now - self.reported_at).total_seconds()))
                   if self.reported_at is not None else None)
        calls: Counter = Counter()
        for c in report.get("calls") or ():
            calls[str(c["endpoint"])] += int(c["calls"])
        in_flight: Counter = Counter()
        for r in report.get("replicas") or ():
            in_flight[r["endpoint"]] += int(r.get("in_flight") or 0)
        measured = {}
        for endpoint, replicas in self.latest.items():
            up = max(1, sum(1 for r in replicas.values() if r["up"]))
            m = {"in_flight": (Decimal(in_flight[endpoint]) / up).quantize(Decimal("0.001"))}
            if seconds is not None and seconds > 0:
                m["requests_per_second"] = (Decimal(calls[endpoint]) / seconds / up).quantize(
                    Decimal("0.001"))
            measured[endpoint] = m
        self.measured = measured

    def measures(self) -> dict[str, dict[str, Decimal]]:
        """Endpoint -> {"requests_per_second", "in_flight"} per replica up, as
        of the last report (autoscaling's input: serving/scaling.py)."""
        return self.measured

    def of(self, endpoint_id: str, now: dt.datetime, stale_after: float,
           desired: int = 0) -> dict:
        """An endpoint's health (``desired``: the replicas it asks for), its
        replicas with their history, its calls."""
        fresh = (self.reported_at is not None
                 and (now - self.reported_at).total_seconds() <= stale_after)
        replicas = sorted((self.latest.get(endpoint_id) or {}).values(), key=lambda r: r["name"])
        up = sum(1 for r in replicas if r["up"])
        wanted = max(desired, len(replicas))
        if not fresh or not wanted:
            status = "unknown"
        elif up >= wanted:
            status = "healthy"
        elif up:
            status = "degraded"
        else:
            status = "down"
        calls = {code: n for (e, code), n in sorted(self.calls.items()) if e == endpoint_id}
        return {
            "status": status,
            "reachable": None if status == "unknown" else up > 0,
            "replicas_wanted": wanted if fresh else None,
            "replicas_up": up if fresh else None,
            "replicas": [{**r, "history": [
                {**h, "at": h["at"].isoformat()} for h in self.history.get(
                    (endpoint_id, r["name"]), ())]} for r in replicas] if fresh else [],
            "reported_at": self.reported_at.isoformat() if self.reported_at else None,
            "calls": calls,
            "measured": {k: str(v) for k, v in self.measured.get(endpoint_id, {}).items()}
            if fresh else {},
        }
