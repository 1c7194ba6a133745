"""The placement core as rules: feasibility, strategy choices, state bookkeeping."""

from __future__ import annotations

import pytest

from quota_service.scheduling.placement import (
    BestFit,
    ClusterState,
    Decision,
    FirstFit,
    Hubgrid,
    Node,
    PlacementError,
    Request,
    WorkloadProfile,
    fits,
    fragmentation,
    place,
)

GB = 1024


def gpu_node(name="n", cpu=32000, mem=128 * GB, gpus=(1000, 1000), model="A100", **kw) -> Node:
    used_cpu, used_mem = kw.pop("used_cpu", 0), kw.pop("used_mem", 0)
    return Node(name, cpu, mem, cpu - used_cpu, mem - used_mem, model, tuple(gpus), **kw)


def share(milli, cpu=1000, mem=GB, models=()) -> Request:
    return Request(cpu, mem, 1, milli, frozenset(models))


def whole(n, cpu=1000, mem=GB, models=()) -> Request:
    return Request(cpu, mem, n, models=frozenset(models))


CPU_ONLY = Request(cpu=4000, mem=8 * GB)


# ---------------------------------------------------------------- requests


def test_whole_gpus_default_to_1000_milli_each():
    assert Request(1000, GB, num_gpu=2).gpu_milli == 1000
    assert Request(1000, GB, num_gpu=2).gpu_demand == 2000


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param(dict(num_gpu=2, gpu_milli=500), id="a share is of one GPU only"),
        pytest.param(dict(num_gpu=1, gpu_milli=1500), id="milli is per GPU, at most 1000"),
        pytest.param(dict(num_gpu=0, gpu_milli=300), id="milli without a GPU"),
        pytest.param(dict(num_gpu=-1), id="negative GPUs"),
    ],
)
def test_request_refuses_mixed_or_impossible_gpu_asks(kwargs):
    with pytest.raises(ValueError):
        Request(1000, GB, **kwargs)


def test_one_gpu_of_1000_milli_is_a_whole_gpu_not_a_share():
    assert not Request(1000, GB, 1, 1000).is_share
    assert Request(1000, GB, 1, 999).is_share


# ---------------------------------------------------------------- feasibility

FEASIBILITY = [
    ("cpu beyond the free cpu does not fit", CPU_ONLY, gpu_node(used_cpu=28001), False),
    ("cpu exactly the free cpu fits", CPU_ONLY, gpu_node(used_cpu=28000), True),
    ("memory beyond the free memory does not fit", CPU_ONLY, gpu_node(used_mem=121 * GB), False),
    ("a CPU-only request fits a node without GPUs", CPU_ONLY, Node.empty("c", 8000, 16 * GB), True),
    ("a GPU request never fits a node without GPUs", share(100), Node.empty("c", 8000, 16 * GB), False),
    ("an allowed model fits", share(100, models={"A100", "T4"}), gpu_node(), True),
    ("a model outside the allowed set does not fit", share(100, models={"T4"}), gpu_node(), False),
    ("an empty model set allows any model", share(100), gpu_node(model="weird"), True),
    ("a share needs one GPU with enough free", share(700), gpu_node(gpus=(600, 600)), False),
    ("a share fits the GPU with room", share(700), gpu_node(gpus=(300, 800)), True),
    ("a whole GPU needs a completely free GPU", whole(1), gpu_node(gpus=(999, 999)), False),
    ("whole GPUs come from one node", whole(3), gpu_node(gpus=(1000, 1000, 500)), False),
    ("k whole GPUs fit k free GPUs of a node", whole(2), gpu_node(gpus=(1000, 200, 1000)), True),
    ("an unschedulable node takes nothing", CPU_ONLY, gpu_node(schedulable=False), False),
]


@pytest.mark.parametrize(
    "request_, node, expected", [case[1:] for case in FEASIBILITY], ids=[c[0] for c in FEASIBILITY]
)
def test_feasibility(request_, node, expected):
    assert fits(request_, node) is expected
    state = ClusterState([node])
    assert state.fits(0, request_) is expected
    for strategy in (FirstFit(), BestFit(), Hubgrid()):
        decision = place(state, request_, strategy)
        assert (decision is not None) is expected, strategy.name


def test_multi_gpu_request_does_not_combine_gpus_of_two_nodes():
    state = ClusterState([gpu_node("a", gpus=(1000, 0)), gpu_node("b", gpus=(1000, 0))])
    assert place(state, whole(2), Hubgrid()) is None


# ---------------------------------------------------------------- strategy choices


def test_first_fit_takes_the_first_node_in_rank_order_and_lowest_gpus():
    state = ClusterState([
        gpu_node("late", rank=2),
        gpu_node("full", gpus=(0, 0), rank=0),
        gpu_node("early", gpus=(400, 1000, 1000), rank=1),
    ])
    assert place(state, whole(2), FirstFit()) == Decision("early", ((1, 1000), (2, 1000)))
    assert place(state, share(300), FirstFit()) == Decision("early", ((0, 300),))


def test_best_fit_takes_the_node_with_the_least_weighted_leftover():
    state = ClusterState([
        gpu_node("roomy", cpu=128000, gpus=(1000,) * 8, rank=0),
        gpu_node("snug", cpu=16000, gpus=(1000, 1000), rank=1),
    ])
    assert place(state, whole(1), BestFit()).node == "snug"


def test_best_fit_puts_a_share_on_the_tightest_gpu():
    state = ClusterState([gpu_node(gpus=(1000, 350, 500, 300))])
    assert place(state, share(300), BestFit()) == Decision("n", ((3, 300),))
    assert place(state, share(320), BestFit()) == Decision("n", ((1, 320),))


def test_best_fit_scores_exactly_as_the_simulator():
    # s = 0.5·(32000−8000)/128000 + 0.5·(2000−1000)/8000 = 0.15625 -> int(84.375) = 84
    state = ClusterState([gpu_node()])
    assert BestFit().evaluate(state, 0, whole(1, cpu=8000))[0] == 84


def test_hubgrid_shares_a_used_gpu_to_keep_a_whole_gpu_free():
    profile = WorkloadProfile.from_requests([whole(1)] * 6 + [share(500)] * 4)
    state = ClusterState([
        gpu_node("fresh", gpus=(1000,), rank=0),
        gpu_node("used", gpus=(600,), rank=1),
    ])
    assert place(state, share(500), FirstFit()).node == "fresh"
    decision = place(state, share(500), Hubgrid(profile))
    assert decision == Decision("used", ((0, 500),))
    state.apply(share(500), decision)
    assert place(state, whole(1), Hubgrid(profile)).node == "fresh"


def test_hubgrid_keeps_an_empty_node_for_multi_gpu_requests():
    profile = WorkloadProfile.from_requests([whole(4)] * 3 + [whole(1)] * 7)
    state = ClusterState([
        gpu_node("empty", gpus=(1000,) * 4, rank=0),
        gpu_node("started", gpus=(0, 1000, 1000, 1000), rank=1),
    ])
    assert place(state, whole(1), Hubgrid(profile)).node == "started"


def test_hubgrid_sends_cpu_only_work_away_from_cpu_starved_gpus():
    profile = WorkloadProfile.from_requests([whole(1, cpu=8000)] * 9 + [CPU_ONLY])
    state = ClusterState([
        gpu_node("gpu-heavy", cpu=16000, gpus=(1000, 1000), rank=0),
        gpu_node("cpu-heavy", cpu=128000, gpus=(1000, 1000), rank=1),
    ])
    assert place(state, CPU_ONLY, Hubgrid(profile)).node == "cpu-heavy"


@pytest.mark.parametrize("strategy", [FirstFit(), BestFit(), Hubgrid()], ids=lambda s: s.name)
def test_ties_go_to_the_lowest_rank(strategy):
    state = ClusterState([gpu_node("c", rank=9), gpu_node("a", rank=5), gpu_node("b", rank=2)])
    assert place(state, share(250), strategy).node == "b"


def test_a_strategy_sees_every_change_of_the_state():
    state = ClusterState([gpu_node("a", gpus=(1000,), rank=0), gpu_node("b", gpus=(1000,), rank=1)])
    strategy = FirstFit()
    first = place(state, whole(1), strategy)
    state.apply(whole(1), first)
    assert place(state, whole(1), strategy).node == "b"
    state.release(whole(1), first)
    assert place(state, whole(1), strategy).node == "a"
    state.set_schedulable("a", False)
    assert place(state, whole(1), strategy).node == "b"


# ---------------------------------------------------------------- state bookkeeping


def test_release_restores_exactly_what_apply_took():
    state = ClusterState([gpu_node("a", gpus=(1000, 1000, 1000)), gpu_node("b")])
    before = state.nodes()
    taken = []
    for request in (share(300), whole(2), CPU_ONLY, share(650)):
        decision = place(state, request, Hubgrid())
        state.apply(request, decision)
        taken.append((request, decision))
    assert state.nodes() != before
    for request, decision in reversed(taken):
        state.release(request, decision)
    assert state.nodes() == before


@pytest.mark.parametrize(
    "request_, decision",
    [
        pytest.param(share(600), Decision("n", ((0, 600),)), id="GPU over 1000 milli"),
        pytest.param(whole(1), Decision("n", ((1, 1000),)), id="whole GPU not completely free"),
        pytest.param(whole(2), Decision("n", ((1, 1000), (1, 1000))), id="same GPU twice"),
        pytest.param(share(300), Decision("n", ((0, 200),)), id="milli differs from the request"),
        pytest.param(share(300), Decision("n", ()), id="GPU request without a GPU"),
        pytest.param(share(300), Decision("other", ((1, 300),)), id="unknown node"),
        pytest.param(Request(64000, GB), Decision("n"), id="cpu over capacity"),
    ],
)
def test_apply_refuses_a_decision_that_breaks_a_rule(request_, decision):
    state = ClusterState([gpu_node(gpus=(500, 900))])
    before = state.nodes()
    with pytest.raises(PlacementError):
        state.apply(request_, decision)
    assert state.nodes() == before


def test_release_refuses_to_free_more_than_the_capacity():
    state = ClusterState([gpu_node()])
    with pytest.raises(PlacementError):
        state.release(share(300), Decision("n", ((0, 300),)))


def test_candidates_are_the_nodes_of_an_allowed_model():
    state = ClusterState([
        gpu_node("a", model="T4"), gpu_node("b", model="A100"), Node.empty("c", 8000, GB),
    ])
    assert state.candidates(share(100, models={"A100"})) == [1]
    assert state.candidates(share(100)) == [0, 1]
    assert state.candidates(CPU_ONLY) == [0, 1, 2]


def test_allocated_gpu_milli_counts_what_is_taken():
    state = ClusterState([gpu_node(gpus=(1000, 1000))])
    state.apply(share(300), Decision("n", ((1, 300),)))
    assert state.allocated_gpu_milli() == 300


# ---------------------------------------------------------------- profile and fragmentation


def test_profile_keeps_the_most_frequent_kinds_up_to_the_coverage():
    requests = [whole(1)] * 6 + [share(500)] * 3 + [whole(8)]
    profile = WorkloadProfile.from_requests(requests, coverage=0.9)
    assert profile.typical == ((whole(1), 6 / 9), (share(500), 3 / 9))


def test_fragmentation_without_stranding_is_fgds_measure():
    typical = ((share(500), 0.5), (whole(1), 0.25), (CPU_ONLY, 0.25))
    # free 1000 + 300: the 500-share leaves 300 unusable; a whole GPU leaves 300; CPU-only all 1300
    assert fragmentation(typical, "A100", 32000, 128 * GB, (1000, 300)) == 0.5 * 300 + 0.25 * 300 + 0.25 * 1300


def test_fragmentation_counts_gpus_the_cpu_cannot_feed():
    typical = ((whole(1, cpu=8000), 1.0),)
    fed = fragmentation(typical, "A100", 16000, 128 * GB, (1000, 1000), stranding_weight=1.0)
    starved = fragmentation(typical, "A100", 8000, 128 * GB, (1000, 1000), stranding_weight=1.0)
    assert (fed, starved) == (0.0, 1000.0)
