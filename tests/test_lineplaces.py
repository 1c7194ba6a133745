"""Queue places kept by change (scheduling/lineplaces.py): a place costs what
changed since the last one, and is always the place a whole reading gives."""

from __future__ import annotations

import datetime as dt
import random

from quota_service.scheduling import lineplaces, ordering
from quota_service.scheduling.lineplaces import Line, Lines, Row

T0 = dt.datetime(2031, 1, 1, tzinfo=dt.timezone.utc)


def row(i: int, state="pending", group="g", priority=0, at=None) -> Row:
    return Row(f"r{i:04d}", group, state, at or T0 + dt.timedelta(seconds=i), priority, "capacity")


class Db:
    """The rows a service would read, and how often it read them."""

    def __init__(self, policy="fifo"):
        self.policy = policy
        self.rows: dict[str, Row] = {}
        self.whole = self.single = 0

    def put(self, r: Row) -> None:
        self.rows[r.id] = r

    def ordered(self, group="g") -> list[str]:
        pending = [r for r in self.rows.values() if r.state == "pending" and r.group == group]
        waiting = [ordering.Waiting(r.id, r.order_at, r.priority, 0) for r in pending]
        return [w.id for w in ordering.order(self.policy, waiting)]

    async def read_line(self, group):
        self.whole += 1
        by_id = self.rows
        return self.policy, [by_id[i] for i in self.ordered(group)]

    async def read_rows(self, ids):
        self.single += len(ids)
        return [self.rows[i] for i in ids if i in self.rows]


async def test_a_burst_of_new_requests_reads_each_new_one_not_the_line():
    db, lines = Db(), Lines()
    for i in range(1000):
        db.put(row(i))
    first = await lines.place("g", "r0000", db.read_line, db.read_rows)
    assert first == {"resource_group": "g", "position": 1, "pending": 1000,
                     "waits_for": "capacity"}
    assert db.whole == 1
    for i in range(1000, 1400):  # 400 join at once, each asking its place
        db.put(row(i))
        lines.changed([f"r{i:04d}"])
        place = await lines.place("g", f"r{i:04d}", db.read_line, db.read_rows)
        assert place["position"] == i + 1 and place["pending"] == i + 1
    assert db.whole == 1 and db.single == 400  # each new row read once, the line never again


async def test_places_follow_leaving_moving_and_reprioritising_as_a_whole_reading_does():
    rng = random.Random(7)
    for policy in ("fifo", "priority"):
        db, lines = Db(policy), Lines()
        for i in range(60):
            db.put(row(i, priority=rng.randint(0, 3)))
        await lines.place("g", "r0000", db.read_line, db.read_rows)
        for step in range(300):
            i = rng.randrange(80)
            kind = rng.choice(["join", "leave", "move", "priority", "other-group"])
            old = db.rows.get(f"r{i:04d}") or row(i)
            new = {"join": row(i, priority=old.priority),
                   "leave": Row(old.id, "g", "allocated", old.order_at, old.priority, None),
                   "move": Row(old.id, old.group, old.state,
                               T0 + dt.timedelta(seconds=rng.uniform(-10, 90)), old.priority,
                               old.waits_for),
                   "priority": Row(old.id, old.group, old.state, old.order_at,
                                   rng.randint(0, 3), old.waits_for),
                   "other-group": Row(old.id, "h", "pending", old.order_at, old.priority,
                                      old.waits_for)}[kind]
            db.put(new)
            lines.changed([new.id])
            expected = db.ordered()
            asked = rng.choice(expected) if expected else new.id
            place = await lines.place("g", asked, db.read_line, db.read_rows)
            if not expected:
                assert place is None
                continue
            assert place["position"] == expected.index(asked) + 1, (policy, step, kind)
            assert place["pending"] == len(expected)
        assert db.whole == 1, policy  # never read whole again


async def test_a_line_is_read_whole_again_after_its_age_and_under_drf():
    now = [0.0]
    db, lines = Db(), Lines(clock=lambda: now[0])
    db.put(row(1))
    await lines.place("g", "r0001", db.read_line, db.read_rows)
    db.put(row(2))
    lines.changed(["r0002"])
    now[0] = lineplaces.MAX_AGE + 1
    assert (await lines.place("g", "r0002", db.read_line, db.read_rows))["position"] == 2
    assert db.whole == 2
    drf = Db("drf")
    drf.put(row(1))
    lines = Lines()
    await lines.place("g", "r0001", drf.read_line, drf.read_rows)
    drf.put(row(2))
    lines.changed(["r0002"])  # any change may move a dominant share: the order is read again
    await lines.place("g", "r0002", drf.read_line, drf.read_rows)
    assert drf.whole == 2 and drf.single == 0


def test_a_line_keeps_only_its_groups_pending_requests():
    line = Line("g", "fifo", [row(1), row(2)])
    line.apply("r0001", row(1, state="allocated"))
    line.apply("r0003", row(3, group="h"))
    assert line.ids() == ["r0002"] and line.place("r0001") is None
    assert "r0003" not in line
