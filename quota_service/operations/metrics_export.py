"""The Prometheus side of the metrics: families over ``metrics.Readings``.

``FAMILIES`` names every metric the endpoint serves, its type, help text
and labels; ``LedgerCollector`` (a ``prometheus_client`` collector) turns
one reading into those families -- the only place where exact amounts
become floats. ``Exporter`` is what the endpoint holds: it reads the
ledger in the session it is given (the handler's worker thread) and
encodes the answer in the format the scraper asked for.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily, Metric,
                                   SummaryMetricFamily)
from prometheus_client.exposition import choose_encoder
from sqlalchemy.orm import Session

from . import metrics
from .passstats import PassRecord, PassStats

if TYPE_CHECKING:
    from ..serving.health import Reports

#: what a reclaim event may be and which rule made it (``ReclaimEvent``)
RECLAIM_KINDS = ("warning", "extended", "reclaimed", "shadow")
RECLAIM_RULES = ("idle", "lifetime", "utilization")

PLACE = ("resource_group", "domain", "project")


@dataclass(frozen=True)
class Family:
    name: str  # without the _total of a counter
    kind: str  # gauge | counter | summary
    help: str
    labels: tuple[str, ...]
    #: the ``Readings`` field holding it; None: made by the collector itself
    field: str | None
    per_user: bool = False


FAMILIES: tuple[Family, ...] = (
    Family("hubgrid_up", "gauge", "1: the service answered this scrape from its database.",
           (), None),
    Family("hubgrid_metrics_read_seconds", "gauge",
           "Seconds this scrape took to read the ledger.", (), None),
    Family("hubgrid_pass_duration_seconds", "summary",
           "The service's periodic passes since it started: how many ran (_count) and their "
           "seconds in all (_sum). pass: schedule (the queues), reclaim, log-retention, "
           "usage-scan.", ("pass",), None),
    Family("hubgrid_pass_failures", "counter",
           "Passes that failed (logged, and tried again at the next interval).", ("pass",),
           None),
    Family("hubgrid_endpoint_calls", "counter",
           "Calls the serving gateway passed to each endpoint since the service started, "
           "by outcome (code: 2xx, 4xx, 5xx...; a 503 is an endpoint with no replica ready).",
           ("endpoint", "code"), None),
    Family("hubgrid_endpoint_call_seconds", "counter",
           "Seconds those calls took, from the gateway's receipt to the answer's end.",
           ("endpoint", "code"), None),
    Family("hubgrid_pass_last_end_timestamp_seconds", "gauge",
           "When the pass last ended (Unix time); absent until it ran once. A pass that "
           "stopped running shows as an age that grows.", ("pass",), None),
    Family("hubgrid_allocated_slots", "gauge",
           "Slots held by running sessions: cpu in cores, mem in bytes, gpu in whole "
           "devices, gpu.shares in fractions of one device.", PLACE + ("slot",), "allocated"),
    Family("hubgrid_running_sessions", "gauge", "Running (allocated) sessions.", PLACE,
           "running"),
    Family("hubgrid_gpu_share_seconds", "counter",
           "GPU-seconds held by sessions that ran, ended ones and running ones up to now: "
           "a session holding 0.5 of a GPU for an hour adds 1800. kind: whole (gpu "
           "devices) or share (gpu.shares).", PLACE + ("kind",), "gpu_seconds"),
    Family("hubgrid_pending_requests", "gauge", "Requests waiting in the queue.",
           ("resource_group",), "pending"),
    Family("hubgrid_pending_reasons", "gauge",
           "Pending requests by why they wait: reason is admission's code (slot-limit, "
           "sessions, capacity, queue, ...; none: not judged yet), level where the limit "
           "sits. A request waiting for several reasons counts under each.",
           ("resource_group", "reason", "level"), "pending_reasons"),
    Family("hubgrid_pending_oldest_seconds", "gauge",
           "Seconds the oldest pending request of the group has waited.",
           ("resource_group",), "pending_oldest"),
    Family("hubgrid_project_quota_used", "gauge",
           "What a project's running sessions hold, counted as admission counts it against "
           "the project's limits (a gpu limit counts whole devices and shares together).",
           ("domain", "project", "slot"), "project_used"),
    Family("hubgrid_project_quota_limit", "gauge",
           "A project's limit (total_resource_slots); absent: unlimited.",
           ("domain", "project", "slot"), "project_limit"),
    Family("hubgrid_project_sessions_limit", "gauge",
           "A project's max_concurrent_sessions; absent: unlimited.",
           ("domain", "project"), "project_sessions_limit"),
    Family("hubgrid_domain_quota_used", "gauge",
           "What a domain's running sessions hold, counted against the domain's limits.",
           ("domain", "slot"), "domain_used"),
    Family("hubgrid_domain_quota_limit", "gauge",
           "A domain's limit (total_resource_slots); absent: unlimited.",
           ("domain", "slot"), "domain_limit"),
    Family("hubgrid_capacity_slots", "gauge",
           "Capacity of a resource group's schedulable nodes (gpu: devices).",
           ("resource_group", "slot"), "capacity"),
    Family("hubgrid_nodes", "gauge", "Nodes of a resource group, schedulable or drained.",
           ("resource_group", "schedulable"), "nodes"),
    Family("hubgrid_reclaim_events", "counter",
           "Idle reclamation's decisions: kind warning, extended (kept by its owner), "
           "reclaimed, or shadow (would have been reclaimed); rule idle, lifetime or "
           "utilization.", ("resource_group", "kind", "rule"), "reclaim_events"),
    Family("hubgrid_user_allocated_slots", "gauge",
           "Slots held by each user's running sessions (only with "
           "metrics_user_labels: one series per user).",
           ("resource_group", "domain", "user", "slot"), "user_allocated", per_user=True),
    Family("hubgrid_user_running_sessions", "gauge",
           "Each user's running sessions (only with metrics_user_labels).",
           ("resource_group", "domain", "user"), "user_running", per_user=True),
)


class Highest:
    """The highest value each counter series has shown (thread-safe), so a
    counter never goes down between scrapes of one process: a session read
    as running at one scrape may end a moment earlier than that scrape's
    ``now``, and Prometheus would read any decrease as a reset."""

    def __init__(self) -> None:
        self._seen: dict[tuple, Decimal] = {}
        self._lock = threading.Lock()

    def hold(self, family: str, labels: tuple[str, ...], value: Decimal) -> Decimal:
        key = (family, labels)
        with self._lock:
            value = max(value, self._seen.get(key, value))
            self._seen[key] = value
        return value


def with_zeros(r: metrics.Readings) -> dict[str, dict]:
    """The counted maps of ``r`` with every bounded series present from the
    start: each group's pending count and its reclaim counters at 0 (so a
    rate works from the first event, and no group is missing)."""
    groups = {g for g, _ in r.capacity} | {g for g, _ in r.nodes} | set(r.pending)
    pending = {g: 0 for g in groups} | r.pending
    reclaims = {(g, k, rule): 0 for g in groups for k in RECLAIM_KINDS
                for rule in RECLAIM_RULES} | r.reclaim_events
    return {"pending": pending, "reclaim_events": reclaims}


class LedgerCollector:
    """One reading as Prometheus metric families (a ``prometheus_client``
    collector: ``collect()`` yields them)."""

    def __init__(self, readings: metrics.Readings, highest: Highest, read_seconds: float,
                 passes: dict[str, PassRecord] | None = None,
                 calls: dict | None = None, call_seconds: dict | None = None):
        self.readings = readings
        self.highest = highest
        self.read_seconds = read_seconds
        self.passes = passes or {}
        #: (endpoint id, code class) -> calls and their seconds (serving/health.py)
        self.calls = calls or {}
        self.call_seconds = call_seconds or {}

    def _own(self, fam: Family) -> Metric:
        """A family the collector makes itself: the scrape's and the passes'."""
        if fam.kind == "summary":
            out = SummaryMetricFamily(fam.name, fam.help, labels=fam.labels)
            for name, p in sorted(self.passes.items()):
                out.add_metric([name], count_value=p.runs, sum_value=p.seconds)
            return out
        make = CounterMetricFamily if fam.kind == "counter" else GaugeMetricFamily
        out = make(fam.name, fam.help, labels=fam.labels)
        if fam.name in ("hubgrid_endpoint_calls", "hubgrid_endpoint_call_seconds"):
            values = self.calls if fam.name == "hubgrid_endpoint_calls" else self.call_seconds
            for key, value in sorted(values.items()):
                out.add_metric(list(key), float(value))  # the Prometheus boundary
        elif fam.name == "hubgrid_pass_failures":
            for name, p in sorted(self.passes.items()):
                out.add_metric([name], p.failures)
        elif fam.name == "hubgrid_pass_last_end_timestamp_seconds":
            for name, p in sorted(self.passes.items()):
                if p.last_end is not None:
                    out.add_metric([name], p.last_end)
        else:
            out.add_metric([], 1.0 if fam.name == "hubgrid_up" else self.read_seconds)
        return out

    def collect(self) -> Iterator[Metric]:
        r = self.readings
        zeros = with_zeros(r)
        for fam in FAMILIES:
            if fam.field is None:
                yield self._own(fam)
                continue
            make = CounterMetricFamily if fam.kind == "counter" else GaugeMetricFamily
            out = make(fam.name, fam.help, labels=fam.labels)
            values = zeros.get(fam.field, getattr(r, fam.field))
            if values is None:  # a per-user family that is off
                continue
            for key, value in sorted(values.items()):
                labels = key if isinstance(key, tuple) else (key,)
                if fam.kind == "counter":
                    value = self.highest.hold(fam.name, labels, Decimal(value))
                out.add_metric(list(labels), float(value))  # the Prometheus boundary
            yield out


class Settings(Protocol):
    """What the exporter reads of the service, at each scrape."""

    authenticate_prometheus: bool
    metrics_user_labels: bool
    pass_stats: PassStats
    serving_reports: "Reports"

    def clock(self) -> dt.datetime: ...


class Exporter:
    """The metrics endpoint's state: the service's settings, read live, and
    the counters' highest values."""

    def __init__(self, settings: Settings, timer: Callable[[], float] = time.perf_counter):
        self.settings = settings
        self.highest = Highest()
        self.ended = metrics.EndedTotals()
        self.timer = timer

    @property
    def authenticate(self) -> bool:
        """Must a scraper authenticate (``authenticate_prometheus``)?"""
        return bool(self.settings.authenticate_prometheus)

    def collector(self, s: Session) -> LedgerCollector:
        """The ledger read now in ``s`` (blocking: run it in a worker thread)."""
        start = self.timer()
        readings = metrics.read(s, self.settings.clock(), ended=self.ended,
                                per_user=bool(self.settings.metrics_user_labels))
        reports = self.settings.serving_reports
        return LedgerCollector(readings, self.highest, self.timer() - start,
                               self.settings.pass_stats.snapshot(), dict(reports.calls),
                               dict(reports.seconds))

    def scrape(self, s: Session, accept: str | None) -> tuple[bytes, str]:
        """(body, content type) of one scrape, in the format ``accept`` asks
        for (Prometheus text, or OpenMetrics). Blocking."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.collector(s)), content_type
