"""The queue order (quota_service/scheduling/ordering.py) as data: FIFO,
priority and dominant resource fairness, with exact shares."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D

from quota_service.scheduling import ordering
from quota_service.scheduling.ordering import Waiting

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def w(id_, minute, priority=0, user=1):
    return Waiting(id_, T0 + dt.timedelta(minutes=minute), priority, user)


def ids(ws):
    return [x.id for x in ws]


def test_fifo_is_oldest_first_and_unknown_policies_are_fifo():
    queue = [w("c", 3), w("a", 1), w("b", 2)]
    assert ids(ordering.order("fifo", queue)) == ["a", "b", "c"]
    assert ids(ordering.order("anything", queue)) == ["a", "b", "c"]


def test_ties_end_on_the_id():
    assert ids(ordering.order("fifo", [w("b", 1), w("a", 1)])) == ["a", "b"]


def test_priority_first_then_age():
    queue = [w("old-low", 1, 0), w("new-high", 5, 10), w("old-high", 2, 10)]
    assert ids(ordering.order("priority", queue)) == ["old-high", "new-high", "old-low"]


def test_drf_serves_the_smallest_dominant_share_first():
    capacity = {"cpu": D(10), "gpu": D(3)}
    held = ordering.held_by_user([(1, {"gpu": D("0.9")}), (1, {"gpu": D("0.9")}),
                                  (2, {"cpu": D(4)})])
    assert held[1] == {"gpu": D("1.8")}  # exact: 0.9 + 0.9
    # user 1 holds 1.8/3 = 0.6 of the GPUs, user 2 holds 0.4 of the CPUs
    queue = [w("u1", 1, user=1), w("u2", 2, user=2), w("u3", 3, user=3)]
    assert ids(ordering.order("drf", queue, capacity, held)) == ["u3", "u2", "u1"]


def test_dominant_share_is_exact_and_ignores_slots_without_capacity():
    assert ordering.dominant_share({"gpu": D("0.9")}, {"gpu": D(3)}) == D("0.3")
    assert ordering.dominant_share({"tpu": D(1)}, {"gpu": D(3)}) == 0
    assert ordering.dominant_share({}, {"gpu": D(3)}) == 0
