"""What one batch of decisions read is kept for the next (scheduling.batchmemo.Carry)
only while the database says nobody else changed it: the allocations'
counter (migration 0021) moves with every change to what the view reads,
whoever makes it, and a group whose rows changed is read again. On SQLite
and PostgreSQL (the ``prop`` cluster of tests/test_ledger_property.py)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import Allocation
from quota_service.scheduling import ledger
from quota_service.scheduling import queue as queueing
from test_ledger_batched import batched, group_commit, works
from test_ledger_property import prop  # noqa: F401 (the fixture: NODES granted to acme)


def counter(cluster, name: str = "allocations") -> int:
    with cluster.world.session_factory() as s:
        return s.scalar(sa.text("SELECT value FROM ledger_counters WHERE name = :n"), {"n": name})


def counters(cluster) -> tuple[int, int]:
    return counter(cluster), counter(cluster, "allocation_line")


def run_sql(cluster, statement: str) -> None:
    """``statement`` in a transaction of its own, as another writer would."""
    with db.transaction(cluster.world.session_factory) as s:
        s.execute(sa.text(statement))


def unlimited(cluster, sessions=None, pending=None) -> None:
    cluster.set_policy("default", total_resource_slots={}, max_concurrent_sessions=sessions,
                       max_pending_sessions=pending)


def states(outcomes) -> list[str]:
    return [value["state"] if ok else type(value).__name__ for ok, value in outcomes]


def test_every_change_to_what_the_view_reads_moves_the_counter_and_nothing_else(prop):
    unlimited(prop)
    before = counters(prop)
    [(ok, a)] = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 1)
    assert ok and counter(prop) > before[0]  # a new allocation
    for statement, moves in (("UPDATE allocations SET passes = passes + 1", "line"),
                             ("UPDATE allocations SET reasons = '[]'", "line"),
                             ("UPDATE allocations SET state = 'released'", "held"),
                             ("UPDATE allocations SET node_id = NULL", "held"),
                             ("DELETE FROM allocations", "held")):
        if "DELETE" not in statement:  # (a row to change)
            [(ok, a)] = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 1)
        (held, line) = before = counters(prop)
        run_sql(prop, statement)
        after = counters(prop)
        # the line's own changes move its counter alone, the rest the allocations'
        assert (after[0] > held, after[1] > line) == (moves == "held", moves == "line"), statement
    batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 1)
    before = counters(prop)
    run_sql(prop, "UPDATE allocations SET server_name = 'renamed'")  # not read by the view
    assert counters(prop) == before


def test_a_change_to_the_line_alone_keeps_the_view_and_reads_the_line_again(prop):
    """bob's request waits for an A100 and holds the head of the line, so
    alice's fitting request queues behind it; then another writer (a queue
    pass) counts bob's passes up to the group's limit: the next batch keeps
    its view, but finds that nobody holds the line any more and admits."""
    unlimited(prop)
    commit = group_commit(prop)
    two_a100 = ("submit", "bob", {"cpu": "1", "gpu": "2"}, ["A100"])
    first = batched(prop, works(prop, [two_a100, two_a100,
                                       ("submit", "alice", {"cpu": "1"}, [])], []), 10, commit)
    assert states(first) == ["allocated", "pending", "pending"]  # alice: behind bob's
    run_sql(prop, "UPDATE allocations SET passes = 99 WHERE state = 'pending'")
    again = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 10, commit)
    assert (commit.view.carried, commit.view.line_read_again) == (1, 1)
    assert states(again) == ["allocated"]
    # and a batch after one that changed nothing of the line keeps the line too
    batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 10, commit)
    assert (commit.view.carried, commit.view.line_read_again) == (2, 1)


def test_a_batch_starts_from_the_last_ones_view_while_nobody_else_wrote(prop):
    unlimited(prop, sessions=1, pending=1)
    commit = group_commit(prop)
    first = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 10, commit)
    second = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, []),
                                        ("submit", "alice", {"cpu": "1"}, [])], []), 10, commit)
    assert commit.view.carried == 1  # the second batch read nothing again...
    # ...and counted the first one's session: alice waits, then is refused
    assert states(first) + states(second) == ["allocated", "pending", "Invalid"]


def test_another_writers_change_is_seen_by_the_next_batch(prop):
    """alice's session ended behind the service's back (plain SQL): the
    next batch must not judge from the view that still counts it."""
    unlimited(prop, sessions=1, pending=0)
    commit = group_commit(prop)
    assert states(batched(prop, works(prop, [("submit", "alice", {"cpu": "16"}, [])], []),
                          10, commit)) == ["allocated"]
    run_sql(prop, "UPDATE allocations SET state = 'released'")
    again = batched(prop, works(prop, [("submit", "alice", {"cpu": "16"}, [])], []), 10, commit)
    assert commit.view.carried == 0
    assert states(again) == ["allocated"]  # her limit and cpu-1's 16 cores free again


def test_a_group_changed_since_is_read_again(prop):
    """a100-1 drained between two batches (the groups changed, the
    allocations did not): the second batch keeps what the domains hold but
    judges the group's nodes as they are now."""
    unlimited(prop)
    commit = group_commit(prop)
    one_a100 = ("submit", "alice", {"cpu": "1", "gpu": "1"}, ["A100"])
    assert states(batched(prop, works(prop, [one_a100], []), 10, commit)) == ["allocated"]
    prop.set_node("a100-1", schedulable=False)
    again = batched(prop, works(prop, [("submit", "bob", {"cpu": "1", "gpu": "1"}, ["A100"])],
                                []), 10, commit)
    assert commit.view.carried == 1
    assert states(again) == ["pending"]  # not on the drained node's free A100


def test_a_failed_commit_keeps_nothing(prop, monkeypatch):
    """A batch whose COMMIT fails leaves no view: its writes are gone, and
    the next batch reads what the database holds."""
    unlimited(prop, sessions=1, pending=0)
    commit = group_commit(prop)
    real = commit.view.ending

    def ending_then_fail(s):
        real(s)
        s.execute(sa.text("SELECT no_such_column FROM allocations"))  # the batch fails

    monkeypatch.setattr(commit.view, "ending", ending_then_fail)
    [work] = works(prop, [("submit", "alice", {"cpu": "1"}, [])], [])
    with pytest.raises(sa.exc.DBAPIError, match="no_such_column"):
        asyncio.run(commit.run(work))
    monkeypatch.undo()
    with prop.world.session_factory() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Allocation)) == 0
    again = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 10, commit)
    assert commit.view.carried == 0 and states(again) == ["allocated"]


def test_the_ledger_answers_alike_with_and_without_the_view(prop):
    """The same request judged in a batch started from a kept view and in a
    transaction of its own."""
    unlimited(prop, sessions=2)
    commit = group_commit(prop)
    batched(prop, works(prop, [("submit", "bob", {"cpu": "2", "gpu": "1"}, ["T4"])], []), 10, commit)
    body = prop.body("web", "prop", slots={"cpu": "2", "gpu": "1"}, gpu_models=["T4"])
    with db.ledger_transaction(prop.world.session_factory) as s:
        alone = ledger.submit(s, prop.principal("ada"), body, prop.now, prop.strategy,
                              dry_run=True)
    [(ok, carried)] = batched(prop, [lambda s: ledger.submit(
        s, prop.principal("ada"), body, prop.now, prop.strategy, dry_run=True)], 10, commit)
    assert commit.view.carried == 1 and ok
    assert carried == alone and alone["verdict"] == "admit" and alone["node"] == "t4-1"


def test_a_refusal_leaves_the_batchs_view_as_it_was(prop):
    """A request refused (raised before it wrote anything) moved nothing of
    the view: the batch goes on with it, and answers as one transaction
    each would."""
    unlimited(prop, sessions=1, pending=0)
    commit = group_commit(prop)
    ask = [("submit", "alice", {"cpu": "1"}, []),  # allocated
           ("submit", "alice", {"cpu": "1"}, []),  # her one session: refused
           ("submit", "bob", {"cpu": "1"}, [])]    # allocated, judged on the same view
    assert states(batched(prop, works(prop, ask, []), 10, commit)) == [
        "allocated", "Invalid", "allocated"]
    assert commit.view.kept_on_failure == 1


def test_a_write_that_failed_after_moving_the_view_leaves_it_made_anew(prop):
    """alice's first request is admitted, then its work fails (rolled back to
    its savepoint): the view had counted her session, so it is made anew and
    her next request finds her limit free."""
    unlimited(prop, sessions=1, pending=0)
    commit = group_commit(prop)
    [admit, again] = works(prop, [("submit", "alice", {"cpu": "1"}, [])] * 2, [])

    def admit_then_fail(s):
        admit(s)
        raise RuntimeError("the work failed after its write")

    out = batched(prop, [admit_then_fail, again], 10, commit)
    assert [type(v).__name__ if not ok else v["state"] for ok, v in out] == [
        "RuntimeError", "allocated"]
    assert commit.view.kept_on_failure == 0


def test_a_queue_pass_starts_from_the_batches_view_and_leaves_it_current(prop):
    """alice may run one session: her second request (all of cpu-1) waits
    behind her first. Her first ends, and a queue pass through the same
    Carry (as the service runs it) admits the second onto cpu-1. The next
    batch starts from the view the pass left, without reading again, and
    must see both of the pass's changes: alice's one session is taken (her
    next request waits) and cpu-1 is full (bob's request for all of it waits)."""
    unlimited(prop, sessions=1, pending=2)
    commit = group_commit(prop)
    whole = ("submit", "alice", {"cpu": "16"}, [])
    first = batched(prop, works(prop, [whole, whole], []), 10, commit)
    assert states(first) == ["allocated", "pending"]
    ids = [value["id"] for _, value in first]
    batched(prop, works(prop, [("release", 0)], ids), 10, commit)
    carried = commit.view.carried
    [result] = queueing.schedule_all(prop.world.session_factory, prop.now, prop.strategy, None,
                                     60, logging.getLogger("t"), carry=commit.view)
    assert result.admitted == [ids[1]]
    assert commit.view.carried == carried + 1  # the pass started from the batches' view
    again = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, []),
                                       ("submit", "bob", {"cpu": "16"}, [])], []), 10, commit)
    assert commit.view.carried == carried + 2  # and the batch from the pass's
    assert states(again) == ["pending", "pending"]
    with prop.world.session_factory() as s:  # as a fresh reading judges them
        reasons = dict(s.execute(sa.select(Allocation.id, Allocation.reasons).where(
            Allocation.id.in_([value["id"] for _, value in again]))).all())
    assert [r["level"] for r in reasons[again[0][1]["id"]]] == ["user"]
    assert {r["level"] for r in reasons[again[1][1]["id"]]} == {"resource-group"}


def test_the_next_transaction_waits_until_the_last_one_kept_its_view(prop, monkeypatch):
    """The ledger lock is let go at the COMMIT, before the transaction keeps
    its view: a batch beginning in between found none kept and read
    everything again (on PostgreSQL, 35 times in 1,000 storm requests).
    It waits for its turn now, and starts from the view the pass kept."""
    unlimited(prop)
    commit = group_commit(prop)
    batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, [])], []), 10, commit)
    carried, real, in_between = commit.view.carried, commit.view.committed, threading.Event()

    def committed_slowly(kept):
        in_between.set()
        time.sleep(0.3)  # committed in the database, the view not kept yet
        real(kept)

    monkeypatch.setattr(commit.view, "committed", committed_slowly)
    queue_pass = threading.Thread(target=queueing.schedule_all, args=(
        prop.world.session_factory, prop.now, prop.strategy, None, 60,
        logging.getLogger("t")), kwargs={"carry": commit.view})
    queue_pass.start()
    assert in_between.wait(30)
    monkeypatch.undo()
    again = batched(prop, works(prop, [("submit", "bob", {"cpu": "1"}, [])], []), 10, commit)
    queue_pass.join()
    assert states(again) == ["allocated"]
    # the pass started from the first batch's view, the second batch from the pass's
    assert commit.view.carried == carried + 2


def test_a_batch_runs_without_savepoints_until_a_write_fails_after_writing(prop):
    """Refusals and missing allocations raise before writing: the batch goes
    on in its one transaction. A write that raises after writing, and a
    database error, make the batch run again with a savepoint each: theirs
    are rolled back alone, and the others' answers and rows stand."""
    unlimited(prop)
    commit = group_commit(prop)
    first = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, []), ("missing",),
                                       ("submit", "bob", {"cpu": "1"}, [])], []), 10, commit)
    assert states(first) == ["allocated", "NotFound", "allocated"]
    assert commit.reruns == 0
    [admit, other] = works(prop, [("submit", "alice", {"cpu": "1"}, []),
                                  ("submit", "bob", {"cpu": "1"}, [])], [])

    def admit_then_fail(s):
        admit(s)
        raise RuntimeError("the work failed after its write")

    def bad_sql(s):
        s.execute(sa.text("SELECT no_such_column FROM allocations"))

    out = batched(prop, [admit_then_fail, bad_sql, other], 10, commit)
    assert commit.reruns == 1
    assert isinstance(out[0][1], RuntimeError) and isinstance(out[1][1], sa.exc.DBAPIError)
    assert out[2][0] and out[2][1]["state"] == "allocated"
    with prop.world.session_factory() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Allocation)) == 3
    out = batched(prop, [bad_sql, other], 10, commit)  # a database error alone
    assert commit.reruns == 2 and out[1][0]
