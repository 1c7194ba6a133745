"""Racing admissions: many requests at once never take more than there is.

Sixteen threads start together (a barrier) and each submits in its own
``db.ledger_transaction`` on its own connection, as concurrent API calls
do: on SQLite a file database shared by every thread (BEGIN IMMEDIATE), on
PostgreSQL the advisory lock. Exactly as many requests as fit are
allocated, the rest pending, and no GPU is handed out twice.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest

from ledger_world import T0, shares
from quota_service.core import db
from quota_service.scheduling import ledger
from quota_service.scheduling.placement import BestFit

N = 16
BARRIER_TIMEOUT = 60  # only so that a broken test fails instead of hanging


def race(cluster, group: str, amounts: dict, n: int = N) -> list[dict]:
    """``n`` submits of the same request by alice in acme/ml, all at once."""
    principal = cluster.world.principal("alice")
    body = cluster.body("ml", group, slots=amounts)
    barrier = threading.Barrier(n, timeout=BARRIER_TIMEOUT)

    def submit(_):
        barrier.wait()
        with db.ledger_transaction(cluster.world.session_factory) as s:
            return ledger.submit(s, principal, body, T0, BestFit())

    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(submit, range(n)))
    # what was answered is what was written
    assert sorted(r["id"] for r in results) == sorted(a["id"] for a in cluster.allocations())
    return [cluster.get(r["id"]) for r in results]


def held(allocated: list[dict]) -> Counter:
    """Share held of each (node, device index)."""
    total: Counter = Counter()
    for a in allocated:
        for device, share in shares(a).items():
            total[device] += share
    return total


def by_state(results: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {"allocated": [], "pending": []}
    for r in results:
        out[r["state"]].append(r)
    return out


@pytest.mark.parametrize("nodes", [
    pytest.param({"quad-1": ("A100",) * 4}, id="one node of 4 GPUs"),
    pytest.param({"duo-1": ("A100",) * 2, "duo-2": ("T4",) * 2}, id="two nodes of 2 GPUs"),
])
def test_racing_requests_take_exactly_the_free_gpus_once(cluster, nodes):
    cluster.add_group("race", nodes)
    got = by_state(race(cluster, "race", {"gpu": 1}))
    assert (len(got["allocated"]), len(got["pending"])) == (4, N - 4)
    devices = [device for a in got["allocated"] for device in shares(a)]
    assert len(devices) == len(set(devices)) == 4
    assert {node for node, _ in devices} == set(nodes)
    assert all(r["reasons"][0]["code"] == "capacity" for r in got["pending"])


def test_racing_fractional_requests_stay_within_a_project_limit(cluster):
    cluster.add_group("race", {"duo-1": ("A100",) * 2, "duo-2": ("A100",) * 2})
    cluster.set_project("acme", "ml", slots={"gpu.shares": "2"})
    got = by_state(race(cluster, "race", {"gpu.shares": "0.5"}))
    assert (len(got["allocated"]), len(got["pending"])) == (4, N - 4)
    assert sum(held(got["allocated"]).values()) == Decimal(2)
    assert all(share <= 1 for share in held(got["allocated"]).values())
    assert {(r["reasons"][0]["level"], r["reasons"][0]["slot"]) for r in got["pending"]} == {
        ("project", "gpu.shares")}


def test_racing_fractional_requests_never_overfill_a_gpu(cluster):
    # 0.3 each: three fit on a GPU (0.9), a fourth would overfill it
    cluster.add_group("race", {"duo-1": ("A100",) * 2})
    got = by_state(race(cluster, "race", {"gpu.shares": "0.3"}))
    assert (len(got["allocated"]), len(got["pending"])) == (6, N - 6)
    assert held(got["allocated"]) == {("duo-1", 0): Decimal("0.9"), ("duo-1", 1): Decimal("0.9")}
