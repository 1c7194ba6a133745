"""What a resource group offers, as admission and placement read it.

``group_view`` is the group for admission (``admission.Group``: every node's
capacity, the largest; admission reads no sum of what runs, the group's
capacity being placement's to judge), ``cluster_state`` the nodes with what
runs subtracted, for placement. What the nodes offer whatever runs is
derived once per cached group (``groupcache.GroupRow.memo``); only what runs
is counted per decision.
"""

from __future__ import annotations

from decimal import Decimal

from . import admission
from ..core import slots as slotlib
from ..core.models import Allocation
from .placement import GPU_MILLI, ClusterState
from .placement import Node as PNode

ZERO = Decimal(0)
THOUSAND = Decimal(1000)


def node_capacity(n) -> dict[str, Decimal]:
    """A node's capacity (a ``groupcache.NodeRow`` or a Node): its slots, and
    ``gpu``: how many devices it has."""
    cap = slotlib.from_text(n.capacity)
    if n.devices:
        cap["gpu"] = Decimal(len(n.devices))
    return cap


def _static_view(rg) -> tuple:
    """(largest node, capacity, node capacities, node GPU models) of ``rg``:
    what its nodes offer, whatever runs; kept on a cached group's memo."""
    memo = getattr(rg, "memo", None)
    if memo is not None and "view" in memo:
        return memo["view"]
    largest: dict[str, Decimal] = {}
    capacity: dict[str, Decimal] = {}
    nodes, models = [], []
    for n in rg.nodes:
        cap = node_capacity(n)
        # a drained node still counts for "could this ever fit": it comes back
        nodes.append(cap)
        models.append(frozenset(d.model for d in n.devices))
        for k, v in cap.items():
            largest[k] = max(largest.get(k, ZERO), v)
        if n.schedulable:
            capacity = slotlib.add(capacity, cap)
    view = (largest, capacity, tuple(nodes), tuple(models))
    if memo is not None:
        memo["view"] = view
    return view


def group_view(rg, accessible: bool) -> admission.Group:
    largest, capacity, nodes, models = _static_view(rg)
    return admission.Group(
        name=rg.name,
        accessible=accessible,
        session_types=frozenset(rg.session_types),
        largest_node=largest,
        capacity=capacity,
        nodes=nodes,
        node_models=models,
    )


def _static_nodes(rg) -> list[tuple]:
    """Per node of ``rg`` by name: (node, rank, cpu, mem, position of each
    device index, models); kept on a cached group's memo."""
    memo = getattr(rg, "memo", None)
    if memo is not None and "nodes" in memo:
        return memo["nodes"]
    out = []
    for rank, n in enumerate(sorted(rg.nodes, key=lambda n: n.name)):
        cap = slotlib.from_text(n.capacity)
        out.append((n, rank, int(cap.get("cpu", ZERO) * THOUSAND), int(cap.get("mem", ZERO)),
                    {d.index: i for i, d in enumerate(n.devices)},
                    {d.model for d in n.devices}))
    if memo is not None:
        memo["nodes"] = out
    return out


def _free(n, cpu: int, mem: int, position: dict, running) -> tuple[int, int, tuple]:
    """What node ``n`` (capacity ``cpu`` milli-cores, ``mem`` bytes) has free
    with the ``running`` sessions on it subtracted: (cpu, mem, GPU milli)."""
    gpu_free = [GPU_MILLI] * len(n.devices)
    cpu_free, mem_free = cpu, mem
    for a in running:
        amounts = slotlib.from_text(a.slots)
        cpu_free -= int(amounts.get("cpu", ZERO) * THOUSAND)
        mem_free -= int(amounts.get("mem", ZERO))
        for g in a.gpus:
            gpu_free[position[g["index"]]] -= int(Decimal(g["share"]) * THOUSAND)
    # a node shrunk below what runs on it has nothing free (not less)
    return max(cpu_free, 0), max(mem_free, 0), tuple(gpu_free)


def cluster_state(rg, running: list[Allocation]) -> ClusterState:
    """The group's nodes with what the allocated sessions hold subtracted."""
    by_node: dict[int, list[Allocation]] = {}
    for a in running:
        if a.node_id is not None:
            by_node.setdefault(a.node_id, []).append(a)
    nodes = []
    for n, rank, cpu, mem, position, models in _static_nodes(rg):
        cpu_free, mem_free, gpu_free = _free(n, cpu, mem, position, by_node.get(n.id, ()))
        nodes.append(PNode(
            name=n.name, cpu_capacity=cpu, mem_capacity=mem, cpu_free=cpu_free,
            mem_free=mem_free, gpu_model=min(models) if models else "",
            gpu_free=gpu_free, schedulable=n.schedulable, rank=rank,
            takes_shares=not n.share_check or n.shares_unenforced,
        ))
    return ClusterState(nodes)


def refresh_node(cluster: ClusterState, rg, node_id: int, running: list) -> None:
    """Node ``node_id`` of ``cluster`` (made by ``cluster_state`` from
    ``rg``) read again from the sessions ``running`` on it, e.g. after one
    of them ended: exactly what ``cluster_state`` would make of it now."""
    memo = getattr(rg, "memo", None)
    by_id = memo.get("nodes_by_id") if memo is not None else None
    if by_id is None:
        by_id = {entry[0].id: entry for entry in _static_nodes(rg)}
        if memo is not None:
            memo["nodes_by_id"] = by_id
    if node_id not in by_id:  # a node no longer in the group: not in its cluster either
        return
    n, _rank, cpu, mem, position, _models = by_id[node_id]
    cluster.set_free(n.name, *_free(n, cpu, mem, position, running))
