"""Does one replica of an endpoint fit the resource group's nodes
(``serving.fit.capacity``), with plain data: what no node could
ever hold is a problem, what lets replicas wait is a warning; every message
in exact decimal text."""

from __future__ import annotations

from decimal import Decimal

import pytest

from quota_service.serving import fit
from quota_service.serving.fit import NodeRoom

GiB = 2**30


def D(**slots) -> dict[str, Decimal]:
    return {k.replace("_", "."): Decimal(v) for k, v in slots.items()}


#: two nodes: a big one with 2 GPUs, a small one without
BIG = NodeRoom("big", D(cpu=8, mem=32 * GiB, gpu=2))
SMALL = NodeRoom("small", D(cpu=2, mem=4 * GiB))
NODES = (BIG, SMALL)


def fields(found: list[dict]) -> list[str]:
    return [f["field"] for f in found]


def test_a_replica_that_fits_a_node_with_room_for_all_is_neither_problem_nor_warning():
    assert fit.capacity("g", D(cpu=2, mem=GiB, gpu=1), 2, NODES) == ([], [])


def test_a_group_with_no_node_is_a_problem_of_the_group():
    assert fit.capacity("g", D(cpu=1), 1, ()) == ([{
        "field": "resource_group",
        "message": "resource group g has no nodes: no replica can run there"}], [])


def test_each_slot_beyond_every_node_is_a_problem_naming_the_largest_node():
    problems, warnings = fit.capacity("g", D(cpu="8.5", mem=40 * GiB, gpu=1), 1, NODES)
    assert problems == [
        {"field": "slots.cpu", "message": "one replica asks for cpu 8.5; the largest node "
         "of resource group g has 8"},
        {"field": "slots.mem", "message": "one replica asks for mem 40 GiB; the largest node "
         "of resource group g has 32 GiB"}]
    assert warnings == []


def test_a_share_needs_a_node_with_a_gpu():
    problems, _ = fit.capacity("g", D(cpu=1, gpu_shares="0.5"), 1, (SMALL,))
    assert problems == [{"field": "slots.gpu.shares", "message": "a GPU share needs a GPU: "
                         "no node of resource group g has one"}]
    assert fit.capacity("g", D(cpu=1, gpu_shares=1), 1, NODES) == ([], [])


def test_slots_each_on_some_node_but_on_no_node_together_are_a_problem():
    gpus_no_mem = NodeRoom("gpus", D(cpu=8, mem=GiB, gpu=4))
    mem_no_gpus = NodeRoom("mem", D(cpu=8, mem=64 * GiB))
    problems, _ = fit.capacity("g", D(mem=8 * GiB, gpu=1), 1, (gpus_no_mem, mem_no_gpus))
    assert problems == [{"field": "slots", "message": "no node of resource group g has "
                         "gpu 1, mem 8 GiB together"}]


def test_a_drained_node_counts_for_could_ever_fit_but_makes_replicas_wait():
    drained = NodeRoom("big", BIG.capacity, schedulable=False)
    problems, warnings = fit.capacity("g", D(cpu=4), 1, (drained, SMALL))
    assert problems == []
    assert warnings == [{"field": "resource_group", "message": "one replica fits only nodes "
                         "of resource group g that take no new sessions now (big): replicas "
                         "wait in the queue until one does"}]


def test_replicas_beyond_what_the_open_nodes_have_in_all_are_warned_per_slot():
    """The user trial: 50 replicas of 1 GPU on a cluster of 2 GPUs."""
    problems, warnings = fit.capacity("g", D(cpu="0.1", gpu=1), 50, NODES)
    assert problems == []
    assert warnings == [{"field": "slots.gpu", "message": "50 x 1 = 50: resource group g has "
                         "2 in all; the replicas that do not fit wait in the queue"}]


def test_a_drained_nodes_capacity_is_not_counted_in_all():
    drained = NodeRoom("small", SMALL.capacity, schedulable=False)
    _, warnings = fit.capacity("g", D(cpu=2), 5, (BIG, drained))
    assert fields(warnings) == ["slots.cpu"]
    assert "5 x 2 = 10: resource group g has 8 in all" in warnings[0]["message"]


def test_shares_count_per_device_when_the_totals_would_fit():
    """3 x 0.6 of a GPU is 1.8 of 2 GPUs in all, but only one 0.6 fits a GPU."""
    problems, warnings = fit.capacity("g", D(cpu=1, gpu_shares="0.6"), 3, NODES)
    assert problems == []
    assert warnings == [{"field": "replicas", "message": "at most 2 replicas of this size fit "
                         "the nodes of resource group g at once (with nothing else running); "
                         "the other 1 wait in the queue"}]
    assert fit.capacity("g", D(cpu=1, gpu_shares="0.5"), 4, NODES) == ([], [])


def test_replicas_that_fit_the_totals_but_not_the_nodes_one_by_one_are_warned():
    """3 CPUs each: 10 CPUs in all hold 3 by the totals, but the big node
    holds 2 and the small one none."""
    _, warnings = fit.capacity("g", D(cpu=3), 3, NODES)
    assert fields(warnings) == ["replicas"]
    assert warnings[0]["message"].startswith("at most 2 replicas of this size")


def test_no_replica_wanted_warns_of_nothing_but_a_replica_too_big_is_still_a_problem():
    assert fit.capacity("g", D(cpu=1), 0, NODES) == ([], [])
    assert fields(fit.capacity("g", D(cpu=9), 0, NODES)[0]) == ["slots.cpu"]


@pytest.mark.parametrize("slots, capacity, count", [
    (D(cpu=1), D(cpu=8), 8),
    (D(cpu="0.3"), D(cpu=1), 3),
    (D(cpu=1, mem=2 * GiB), D(cpu=8, mem=5 * GiB), 2),
    (D(gpu=1), D(cpu=8, gpu=3), 3),
    (D(gpu_shares="0.34"), D(gpu=2), 4),
    (D(gpu_shares="0.5"), D(cpu=1), 0),
    (D(cpu=1, other=1), D(cpu=8), 0),
])
def test_how_many_replicas_an_empty_node_holds_at_once(slots, capacity, count):
    assert fit.at_once(slots, capacity) == count
