"""An incremental, in-memory cluster state for placement.

:class:`ClusterState` holds what is free on every node in flat lists (the
strategies' hot path reads them directly) and keeps two indexes:

* the nodes of each GPU model, so a request only looks at nodes it may use;
* a change log (node indexes in the order they changed, with a version per
  node), so a strategy can cache its per-node scores and recompute only the
  nodes that changed since it last looked (see :mod:`.strategy`).

Applying a decision checks it against the rules of :mod:`.placement` and
raises :class:`PlacementError` on a violation; releasing restores exactly
what applying took. Integers only.
"""

from __future__ import annotations

from typing import Iterable

from .placement import GPU_MILLI, Decision, Node, Request, fits_values


class PlacementError(ValueError):
    """A decision that does not fit the cluster state (a bug in the caller)."""


class ClusterState:
    """Free resources of every node, updated by :meth:`apply` and :meth:`release`."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        nodes = list(nodes)
        self.names: list[str] = [n.name for n in nodes]
        self.index: dict[str, int] = {}
        for i, name in enumerate(self.names):
            if name in self.index:
                raise ValueError(f"duplicate node name {name!r}")
            self.index[name] = i
        self.rank: list[int] = [n.rank for n in nodes]
        self.model: list[str] = [n.gpu_model for n in nodes]
        self.cpu_capacity: list[int] = [n.cpu_capacity for n in nodes]
        self.mem_capacity: list[int] = [n.mem_capacity for n in nodes]
        self.cpu_free: list[int] = [n.cpu_free for n in nodes]
        self.mem_free: list[int] = [n.mem_free for n in nodes]
        self.gpu_free: list[list[int]] = [list(n.gpu_free) for n in nodes]
        self.schedulable: list[bool] = [n.schedulable for n in nodes]
        self.takes_shares: list[bool] = [n.takes_shares for n in nodes]
        self.version: list[int] = [0] * len(nodes)
        self._by_model: dict[str, list[int]] = {}
        for i, n in enumerate(nodes):
            if n.gpu_free:
                self._by_model.setdefault(n.gpu_model, []).append(i)
        self._gpu_nodes = [i for i, n in enumerate(nodes) if n.gpu_free]
        self._all = list(range(len(nodes)))
        self.shape: tuple = tuple(
            sorted((n.gpu_model, n.cpu_capacity, n.mem_capacity, len(n.gpu_free)) for n in nodes)
        )
        """What the cluster is made of (capacities only), for strategies that weigh it."""
        self._log: list[int] = []
        self._log_base = 0
        self.caches: dict = {}
        """Scratch space of the strategies (per-node score caches), keyed by them."""

    def __len__(self) -> int:
        return len(self.names)

    # ------------------------------------------------------------ reading

    def node(self, name: str) -> Node:
        """A frozen snapshot of one node."""
        i = self.index[name]
        return Node(
            self.names[i], self.cpu_capacity[i], self.mem_capacity[i], self.cpu_free[i],
            self.mem_free[i], self.model[i], tuple(self.gpu_free[i]), self.schedulable[i],
            self.rank[i], self.takes_shares[i],
        )

    def nodes(self) -> list[Node]:
        return [self.node(name) for name in self.names]

    def fits(self, i: int, request: Request) -> bool:
        """Whether node ``i`` can take ``request`` now."""
        return fits_values(
            request, self.schedulable[i], self.cpu_free[i], self.mem_free[i], self.model[i],
            self.gpu_free[i], self.takes_shares[i],
        )

    def candidates(self, request: Request) -> list[int]:
        """Indexes of the nodes whose kind suits ``request`` (free amounts not checked)."""
        if not request.num_gpu:
            return self._all
        if not request.models:
            return self._gpu_nodes
        if len(request.models) == 1:
            (model,) = request.models
            return self._by_model.get(model, [])
        return sorted(i for m in request.models for i in self._by_model.get(m, ()))

    def allocated_gpu_milli(self) -> int:
        """Σ over GPUs of (1000 − free): the milli-GPU taken by placed requests."""
        return sum(GPU_MILLI * len(g) - sum(g) for g in self.gpu_free)

    # ------------------------------------------------------------ change log

    @property
    def mark(self) -> int:
        """A position in the change log; pass it to :meth:`changed_since` later."""
        return self._log_base + len(self._log)

    def changed_since(self, mark: int) -> set[int] | None:
        """Nodes changed after ``mark``, or None if the log no longer reaches back."""
        if mark < self._log_base:
            return None
        return set(self._log[mark - self._log_base :])

    def _touch(self, i: int) -> None:
        self.version[i] += 1
        self._log.append(i)
        if len(self._log) > 8 * len(self.names) + 1024:
            # keep the log bounded in a long-running service; older marks
            # then get None and their owner recomputes from scratch
            drop = len(self._log) // 2
            self._log_base += drop
            del self._log[:drop]

    # ------------------------------------------------------------ changing

    def apply(self, request: Request, decision: Decision) -> None:
        """Take what ``decision`` gives ``request``; raise PlacementError if it does not fit."""
        i = self._checked(request, decision)
        gpus = self.gpu_free[i]
        for index, milli in decision.gpus:
            if gpus[index] < milli or (request.gpu_milli == GPU_MILLI and gpus[index] != GPU_MILLI):
                raise PlacementError(f"{decision.node}: GPU {index} has {gpus[index]} free, not {milli}")
        if not self.fits(i, request):
            raise PlacementError(f"{decision.node} cannot take {request}")
        self.cpu_free[i] -= request.cpu
        self.mem_free[i] -= request.mem
        for index, milli in decision.gpus:
            gpus[index] -= milli
        self._touch(i)

    def release(self, request: Request, decision: Decision) -> None:
        """Give back what :meth:`apply` took for the same request and decision."""
        i = self._checked(request, decision)
        gpus = self.gpu_free[i]
        if self.cpu_free[i] + request.cpu > self.cpu_capacity[i] or (
            self.mem_free[i] + request.mem > self.mem_capacity[i]
        ):
            raise PlacementError(f"{decision.node}: releasing {request} exceeds its capacity")
        for index, milli in decision.gpus:
            if gpus[index] + milli > GPU_MILLI:
                raise PlacementError(f"{decision.node}: GPU {index} would exceed {GPU_MILLI} milli")
        self.cpu_free[i] += request.cpu
        self.mem_free[i] += request.mem
        for index, milli in decision.gpus:
            gpus[index] += milli
        self._touch(i)

    def set_free(self, name: str, cpu_free: int, mem_free: int, gpu_free) -> None:
        """What node ``name`` has free, as read anew (e.g. after a session
        on it ended: the owner derives it from what still runs there)."""
        i = self.index[name]
        if len(gpu_free) != len(self.gpu_free[i]):
            raise PlacementError(f"{name}: {len(gpu_free)} GPUs given, it has {len(self.gpu_free[i])}")
        self.cpu_free[i], self.mem_free[i], self.gpu_free[i] = cpu_free, mem_free, list(gpu_free)
        self._touch(i)

    def set_schedulable(self, name: str, schedulable: bool) -> None:
        """Drain a node (False) or open it again; what runs there stays."""
        i = self.index[name]
        if self.schedulable[i] != schedulable:
            self.schedulable[i] = schedulable
            self._touch(i)

    def _checked(self, request: Request, decision: Decision) -> int:
        """The node index of ``decision`` after checking its GPU list against ``request``."""
        i = self.index.get(decision.node)
        if i is None:
            raise PlacementError(f"unknown node {decision.node!r}")
        indexes = [index for index, _ in decision.gpus]
        if len(set(indexes)) != len(indexes) or len(indexes) != request.num_gpu:
            raise PlacementError(f"{request} needs {request.num_gpu} distinct GPUs, got {decision.gpus}")
        n_gpus = len(self.gpu_free[i])
        for index, milli in decision.gpus:
            if not 0 <= index < n_gpus or milli != request.gpu_milli:
                raise PlacementError(f"{decision.node}: bad GPU grant {(index, milli)} for {request}")
        return i
