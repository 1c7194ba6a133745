"""The storm: many tenants asking at once for mixed sessions, each admitted
session released 0-0.5 s later (a waiting one cancelled then, or released if
the queue placed it meanwhile), through the service's real HTTP API.

``plan`` is the seeded request stream; ``drive`` fires it at a running
service and measures every answer and every release."""

from __future__ import annotations

import heapq
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from bench.admission.harness import percentile
from bench.admission.world import Tenant

#: the request mix: CPU only, GPU shares of 0.25 and 0.5, one and two whole GPUs
MIX = (
    {"cpu": "2", "mem": "8G"},
    {"cpu": "1", "mem": "4G", "gpu.shares": "0.25"},
    {"cpu": "1", "mem": "8G", "gpu.shares": "0.5"},
    {"cpu": "4", "mem": "32G", "gpu": "1"},
    {"cpu": "8", "mem": "64G", "gpu": "2"},
)
#: longest hold of a session before its release (seconds)
MAX_HOLD = 0.5
#: seconds a request may take before it counts as failed ("other")
TIMEOUT = 120
#: how unevenly users ask: the user of rank r asks with weight 1 / (r + 1) ** SKEW
SKEW = 0.8


@dataclass(frozen=True)
class Ask:
    tenant: Tenant
    slots: dict
    hold: float


def plan(tenants: list[Tenant], n: int, seed: int) -> list[Ask]:
    """``n`` requests: who asks (a few users ask much more than most), for
    what (``MIX``), and how long they hold it (0-``MAX_HOLD`` s)."""
    rnd = random.Random(seed)
    weights = [1 / (r + 1) ** SKEW for r in range(len(tenants))]
    who = rnd.choices(tenants, weights=weights, k=n)
    return [Ask(t, dict(rnd.choice(MIX)), rnd.uniform(0, MAX_HOLD)) for t in who]


@dataclass
class Outcome:
    """Latencies (seconds) by answer, and of the releases of admitted sessions."""

    admitted: list[float] = field(default_factory=list)
    pending: list[float] = field(default_factory=list)
    refused: list[float] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    release: list[float] = field(default_factory=list)
    release_failed: list[str] = field(default_factory=list)
    #: latencies of the cancels of waiting requests (and releases of ones the queue placed)
    cancels: list[float] = field(default_factory=list)
    decide_s: float = 0.0


class Releaser:
    """Releases allocations when they are due, on its own worker threads."""

    def __init__(self, api: str, workers: int, outcome: Outcome, local: threading.local):
        self.api, self.outcome, self.local = api, outcome, local
        self.heap: list = []
        self.cv = threading.Condition()
        self.closed = False
        self.pool = ThreadPoolExecutor(workers)
        self.thread = threading.Thread(target=self._dispatch, daemon=True)
        self.thread.start()

    def later(self, delay: float, alloc_id: str, auth: str, measured: bool) -> None:
        with self.cv:
            heapq.heappush(self.heap, (time.monotonic() + delay, alloc_id, auth, measured))
            self.cv.notify()

    def _dispatch(self) -> None:
        while True:
            with self.cv:
                while not self.heap and not self.closed:
                    self.cv.wait()
                if not self.heap:
                    return
                due = self.heap[0][0]
                wait = due - time.monotonic()
                if wait > 0:
                    self.cv.wait(wait)
                    continue
                _, alloc_id, auth, measured = heapq.heappop(self.heap)
            self.pool.submit(self._release, alloc_id, auth, measured)

    def _release(self, alloc_id: str, auth: str, measured: bool) -> None:
        t = time.perf_counter()
        try:
            r = http(self.local).delete(self.api + f"allocations/{alloc_id}",
                                        headers={"Authorization": auth}, timeout=TIMEOUT)
        except requests.RequestException as e:  # counted, so a slow run still reports
            self.outcome.release_failed.append(f"{type(e).__name__}: {e}")
            return
        took = time.perf_counter() - t
        if r.status_code != 204:
            self.outcome.release_failed.append(f"{r.status_code} {r.text[:200]}")
        elif measured:
            self.outcome.release.append(took)
        else:
            self.outcome.cancels.append(took)

    def close(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify()
        self.thread.join()
        self.pool.shutdown(wait=True)


def http(local: threading.local) -> requests.Session:
    """This thread's HTTP session (kept alive between its requests)."""
    if not hasattr(local, "session"):
        local.session = requests.Session()
    return local.session


def drive(api: str, asks: list[Ask], concurrency: int) -> Outcome:
    """Fire ``asks`` at ``concurrency``; release each admitted session after
    its hold and cancel each waiting one then; return when all are released."""
    out = Outcome()
    local = threading.local()
    releaser = Releaser(api, max(4, concurrency // 2), out, local)

    def one(ask: Ask) -> None:
        body = {"project": ask.tenant.project, "resource_group": "default", "slots": ask.slots}
        t = time.perf_counter()
        try:
            r = http(local).post(api + "allocations", json=body,
                                 headers={"Authorization": ask.tenant.auth}, timeout=TIMEOUT)
        except requests.RequestException as e:
            out.other.append(f"{type(e).__name__}: {e}")
            return
        took = time.perf_counter() - t
        if r.status_code in (201, 202):
            (out.admitted if r.status_code == 201 else out.pending).append(took)
            releaser.later(ask.hold, r.json()["id"], ask.tenant.auth, r.status_code == 201)
        elif r.status_code == 422:
            out.refused.append(took)
        else:
            out.other.append(f"{r.status_code} {r.text[:200]}")

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, asks))
    out.decide_s = time.perf_counter() - start
    releaser.close()
    return out


def summary(out: Outcome, n: int) -> dict:
    """Decisions per second and p50/p99 (ms) of each kind of answer and of releases."""
    row = {"requests": n, "decisions_per_s": n / out.decide_s if out.decide_s else 0.0,
           "other": len(out.other), "release_failed": len(out.release_failed)}
    for name in ("admitted", "pending", "refused", "release"):
        lat = sorted(getattr(out, name))
        row[name] = len(lat)
        row[f"{name}_p50_ms"] = 1000 * percentile(lat, 0.5)
        row[f"{name}_p99_ms"] = 1000 * percentile(lat, 0.99)
    return row
