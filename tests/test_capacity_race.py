"""A capacity change racing an admission: whichever begins first, the other
is decided after it, on both databases.

Each write that changes capacity (here the removal of a node's GPUs, through
``inventory.update_node`` in a plain ``db.transaction`` as the API runs it)
takes the ledger lock that admissions hold. The tests hold one side's
transaction open, start the other, and let the first commit only once the
second has either finished (the race: nothing serialised them) or waits
for the ledger lock; then no allocation may hold a device that no longer
exists. On SQLite every write transaction takes the write lock at BEGIN,
so the second always waits; on PostgreSQL it is the advisory lock.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from ledger_world import T0
from quota_service.core import db
from quota_service.core.errors import Conflict, Invalid
from quota_service.core.models import Node
from quota_service.core.schemas import NodeUpdate
from quota_service.scheduling import inventory, ledger
from quota_service.scheduling.placement import BestFit

#: only so that a broken test fails instead of hanging
TIMEOUT = 60


def waits_for_the_ledger_lock(world) -> bool:
    """Whether some transaction waits for the ledger lock now (PostgreSQL);
    on SQLite the second writer waits at BEGIN, which cannot be seen."""
    with world.session_factory() as s:
        if s.connection().dialect.name != "postgresql":
            return False
        return bool(s.scalar(sa.text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            "AND objid = :key AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"),
            {"key": db.LEDGER_LOCK_KEY}))


def second_is_done_or_waiting(world, second: Future, started: threading.Event) -> None:
    """Return once ``second`` has started and then finished or waits for the
    ledger lock (SQLite: once it started: it cannot begin before the first
    commits)."""
    assert started.wait(TIMEOUT)
    if world.session_factory().bind.dialect.name == "sqlite":
        return
    deadline = time.monotonic() + TIMEOUT
    while not second.done() and not waits_for_the_ledger_lock(world):
        assert time.monotonic() < deadline, "the second transaction neither ended nor waited"
        time.sleep(0.01)


def devices_of(world, node: str) -> set[int]:
    with world.session_factory() as s:
        n = s.scalar(sa.select(Node).where(Node.name == node))
        return {d.index for d in n.devices}


def assert_nothing_on_removed_devices(cluster, node: str) -> None:
    present = devices_of(cluster.world, node)
    for a in cluster.allocations("allocated"):
        assert a["node"] != node or {g["index"] for g in a["gpus"]} <= present, (
            f"allocation {a['id']} holds GPUs {a['gpus']} of {node}, which has {sorted(present)}")


def admit_one(cluster, hold: threading.Event | None = None, written=None, started=None) -> dict:
    """alice asks for one GPU in the group "race", in her own ledger
    transaction (set ``written`` once decided, then kept open until ``hold``
    is set; ``started``: set as it begins)."""
    principal = cluster.world.principal("alice")
    body = cluster.body("ml", "race", slots={"gpu": 1})
    if started is not None:
        started.set()
    with db.ledger_transaction(cluster.world.session_factory) as s:
        model = ledger.submit(s, principal, body, T0, BestFit())
        if written is not None:
            written.set()
        if hold is not None:
            assert hold.wait(TIMEOUT)
    return model


def remove_gpus(cluster, hold: threading.Event | None = None, written=None, started=None) -> dict:
    """root takes every GPU out of node "solo" as the API does (a plain
    transaction: the verb itself must take the ledger lock); ``hold``,
    ``written`` and ``started`` as for ``admit_one``."""
    root = cluster.world.principal("root")
    if started is not None:
        started.set()
    with db.transaction(cluster.world.session_factory) as s:
        model = inventory.update_node(s, root, "solo", NodeUpdate(devices=[]))
        if written is not None:
            written.set()
        if hold is not None:
            assert hold.wait(TIMEOUT)
    return model


@pytest.fixture
def solo(cluster):
    cluster.add_group("race", {"solo": ("A100", "A100")})
    return cluster


def test_a_device_removal_waits_for_an_admission_in_flight(solo):
    hold, written, started = threading.Event(), threading.Event(), threading.Event()
    with ThreadPoolExecutor(2) as pool:
        admission = pool.submit(admit_one, solo, hold, written)
        assert written.wait(TIMEOUT)  # decided and written, not committed
        removal = pool.submit(remove_gpus, solo, None, None, started)
        try:
            second_is_done_or_waiting(solo.world, removal, started)
        finally:
            hold.set()
        admitted = admission.result(TIMEOUT)
        with pytest.raises(Conflict, match="running sessions"):
            removal.result(TIMEOUT)
    assert admitted["state"] == "allocated" and len(admitted["gpus"]) == 1
    assert devices_of(solo.world, "solo") == {0, 1}
    assert_nothing_on_removed_devices(solo, "solo")


def test_an_admission_waits_for_a_device_removal_in_flight(solo):
    hold, written, started = threading.Event(), threading.Event(), threading.Event()
    with ThreadPoolExecutor(2) as pool:
        removal = pool.submit(remove_gpus, solo, hold, written)
        assert written.wait(TIMEOUT)  # the devices are gone in its transaction, not committed
        admission = pool.submit(admit_one, solo, None, None, started)
        try:
            second_is_done_or_waiting(solo.world, admission, started)
        finally:
            hold.set()
        removal.result(TIMEOUT)
        # decided after the removal: no node has a GPU any more
        with pytest.raises(Invalid, match="largest node 0"):
            admission.result(TIMEOUT)
    assert devices_of(solo.world, "solo") == set()
    assert solo.allocations() == []


def holds_the_ledger_lock(s) -> bool:
    """Whether ``s``'s own transaction holds the ledger lock (PostgreSQL)."""
    return bool(s.scalar(sa.text(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND pid = pg_backend_pid() AND objid = :key"), {"key": db.LEDGER_LOCK_KEY}))


def capacity_writes(root):
    """Each verb that changes what admission reads, as (name, call(s))."""
    from quota_service.core import schemas
    from quota_service.tenancy import accounts, policies

    return [
        ("create_group", lambda s: inventory.create_group(
            s, root, schemas.ResourceGroupCreate(name="other"))),
        ("update_group", lambda s: inventory.update_group(
            s, root, "race", schemas.ResourceGroupUpdate(active=False))),
        ("grant", lambda s: inventory.grant(s, root, "race", schemas.Grant(domain="globex"))),
        ("revoke", lambda s: inventory.revoke(s, root, "race", schemas.Grant(domain="acme"))),
        ("create_node", lambda s: inventory.create_node(s, root, schemas.NodeCreate(
            name="more", resource_group="race", capacity={"cpu": "1", "mem": "1G"}))),
        ("drain", lambda s: inventory.update_node(
            s, root, "solo", NodeUpdate(schedulable=False))),
        ("delete_node", lambda s: inventory.delete_node(s, root, "solo")),
        ("create_policy", lambda s: policies.create_policy(
            s, root, schemas.ResourcePolicyCreate(name="tight"))),
        ("update_policy", lambda s: policies.update_policy(
            s, root, "default", schemas.ResourcePolicyUpdate(max_concurrent_sessions=1))),
        ("update_project", lambda s: accounts.update_project(
            s, root, "acme", "ml", schemas.ProjectUpdate(max_concurrent_sessions=1))),
        ("update_domain", lambda s: accounts.update_domain(
            s, root, "acme", schemas.DomainUpdate(total_resource_slots={"gpu": "1"}))),
        ("update_user", lambda s: accounts.update_user(
            s, root, "alice", schemas.UserUpdate(resource_policy="default"))),
    ]


# PostgreSQL only (SQLite: every write transaction holds the write lock from BEGIN)
@pytest.mark.parametrize("db_url", [pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
@pytest.mark.parametrize("verb", [name for name, _ in capacity_writes(None)])
def test_every_capacity_write_holds_the_ledger_lock(solo, verb):
    assert solo.world.session_factory().bind.dialect.name == "postgresql"
    call = dict(capacity_writes(solo.world.principal("root")))[verb]
    with db.transaction(solo.world.session_factory) as s:
        assert not holds_the_ledger_lock(s)
        call(s)
        assert holds_the_ledger_lock(s)
