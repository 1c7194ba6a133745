"""Property: any sequence of placements and releases keeps every node within
its capacity, and releasing everything restores the state exactly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from quota_service.scheduling.placement import (
    GPU_MILLI,
    BestFit,
    ClusterState,
    FirstFit,
    Hubgrid,
    Node,
    Request,
    WorkloadProfile,
    place,
)

MODELS = ("A100", "T4")

nodes = st.lists(
    st.builds(
        lambda cpu, mem, gpus, model, rank: (cpu, mem, gpus, model, rank),
        st.integers(1000, 16000), st.integers(1024, 65536), st.integers(0, 4),
        st.sampled_from(MODELS), st.integers(0, 100),
    ),
    min_size=1, max_size=4,
).map(lambda specs: [Node.empty(f"n{i}", *spec[:4], rank=spec[4]) for i, spec in enumerate(specs)])

requests = st.one_of(
    st.builds(Request, st.integers(0, 8000), st.integers(0, 32768)),
    st.builds(
        lambda cpu, mem, milli, models: Request(cpu, mem, 1, milli, frozenset(models)),
        st.integers(0, 8000), st.integers(0, 32768), st.integers(1, 1000),
        st.sets(st.sampled_from(MODELS), max_size=1),
    ),
    st.builds(lambda cpu, mem, k: Request(cpu, mem, k), st.integers(0, 8000), st.integers(0, 32768), st.integers(2, 4)),
)

# an op places a request (True) or releases the placement at some position (False)
ops = st.lists(st.tuples(st.booleans(), requests, st.integers(0, 50)), max_size=40)


def check_invariants(state: ClusterState, placed) -> None:
    for i in range(len(state)):
        assert 0 <= state.cpu_free[i] <= state.cpu_capacity[i]
        assert 0 <= state.mem_free[i] <= state.mem_capacity[i]
        assert all(0 <= free <= GPU_MILLI for free in state.gpu_free[i])
    for i, name in enumerate(state.names):
        mine = [(r, d) for r, d in placed if d.node == name]
        assert state.cpu_capacity[i] - state.cpu_free[i] == sum(r.cpu for r, _ in mine)
        assert state.mem_capacity[i] - state.mem_free[i] == sum(r.mem for r, _ in mine)
        used = [GPU_MILLI - free for free in state.gpu_free[i]]
        for index in range(len(used)):
            assert used[index] == sum(m for _, d in mine for g, m in d.gpus if g == index)


@settings(max_examples=150, deadline=None)
@given(nodes, ops, st.sampled_from(["first-fit", "best-fit", "hubgrid"]))
def test_place_and_release_never_exceed_capacity_and_release_restores(node_list, op_list, name):
    state = ClusterState(node_list)
    strategy = {
        "first-fit": FirstFit(),
        "best-fit": BestFit(),
        "hubgrid": Hubgrid(WorkloadProfile.from_requests([r for _, r, _ in op_list])),
    }[name]
    initial = state.nodes()
    placed = []
    for is_place, request, k in op_list:
        if is_place or not placed:
            decision = place(state, request, strategy)
            if decision is None:
                assert not any(state.fits(i, request) for i in range(len(state)))
                continue
            state.apply(request, decision)  # raises if the decision breaks a rule
            placed.append((request, decision))
        else:
            request, decision = placed.pop(k % len(placed))
            state.release(request, decision)
        check_invariants(state, placed)
    while placed:
        state.release(*placed.pop())
    assert state.nodes() == initial
