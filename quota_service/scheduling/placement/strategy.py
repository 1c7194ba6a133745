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
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from typing import Protocol

from .placement import Decision, Request
from .state import ClusterState

Gpus = tuple[tuple[int, int], ...]

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

    Subclasses implement :meth:`evaluate`. A score must depend only on the
    node's own state and the request (that is what makes caching exact).
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
            for i in candidates:
                found = self.evaluate(state, i, request)
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
