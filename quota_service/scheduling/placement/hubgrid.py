"""hubgrid's default strategy: fragmentation gradient, aware of stranded GPUs.

Like FGD (:mod:`.fgd`), a request goes where it increases the expected
fragmentation of the cluster the least, measured against a profile of
typical requests (:class:`~.workload.WorkloadProfile`). The differences:

* fragmentation also counts GPUs that the node's remaining CPU and memory
  could not feed (:func:`~.fragmentation.fragmentation` with a
  ``stranding_weight``), so CPU-hungry requests and CPU-only sessions stop
  starving GPU-rich nodes of CPU;
* memory is part of feasibility for the typical requests;
* kinds of request that only few nodes can host (an 8-GPU session needing
  the CPU of the largest nodes) weigh more, by how scarce their hosts are,
  and are kept even when rare, so common requests leave those nodes alone;
* the score is bucketed (as FGD's ``int(100·sigmoid(Δ/1000))``) so that
  near-equal choices fall to the fixed node rank, which packs the cluster
  from one end and keeps whole nodes free for multi-GPU requests.

Without a profile, a request is judged against more of the same kind.
The loop (before and after, the GPUs tried, the bucketed score) is
:class:`~.strategy.FragmentationGradient`'s. Scores depend only on the node
and the request, so the per-node cache of :class:`~.strategy.NodeScorer`
applies; fragmentation values are memoised by node shape (model, free CPU,
free memory, sorted free GPUs).
"""

from __future__ import annotations

from .fragmentation import fragmentation
from .placement import GPU_MILLI, Request, fits_values
from .state import ClusterState
from .strategy import FragmentationGradient, Measure
from .workload import WorkloadProfile

MEMO_LIMIT = 200_000


class Hubgrid(FragmentationGradient):
    name = "hubgrid"

    def __init__(
        self,
        profile: WorkloadProfile | None = None,
        *,
        coverage: float = 0.95,
        stranding_weight: float = 0.1,
        scarcity_threshold: float = 2.0,
        scarcity_limit: float = 20.0,
        resolution: float = 1000.0,
    ) -> None:
        """``profile``: the expected requests, most frequent first (see
        :meth:`WorkloadProfile.from_requests`); None judges each request
        against more of its own kind.

        ``coverage``: keep the most frequent kinds up to this share of all
        requests, plus every scarce kind. A kind is scarce when the GPUs of
        the nodes able to host it are fewer than all GPUs / ``scarcity_threshold``;
        its weight is then multiplied by all GPUs / those GPUs, at most
        ``scarcity_limit``. ``stranding_weight``: see
        :func:`~.fragmentation.fragmentation`. ``resolution``: milli-GPU of
        fragmentation change per unit of the sigmoid before bucketing.
        """
        self.profile = profile if profile is not None and profile.typical else None
        self.coverage = coverage
        self.stranding_weight = stranding_weight
        self.scarcity_threshold = scarcity_threshold
        self.scarcity_limit = scarcity_limit
        self.resolution = resolution
        self._memo: dict = {}
        self._typical_for: tuple | None = None  # (cluster shape, weighted typical requests)

    def typical(self, state: ClusterState) -> tuple[tuple[Request, float], ...]:
        """The profile as weighed for this cluster: frequent kinds plus scarce ones."""
        shape = state.shape
        if self._typical_for is not None and self._typical_for[0] == shape:
            return self._typical_for[1]
        total_gpus = sum(len(free) for free in state.gpu_free)
        kept = []
        covered = 0.0
        for m, p in self.profile.typical if self.profile else ():
            hosts = sum(
                len(state.gpu_free[i]) for i in state.candidates(m) if fits_values(
                    m, True, state.cpu_capacity[i], state.mem_capacity[i], state.model[i],
                    (GPU_MILLI,) * len(state.gpu_free[i]),
                )
            ) if m.num_gpu else total_gpus
            boost = min(self.scarcity_limit, total_gpus / hosts) if hosts else 1.0
            scarce = boost >= self.scarcity_threshold
            if covered < self.coverage or scarce:
                kept.append((m, p * boost if scarce else p))
            covered += p
        self._typical_for = (shape, tuple(kept))
        self._memo.clear()
        return self._typical_for[1]

    def _frag(self, typical, request: Request, model: str, cpu: int, mem: int, gpus: tuple[int, ...]) -> float:
        key = (None if self.profile else request, model, cpu, mem, gpus)
        value = self._memo.get(key)
        if value is None:
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            value = self._memo[key] = fragmentation(
                typical, model, cpu, mem, gpus, self.stranding_weight
            )
        return value

    def measure(self, state: ClusterState, request: Request) -> Measure:
        typical = self.typical(state) if self.profile else ((request, 1.0),)
        return lambda model, cpu, mem, gpus: self._frag(typical, request, model, cpu, mem, gpus)
