"""The narrow interface every placement strategy implements, and its cache.

A strategy answers one question: given the cluster state and a request,
which node and which GPUs (a :class:`~.placement.Decision`), or None when no
node can take the request now. It never changes the state; the caller
applies the decision it commits.

Most strategies score each feasible node on its own (:class:`NodeScorer`):
the score of a node depends only on that node's state and the request. Such
scores are cached per request per node and recomputed only for nodes that
changed since (the state's change log), so a decision costs a few score
evaluations instead of one per node.

The fragmentation-gradient strategies (FGD and hubgrid's default) share
their loop too (:class:`FragmentationGradient`): each only says how it
measures the fragmentation of a node.
"""

from __future__ import annotations

import heapq
import math
from abc import ABC, abstractmethod
from typing import Callable, Protocol

from .placement import GPU_MILLI, Decision, Request, lowest_free_gpus
from .state import ClusterState

Gpus = tuple[tuple[int, int], ...]

Measure = Callable[[str, int, int, tuple[int, ...]], float]
"""The fragmentation of a node shape: ``(model, cpu_free, mem_free, sorted gpu_free)``."""

MAX_CACHED_REQUESTS = 512
"""Distinct requests whose node rankings a state keeps (oldest dropped first)."""


class Strategy(Protocol):
    """Chooses a node (and GPUs) for a request; None when nothing fits now."""

    name: str

    def choose(self, state: ClusterState, request: Request) -> Decision | None: ...


class _Ranking:
    """A lazy max-heap of (score, rank) per node, valid for one request."""

    __slots__ = ("heap", "mark", "size")

    def __init__(self, heap: list, mark: int, size: int) -> None:
        self.heap = heap
        self.mark = mark
        self.size = size


class NodeScorer(ABC):
    """A strategy whose preference is a per-node score: the highest wins,
    ties go to the lowest node rank.

    Subclasses implement :meth:`evaluate`. A score (and its GPUs) must depend
    only on the node's own state -- schedulable, free CPU, memory and GPUs
    (in order), model, whether it takes shares -- and the request, never on
    its rank or name: that is what makes caching exact, and what lets a scan
    of every node evaluate each such shape once.
    """

    name = "node-scorer"

    @abstractmethod
    def evaluate(self, state: ClusterState, i: int, request: Request) -> tuple[float, Gpus] | None:
        """``(score, gpus)`` for putting ``request`` on node ``i``, or None if it cannot go there."""

    def choose(self, state: ClusterState, request: Request) -> Decision | None:
        key = (self, request)
        ranking = state.caches.get(key)
        dirty = None if ranking is None else state.changed_since(ranking.mark)
        version, rank = state.version, state.rank
        if dirty is None:
            candidates = state.candidates(request)
            heap = []
            # nodes of one shape score alike (most of a large cluster's nodes
            # are idle ones of a few kinds): each shape is evaluated once
            shapes: dict[tuple, tuple[float, Gpus] | None] = {}
            for i in candidates:
                shape = (state.schedulable[i], state.cpu_free[i], state.mem_free[i],
                         state.model[i], tuple(state.gpu_free[i]), state.takes_shares[i])
                if shape in shapes:
                    found = shapes[shape]
                else:
                    found = shapes[shape] = self.evaluate(state, i, request)
                if found is not None:
                    heap.append((-found[0], rank[i], i, version[i], found[1]))
            heapq.heapify(heap)
            if ranking is None and len(state.caches) >= MAX_CACHED_REQUESTS:
                del state.caches[next(iter(state.caches))]  # the oldest
            ranking = state.caches[key] = _Ranking(heap, state.mark, len(candidates))
        elif dirty:
            heap = ranking.heap
            models = request.models
            needs_gpu = request.num_gpu > 0
            for i in dirty:
                if needs_gpu and (not state.gpu_free[i] or (models and state.model[i] not in models)):
                    continue
                found = self.evaluate(state, i, request)
                if found is not None:
                    heapq.heappush(heap, (-found[0], rank[i], i, version[i], found[1]))
            ranking.mark = state.mark
            if len(heap) > 4 * ranking.size + 64:
                # drop the entries of nodes that changed since they were scored
                heap[:] = [e for e in heap if version[e[2]] == e[3]]
                heapq.heapify(heap)
        heap = ranking.heap
        while heap and version[heap[0][2]] != heap[0][3]:
            heapq.heappop(heap)
        if not heap:
            return None
        _, _, i, _, gpus = heap[0]
        return Decision(state.names[i], gpus)


class FragmentationGradient(NodeScorer):
    """A request goes where it increases the node's fragmentation the least.

    For each node that fits, the fragmentation before and after placing the
    request is measured: whole GPUs are the lowest-indexed free ones; a
    share tries each GPU with room (one per distinct free amount, the lowest
    index) and keeps the one leaving the least fragmentation, the lowest
    index on ties. The score is ``int(100·sigmoid((before − after) / resolution))``,
    so near-equal choices fall to the node rank.

    Subclasses implement :meth:`measure`. The measure must not depend on
    the order of the free GPUs (it is given them sorted).
    """

    name = "fragmentation-gradient"
    resolution: float = GPU_MILLI
    """Milli-GPU of fragmentation change per unit of the sigmoid before bucketing."""

    @abstractmethod
    def measure(self, state: ClusterState, request: Request) -> Measure:
        """How to measure a node's fragmentation while deciding where ``request`` goes."""

    def evaluate(self, state: ClusterState, i: int, request: Request) -> tuple[float, Gpus] | None:
        if not state.fits(i, request):
            return None
        frag = self.measure(state, request)
        model, gpu_free = state.model[i], state.gpu_free[i]
        cpu, mem = state.cpu_free[i], state.mem_free[i]
        before = frag(model, cpu, mem, tuple(sorted(gpu_free)))
        cpu -= request.cpu
        mem -= request.mem
        if request.is_share:
            milli = request.gpu_milli
            best: tuple[float, Gpus] | None = None
            tried = set()
            for g, free in enumerate(gpu_free):
                if free < milli or free in tried:
                    continue
                tried.add(free)  # GPUs with equal free give equal shapes: keep the lowest index
                after = list(gpu_free)
                after[g] -= milli
                value = frag(model, cpu, mem, tuple(sorted(after)))
                if best is None or value < best[0]:
                    best = (value, ((g, milli),))
            assert best is not None  # fits() found a GPU with room
            frag_after, gpus = best
        else:
            gpus = lowest_free_gpus(request, gpu_free) if request.num_gpu else ()
            after = list(gpu_free)
            for g, milli in gpus:
                after[g] -= milli
            frag_after = frag(model, cpu, mem, tuple(sorted(after)))
        gain = (before - frag_after) / self.resolution
        return float(int(100 / (1 + math.exp(-gain)))), gpus
