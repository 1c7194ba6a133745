"""Properties of the ledger under random submit/release/schedule sequences.

Whatever the limits and whatever happens, what is allocated never exceeds a
device (1000 milli per GPU), a node's cpu and memory, or any user, project
or domain limit; GPUs go only to nodes of an allowed model; and releasing
twice is the same as releasing once. SQLite only: the rules are the same on
both databases (tests/test_ledger.py), this is about the arithmetic.

One database serves all examples: each example starts by deleting every
allocation and setting its own limits.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_world import SECOND, limit_text
from quota_service.core import slots as slotlib
from quota_service.core.errors import Invalid
from quota_service.core.models import Allocation, Domain, Node, Project, ResourcePolicy, User

GiB = 2**30
NODES = {  # name: (GPU models, cpu, mem)
    "a100-1": (("A100", "A100"), "8", "32G"),
    "t4-1": (("T4", "T4", "T4"), "4", "16G"),
    "cpu-1": ((), "16", "64G"),
}
USERS = {"alice": "ml", "bob": "web", "ada": "web"}  # all in domain acme


def maybe(*values):
    return st.one_of(st.none(), st.sampled_from(values))


def limit_map(**choices):
    """A limit map with some of the slots named."""
    return st.fixed_dictionaries({}, optional={k: st.sampled_from(v) for k, v in choices.items()})


LIMITS = limit_map(cpu=["2", "6", "20"], gpu=["0", "1", "3"], **{"gpu.shares": ["0.5", "1", "1.75"]},
                   mem=["16G", "48G"])
SETUP = st.fixed_dictionaries({
    "policy": LIMITS,
    "max_sessions": maybe(1, 2, 4),
    "ml": LIMITS,
    "web": LIMITS,
    "acme": LIMITS,
    "hol_passes": st.sampled_from([0, 1, 3]),
    "queue_order": st.sampled_from(["fifo", "priority"]),
})

REQUEST = st.fixed_dictionaries(
    {"cpu": st.sampled_from(["0", "0.5", "2", "5"]),
     "mem": st.sampled_from(["0", "4G", "20G"])},
    optional={"gpu": st.sampled_from(["1", "2", "3"]),
              "gpu.shares": st.integers(5, 100).map(lambda n: str(Decimal(n) / 100))},
).filter(lambda r: not ("gpu" in r and "gpu.shares" in r)).filter(
    lambda r: any(v not in ("0", "0G") for v in r.values()))  # asking for nothing is refused

SUBMIT = st.tuples(st.just("submit"), st.sampled_from(sorted(USERS)), REQUEST,
                   st.sampled_from([[], ["A100"], ["T4"]]), st.integers(0, 3))
OPS = st.lists(st.one_of(  # mostly submits, so that the cluster fills up
    SUBMIT, SUBMIT, SUBMIT,
    st.tuples(st.just("release"), st.integers(0, 30)),
    st.tuples(st.just("schedule")),
), min_size=8, max_size=30)


@pytest.fixture
def prop(cluster):
    """The cluster of NODES, granted to acme; bob and ada in acme/web."""
    cluster.add_group("prop", {name: models for name, (models, _, _) in NODES.items()})
    for name, (_, cpu, mem) in NODES.items():  # nodes of different sizes
        cluster.set_node(name, capacity=limit_text({"cpu": cpu, "mem": mem}))
    cluster.join("bob", "acme", "web")
    cluster.join("ada", "acme", "web")
    return cluster


def start(cluster, setup) -> None:
    with cluster.world.tx() as s:
        s.execute(sa.delete(Allocation))
    cluster.set_policy("default", total_resource_slots=setup["policy"],
                       max_concurrent_sessions=setup["max_sessions"])
    cluster.set_project("acme", "ml", slots=setup["ml"])
    cluster.set_project("acme", "web", slots=setup["web"])
    cluster.set_domain("acme", slots=setup["acme"])
    cluster.set_group("prop", hol_passes=setup["hol_passes"], queue_order=setup["queue_order"])


def run(cluster, op, ids: list[str]) -> None:
    kind = op[0]
    cluster.now += SECOND
    if kind == "submit":
        _, user, amounts, models, priority = op
        try:
            a = cluster.submit(user, USERS[user], "prop", slots=amounts, gpu_models=models,
                               priority=priority if user == "ada" else 0)
        except Invalid:
            return
        ids.append(a["id"])
    elif kind == "release" and ids:
        alloc_id = ids[op[1] % len(ids)]
        once = cluster.release("root", alloc_id)
        assert cluster.release("root", alloc_id, "again") == once
        assert once["state"] in ("released", "cancelled")
    elif kind == "schedule":
        cluster.schedule("prop")


def check_invariants(cluster) -> None:
    with cluster.world.session_factory() as s:
        nodes = {n.id: n for n in s.scalars(sa.select(Node))}
        allocated = list(s.scalars(sa.select(Allocation).where(Allocation.state == "allocated")))
        pending = list(s.scalars(sa.select(Allocation).where(Allocation.state == "pending")))
        users = {u.id: u.name for u in s.scalars(sa.select(User))}
        projects = {p.id: p for p in s.scalars(sa.select(Project))}
        policy = s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == "default"))
        domain_limits = s.scalar(sa.select(Domain).where(Domain.name == "acme")).total_resource_slots

        device_use: Counter = Counter()
        node_use: dict[int, dict] = {}
        per: dict[tuple, dict] = {}
        sessions: Counter = Counter()
        for a in allocated:
            node = nodes[a.node_id]
            amounts = slotlib.from_text(a.slots)
            node_use[a.node_id] = slotlib.add(node_use.get(a.node_id, {}), amounts)
            whole = "gpu" in amounts
            assert len(a.gpus) == (int(amounts["gpu"]) if whole else int("gpu.shares" in amounts))
            for g in a.gpus:
                assert 0 <= g["index"] < len(node.devices)
                assert Decimal(g["share"]) == (1 if whole else amounts["gpu.shares"])
                device_use[(node.name, g["index"])] += int(Decimal(g["share"]) * 1000)
                if a.gpu_models:
                    assert node.devices[g["index"]].model in a.gpu_models
            for key in (("user", a.user_id), ("project", a.project_id), ("domain", a.domain_id)):
                per[key] = slotlib.add(per.get(key, {}), amounts)
            sessions[a.user_id] += 1

        assert all(milli <= 1000 for milli in device_use.values()), device_use
        for node_id, used in node_use.items():
            capacity = slotlib.from_text(nodes[node_id].capacity)
            for slot in ("cpu", "mem"):
                assert used.get(slot, 0) <= capacity[slot], (nodes[node_id].name, slot, used)

        def within(used: dict, limits: dict, what) -> None:
            for slot, limit in slotlib.from_text(limits).items():
                assert used.get(slot, 0) <= limit, (what, slot, used, limits)

        for (level, key), used in per.items():
            if level == "user":
                within(used, policy.total_resource_slots, users[key])
            elif level == "project":
                within(used, projects[key].total_resource_slots, projects[key].name)
            else:
                within(used, domain_limits, "acme")
        if policy.max_concurrent_sessions is not None:
            assert max(sessions.values(), default=0) <= policy.max_concurrent_sessions
        for a in pending:
            assert a.node_id is None and a.gpus == [] and a.reasons


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setup=SETUP, ops=OPS)
def test_random_sequences_never_overcommit_anything(prop, setup, ops):
    start(prop, setup)
    ids: list[str] = []
    for op in ops:
        run(prop, op, ids)
        check_invariants(prop)
