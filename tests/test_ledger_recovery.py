"""Recovering from crashes in the ledger: abandoned requests are cancelled, not
admitted; the reconciler releases what no hub server holds, sparing what a
pending server or the grace still covers. On SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest

from quota_service.core import db
from quota_service.scheduling import ledger, queue as queueing
from quota_service.core.models import Allocation

GONE = "abandoned: nobody has waited for it for 14 s (pending_abandon_after is 10 s)"


@pytest.fixture
def solo(cluster):
    """One node with room for exactly one session of 1 cpu."""
    cluster.add_group("solo", {"solo-1": ()}, cpu="1")
    return cluster


def ask(cluster, user="alice", project="ml"):
    return cluster.submit(user, project, "solo", slots={"cpu": "1"})


def test_an_abandoned_request_is_cancelled_and_the_next_in_line_admitted(solo):
    running = ask(solo)
    gone, waited = ask(solo), ask(solo)
    solo.release("alice", running["id"])
    assert solo.schedule("solo", abandoned={gone["id"]: GONE}) == [waited["id"]]
    got = solo.get(gone["id"])
    assert (got["state"], got["release_reason"]) == ("cancelled", GONE)
    assert got["admitted_at"] is None and got["node"] is None


def test_abandoned_requests_behind_the_head_of_the_line_are_cancelled_too(solo):
    ask(solo)
    head, behind = ask(solo), ask(solo)
    assert solo.schedule("solo", abandoned={behind["id"]: GONE}) == []
    assert solo.states(head["id"], behind["id"]) == ["pending", "cancelled"]


def test_a_pass_result_names_what_it_cancelled_and_what_stays_pending(solo):
    running = ask(solo)
    gone, waited, last = ask(solo), ask(solo), ask(solo)
    solo.release("alice", running["id"])
    with db.ledger_transaction(solo.world.session_factory) as s:
        result = queueing.schedule(s, "solo", solo.now, solo.strategy, {gone["id"]: GONE})
    assert result.admitted == [waited["id"]]
    assert result.cancelled == [(gone["id"], "acme", GONE)]
    assert result.pending == 1 and solo.get(last["id"])["state"] == "pending"


def test_a_request_is_not_cancelled_by_an_unchanged_pass_and_keeps_its_reasons(solo):
    ask(solo)
    p = ask(solo)
    before = solo.get(p["id"])["reasons"]
    solo.schedule("solo")
    assert solo.get(p["id"])["reasons"] == before and solo.get(p["id"])["state"] == "pending"


# ---------------------------------------------------------------- reconcile

def hub_alloc(cluster, server="", user="alice") -> str:
    a = cluster.submit(user, "ml", "solo", slots={"cpu": "0.25"})
    with db.ledger_transaction(cluster.world.session_factory) as s:
        row = s.get(Allocation, a["id"])
        row.origin, row.server_name = "hub", server
    return a["id"]


def reconcile(cluster, held=(), as_of=None, grace=5, pending=()):
    as_of = as_of or cluster.now
    with db.ledger_transaction(cluster.world.session_factory) as s:
        return ledger.reconcile(s, frozenset(held), as_of, grace, as_of, frozenset(pending))


def test_what_no_server_holds_is_released_once_past_the_grace_with_its_age(solo):
    orphan = hub_alloc(solo)
    done = reconcile(solo, as_of=solo.now + dt.timedelta(seconds=7))
    assert done.released == [orphan] and done.recheck_at is None
    got = solo.get(orphan)
    assert got["state"] == "released" and got["release_reason"] == \
        "no hub server holds it (reconciled 7 s after it was made)"


def test_a_young_allocation_is_spared_and_a_recheck_set_for_when_its_grace_ends(solo):
    young = hub_alloc(solo)
    made = solo.now
    done = reconcile(solo, as_of=made + dt.timedelta(seconds=2))
    assert done.released == [] and done.recheck_at == made + dt.timedelta(seconds=5)
    assert reconcile(solo, as_of=made + dt.timedelta(seconds=6)).released == [young]


def test_a_held_allocation_stays_and_needs_no_recheck(solo):
    held = hub_alloc(solo)
    done = reconcile(solo, held=[held], as_of=solo.now + dt.timedelta(seconds=1))
    assert done.released == [] and done.recheck_at is None
    assert solo.get(held)["state"] == "allocated"


def test_a_server_the_hub_lists_as_pending_holds_the_allocations_of_its_name(solo):
    mine = hub_alloc(solo, server="gpu")
    other = hub_alloc(solo, server="cpu")
    later = solo.now + dt.timedelta(seconds=60)
    done = reconcile(solo, as_of=later, pending=[("alice", "gpu")])
    assert done.released == [other]
    assert solo.get(mine)["state"] == "allocated"
    assert done.recheck_at == later + dt.timedelta(seconds=5)


def test_pending_orphans_are_cancelled_not_released(solo):
    ask(solo)
    orphan = hub_alloc(solo)  # waits: the node is full
    assert solo.get(orphan)["state"] == "pending"
    assert reconcile(solo, as_of=solo.now + dt.timedelta(seconds=6)).released == [orphan]
    assert solo.get(orphan)["state"] == "cancelled"


def test_allocations_of_api_clients_are_never_reconciled(solo):
    api = ask(solo)
    assert reconcile(solo, as_of=solo.now + dt.timedelta(hours=1)).released == []
    assert solo.get(api["id"])["state"] == "allocated"


# ---------------------------------------------------------------- passes that change nothing

def run(cluster, memo, generation):
    with db.ledger_transaction(cluster.world.session_factory) as s:
        return queueing.schedule(s, "solo", cluster.now, cluster.strategy, memo=memo,
                                 generation=generation)


@pytest.fixture
def judged(monkeypatch):
    """The ids the passes judged, in order."""
    seen = []
    real = queueing.judge

    def spy(s, view, rg, a, now, strategy):
        seen.append(a.id)
        return real(s, view, rg, a, now, strategy)

    monkeypatch.setattr(queueing, "judge", spy)
    return seen


def test_an_unchanged_world_is_not_judged_again_but_its_passes_still_count(cluster, judged):
    cluster.add_group("solo", {"solo-1": ()}, cpu="4", hol_passes=2)
    cluster.submit("alice", "ml", "solo", slots={"cpu": "3"})
    big = cluster.submit("alice", "ml", "solo", slots={"cpu": "4"})  # waits for capacity
    small = cluster.submit("alice", "ml", "solo", slots={"cpu": "1"})  # fits, but behind it
    memo = queueing.Memo()
    outcomes = [run(cluster, memo, generation=7).admitted for _ in range(3)]
    # big held the head for hol_passes passes, judged once; then small went ahead
    assert outcomes == [[], [], [small["id"]]]
    assert judged == [big["id"], small["id"]]
    assert cluster.get(big["id"])["state"] == "pending"


def test_the_same_passes_without_a_memo_decide_the_same(cluster, judged):
    cluster.add_group("solo", {"solo-1": ()}, cpu="4", hol_passes=2)
    cluster.submit("alice", "ml", "solo", slots={"cpu": "3"})
    big = cluster.submit("alice", "ml", "solo", slots={"cpu": "4"})
    small = cluster.submit("alice", "ml", "solo", slots={"cpu": "1"})
    assert [cluster.schedule("solo") for _ in range(3)] == [[], [], [small["id"]]]
    assert judged == [big["id"], big["id"], big["id"], small["id"]]


def test_a_new_generation_judges_everyone_again(solo, judged):
    ask(solo)
    first, second = ask(solo), ask(solo)
    memo = queueing.Memo()
    run(solo, memo, generation=1)
    run(solo, memo, generation=2)
    run(solo, memo, generation=None)  # no generation known: judge
    assert judged == [first["id"]] * 3
