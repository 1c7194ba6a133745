"""A ledger batch's new allocations are inserted together, before anything
could read them (quota_service/core/heldrows.py): one INSERT for a batch's
admissions, a query in the middle of the batch sees every row made before
it, an end of a row still held inserts it first, and a row that cannot be
inserted fails its own write alone. On SQLite and PostgreSQL (the ``prop``
cluster of tests/test_ledger_property.py)."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from quota_service.core import heldrows, rowinsert
from quota_service.core.models import Allocation
from quota_service.scheduling import ending
from test_batch_carry import states, unlimited
from test_laterrows import Inserts
from test_ledger_batched import batched, group_commit, works
from test_ledger_property import prop  # noqa: F401 (the fixture)

SUBMITS = [("submit", "alice", {"cpu": "1"}, []), ("submit", "bob", {"cpu": "1"}, []),
           ("submit", "alice", {"cpu": "1"}, [])]


def allocations(cluster) -> int:
    with cluster.world.session_factory() as s:
        return s.scalar(sa.select(sa.func.count()).select_from(Allocation))


def test_a_batchs_admissions_are_one_insert(prop):  # noqa: F811
    unlimited(prop)
    inserts = Inserts(prop)
    try:
        out = batched(prop, works(prop, SUBMITS, []), 10, group_commit(prop))
    finally:
        inserts.stop()
    assert states(out) == ["allocated"] * 3
    assert inserts.by_table["allocations"] == 1
    assert allocations(prop) == 3


def test_a_query_in_the_middle_of_a_batch_sees_the_rows_made_before_it(prop):  # noqa: F811
    unlimited(prop)
    seen = []

    def count(s):
        seen.append(s.scalar(sa.select(sa.func.count()).select_from(Allocation)))
        return None

    [first, second, third] = works(prop, SUBMITS, [])
    out = batched(prop, [first, second, count, third], 10, group_commit(prop))
    assert [ok for ok, _ in out] == [True] * 4
    assert seen == [2]


def test_ending_a_row_still_held_inserts_it_first(prop):  # noqa: F811
    unlimited(prop)
    made: list[str] = []
    [submit] = works(prop, SUBMITS[:1], [])

    def start(s):
        value = submit(s)
        made.append(value["id"])
        assert heldrows.holds(s, Allocation.__table__, (value["id"],))
        return value

    def end(s):
        return ending.end(s, prop.principal("alice"), made[0], prop.now, "stopped")

    out = batched(prop, [start, end], 10, group_commit(prop))
    assert [ok for ok, _ in out] == [True, True]
    with prop.world.session_factory() as s:
        assert s.get(Allocation, made[0]).state == "released"


def test_a_row_that_cannot_be_inserted_fails_its_own_write_alone(prop):  # noqa: F811
    unlimited(prop)
    commit = group_commit(prop)
    [taken] = batched(prop, works(prop, SUBMITS[:1], []), 10, commit)
    [admit, other] = works(prop, SUBMITS[1:], [])

    def same_id(s):  # a primary key already there: found only when the rows go in
        with prop.world.session_factory() as other_session:
            a = other_session.get(Allocation, taken[1]["id"])
            other_session.expunge(a)
        sa.orm.make_transient(a)
        rowinsert.insert(s, a)
        return "held"

    out = batched(prop, [admit, same_id, other], 10, commit)
    assert commit.reruns == 1
    assert out[0][0] and out[2][0]
    assert not out[1][0] and isinstance(out[1][1], sa.exc.IntegrityError)
    assert allocations(prop) == 3


def test_outside_a_batch_a_row_is_inserted_at_once(prop):  # noqa: F811
    unlimited(prop)
    [submit] = works(prop, SUBMITS[:1], [])
    with prop.world.session_factory() as s:
        value = submit(s)
        assert not heldrows.holds(s, Allocation.__table__, (value["id"],))
        assert s.connection().execute(sa.select(sa.func.count()).select_from(
            Allocation.__table__)).scalar() == 1  # on the connection, before any COMMIT
        s.rollback()
    assert allocations(prop) == 0


def test_what_may_read_the_held_rows():
    from quota_service.core.models import Domain, LedgerCounter, User

    held = heldrows._Held()
    held.tables.add("allocations")
    users = sa.select(User.name).join(Domain, Domain.id == User.domain_id)
    assert not heldrows._may_read(users, held)  # other tables only
    assert heldrows._may_read(sa.select(sa.func.count()).select_from(Allocation), held)
    assert heldrows._may_read(sa.select(LedgerCounter.value), held)  # its triggers move them
    assert heldrows._may_read(sa.text("SELECT 1"), held)  # tables not told
    assert heldrows._may_read(users.where(User.id.in_(
        sa.select(Allocation.user_id).scalar_subquery())), held)
    assert heldrows._may_read(sa.update(Allocation).values(passes=1), held)


def test_a_batchs_ends_are_one_update_and_the_waiters_hear_of_each(prop):  # noqa: F811
    from quota_service.scheduling import waiters as waiting

    unlimited(prop)
    made = [value["id"] for _, value in batched(prop, works(prop, SUBMITS, []), 10)]
    heard = waiting.Waiters()
    heard.watch(prop.world.session_factory)
    updates: list[str] = []

    def seen(conn, cursor, statement, *args):
        if statement.lstrip().startswith("UPDATE allocations"):
            updates.append(statement)

    engine = prop.world.session_factory.kw["bind"]
    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        generation = heard.generation
        commit = group_commit(prop)

        async def all_at_once():  # as the API's ends come: each names its allocation
            return await asyncio.gather(*(commit.run(
                lambda s, i=i: ending.end(s, prop.principal("root"), i, prop.now, "stopped"),
                before=(ending.read, i)) for i in made))

        out = [(True, v) for v in asyncio.run(all_at_once())]
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert [ok for ok, _ in out] == [True] * 3
    assert len(updates) == 1
    assert heard.generation > generation  # running sessions ended: decisions may differ
    with prop.world.session_factory() as s:
        assert {s.get(Allocation, i).state for i in made} == {"released"}
