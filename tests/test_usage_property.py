"""A property of usage accounting: for random intervals (ended and running)
and a random period, the per-user, per-project, per-domain, per-resource-group,
per-day and cluster totals read through the database agree exactly with one
another and with a rebuild from the raw intervals (Fractions, written apart
from operations.usage). Hypothesis on SQLite; one example set on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_world import Cluster
from quota_service.core import db
from quota_service.core.models import Allocation, Domain, Project, ResourceGroup, User
from quota_service.core.usagemodels import UsageInterval
from quota_service.operations import usage, usage_query

UTC = dt.timezone.utc
BASE = dt.datetime(2031, 2, 27, 0, 0, tzinfo=UTC)  # a span over the end of February
NOW = BASE + dt.timedelta(days=12)
US = dt.timedelta(microseconds=1)
#: (user, domain, project, resource group)
OWNERS = [("alice", "acme", "ml", "gpu"), ("alice", "acme", "web", "cpu"),
          ("bob", "acme", "web", "gpu"), ("gina", "globex", "lab", "gpu"),
          ("gina", "globex", "lab", "cpu")]

SLOTS = st.fixed_dictionaries({}, optional={
    "cpu": st.integers(1, 64_000).map(lambda m: Decimal(m).scaleb(-3)),
    "mem": st.integers(1, 2**40).map(Decimal),
}).flatmap(lambda base: st.one_of(
    st.just(base),
    st.integers(1, 8).map(lambda g: {**base, "gpu": Decimal(g)}),
    st.integers(1, 100).map(lambda c: {**base, "gpu.shares": Decimal(c).scaleb(-2)}),
))
MICROS_10_DAYS = 10 * 86400 * 10**6
INTERVAL = st.tuples(
    st.integers(0, len(OWNERS) - 1), SLOTS,
    st.integers(0, MICROS_10_DAYS),                       # start after BASE
    st.one_of(st.none(), st.integers(0, 3 * 86400 * 10**6)),  # duration; None: running
)
PERIOD = st.tuples(st.integers(0, MICROS_10_DAYS), st.integers(1, 12 * 86400 * 10**6))


def setup_world(tenancy):
    c = Cluster(tenancy)
    c.add_group("gpu", {"n1": ()}, domains=("acme", "globex"))
    c.add_group("cpu", {"n2": ()}, domains=("acme", "globex"))
    with tenancy.session_factory() as s:
        ids = {}
        for user, domain, project, rg in OWNERS:
            d = s.scalar(sa.select(Domain).where(Domain.name == domain))
            ids[(user, domain, project, rg)] = (
                s.scalar(sa.select(User.id).where(User.name == user)), d.id,
                s.scalar(sa.select(Project.id).where(Project.domain_id == d.id,
                                                     Project.name == project)),
                s.scalar(sa.select(ResourceGroup.id).where(ResourceGroup.name == rg)))
    return ids


@pytest.fixture
def ids(tenancy):
    """The world's ids by owner (made once per test: hypothesis reuses it)."""
    return setup_world(tenancy)


def store(tenancy, ids, raw):
    """Replace the record and the running sessions by ``raw``."""
    with db.transaction(tenancy.session_factory) as s:
        s.execute(sa.delete(UsageInterval))
        s.execute(sa.delete(Allocation))
        for owner, slots, start, end in raw:
            user_id, domain_id, project_id, rg_id = ids[OWNERS[owner]]
            text = {k: format(v, "f") for k, v in slots.items()}
            common = dict(user_id=user_id, domain_id=domain_id, project_id=project_id,
                          resource_group_id=rg_id, slots=text)
            if end is None:
                s.add(Allocation(id=str(uuid.uuid4()), state="allocated", admitted_at=start,
                                 created_at=start, **common))
            else:
                s.add(UsageInterval(allocation_id=str(uuid.uuid4()), session_type="batch",
                                    gpus=[], started_at=start, ended_at=end, **common))


def rebuild(raw, start, end, now, key):
    """(sessions, {slot: Fraction slot-seconds}) per key(owner), from the raw
    intervals, with no code of operations.usage."""
    out = defaultdict(lambda: [0, defaultdict(Fraction)])
    for owner, slots, s, e in raw:
        last = max(now if e is None else e, s)
        lo, hi = max(s, start), min(last, end)
        if not (hi > lo or (s == last and start <= s < end)):
            continue
        seconds = Fraction(max(hi - lo, dt.timedelta(0)) // US, 10**6)
        bucket = out[key(OWNERS[owner])]
        bucket[0] += 1
        for slot, amount in slots.items():
            bucket[1][slot] += Fraction(amount) * seconds
    return {k: (n, {s: v for s, v in f.items()}) for k, (n, f) in out.items()}


def exact(f: usage.Figures):
    return f.sessions, {k: Fraction(v) for k, v in f.slot_seconds.items()}


def plus(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


KEYS = {"user": lambda o: (o[1], o[0]), "project": lambda o: (o[1], o[2]),
        "domain": lambda o: (o[1],), "resource_group": lambda o: (o[3],)}


def check(tenancy, ids, raw, start, end, now):
    store(tenancy, ids, raw)
    root = tenancy.principal("root")
    totals = []
    for by, key in KEYS.items():
        q = usage_query.Query(start, end, by, daily=True)
        with tenancy.session_factory() as s:
            r = usage_query.report(s, root, q, now)
        expected = rebuild(raw, start, end, now, key)
        assert {k: exact(f) for k, f in r.groups.items()} == expected
        # the groups, and the days, add up to the total exactly
        slot_sum, sessions = {}, 0
        for f in r.groups.values():
            slot_sum, sessions = plus(slot_sum, exact(f)[1]), sessions + f.sessions
        assert (sessions, slot_sum) == exact(r.total)
        day_sum = {}
        for f in r.days.values():
            day_sum = plus(day_sum, exact(f)[1])
        assert day_sum == exact(r.total)[1]
        for k, days in r.group_days.items():
            assert sum((exact(f)[1].get("cpu", 0) for f in days.values()), Fraction(0)) == \
                exact(r.groups[k])[1].get("cpu", 0)
        totals.append(exact(r.total))
    assert all(t == totals[0] for t in totals)
    cluster = rebuild(raw, start, end, now, lambda o: ())
    assert totals[0] == cluster.get((), (0, {}))


def materialise(intervals, period):
    raw = [(owner, slots, BASE + start * US, None if d is None else BASE + (start + d) * US)
           for owner, slots, start, d in intervals]
    start = BASE + period[0] * US
    return raw, start, start + period[1] * US


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(intervals=st.lists(INTERVAL, max_size=12), period=PERIOD)
def test_random_intervals_agree_per_user_project_day_and_cluster(tenancy, ids, intervals,
                                                               period):
    raw, start, end = materialise(intervals, period)
    check(tenancy, ids, raw, start, end, NOW)


def test_one_example_set_agrees_on_each_database(tenancy, ids):
    rng = random.Random(12)
    intervals = []
    for _ in range(40):
        slots = {"cpu": Decimal(rng.randint(1, 64_000)).scaleb(-3),
                 "mem": Decimal(rng.randint(1, 2**40))}
        if rng.random() < 0.5:
            slots["gpu.shares"] = Decimal(rng.randint(1, 100)).scaleb(-2)
        else:
            slots["gpu"] = Decimal(rng.randint(1, 8))
        duration = None if rng.random() < 0.2 else rng.randint(0, 3 * 86400 * 10**6)
        intervals.append((rng.randrange(len(OWNERS)), slots, rng.randint(0, MICROS_10_DAYS),
                          duration))
    raw, start, end = materialise(intervals, (86400 * 10**6 + 1, 7 * 86400 * 10**6))
    check(tenancy, ids, raw, start, end, NOW)
