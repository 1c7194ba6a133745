"""A node read again after one of its sessions ended (groupview.refresh_node,
which the ledger's kept view uses instead of building the whole group's
cluster again) is exactly what building the cluster anew makes of it: over
random groups and sessions, shrunk nodes (more running than they hold) included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from quota_service.scheduling import groupview
from quota_service.scheduling.batchmemo import Running, RunningRows
from quota_service.scheduling.groupcache import DeviceRow, GroupRow, NodeRow


def group(shapes) -> GroupRow:
    nodes = tuple(NodeRow(
        id=10 + i, name=f"n{i}", capacity={"cpu": str(cpu), "mem": str(mem)}, schedulable=True,
        backend_url="", share_check="", shares_unenforced=False, sharing_mode="",
        devices=tuple(DeviceRow(index=d + 2, model="A100", memory=0, uuid="")
                      for d in range(gpus)))
        for i, (cpu, mem, gpus) in enumerate(shapes))
    return GroupRow(id=1, name="g", active=True, session_types=(), queue_order="fifo",
                    hol_passes=0, pending_timeout=None, nodes=nodes, grants=())


SHAPES = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 64), st.integers(0, 3)),
                  min_size=1, max_size=4)


@st.composite
def worlds(draw):
    shapes = draw(SHAPES)
    rg = group(shapes)
    running = []
    left = {(n.id, d.index): 4 for n in rg.nodes for d in n.devices}  # quarters of a GPU
    for k in range(draw(st.integers(1, 8))):
        node = draw(st.sampled_from(rg.nodes))
        gpus = []
        if node.devices and draw(st.booleans()):
            # a GPU is never given beyond itself (devices cannot change under sessions)
            device = draw(st.sampled_from(node.devices))
            quarters = draw(st.sampled_from([1, 2, 4]))
            if left[node.id, device.index] >= quarters:
                left[node.id, device.index] -= quarters
                gpus = [{"index": device.index, "share": {1: "0.25", 2: "0.5", 4: "1"}[quarters]}]
        # more than a node holds, sometimes: a node shrunk under its sessions
        running.append(Running(f"a{k}", node.id, {"cpu": str(draw(st.integers(0, 5))),
                                                  "mem": str(draw(st.integers(0, 40)))}, gpus, 1))
    return rg, running, draw(st.integers(0, len(running) - 1))


@settings(max_examples=200, deadline=None)
@given(worlds())
def test_a_node_read_again_is_what_a_new_cluster_makes_of_it(world):
    rg, running, gone = world
    cluster = groupview.cluster_state(rg, running)
    ended = running[gone]
    rest = running[:gone] + running[gone + 1:]
    kept = RunningRows(running)  # as a batch keeps them
    kept.remove(ended.id)
    assert list(kept) == rest and len(kept) == len(rest)
    before = cluster.mark
    groupview.refresh_node(cluster, rg, ended.node_id, kept.on_node(ended.node_id))
    assert cluster.nodes() == groupview.cluster_state(rg, rest).nodes()
    # the strategies' caches hear of it (the change log names the node)
    name = next(n.name for n in rg.nodes if n.id == ended.node_id)
    assert cluster.changed_since(before) == {cluster.index[name]}


def test_a_node_no_longer_in_the_group_changes_nothing():
    rg = group([(4, 16, 1)])
    running = [Running("a", 10, {"cpu": "1", "mem": "1"}, [], 1)]
    cluster = groupview.cluster_state(rg, running)
    groupview.refresh_node(cluster, rg, 99, [])
    assert cluster.nodes() == groupview.cluster_state(rg, running).nodes()
