"""FGD, the fragmentation-gradient strategy of the openb paper (PROTOCOL.md §5).

Kept as the reference the default strategy is measured against. A node's
fragmentation against a profile of typical requests is

    F(node) = Σ_m p_m · frag_m(node)

where frag_m is the node's free GPU milli that m could not use: all of it
if m is CPU-only, excluded by model, or does not fit (GPUs or CPU), else
the free milli of the GPUs with less free than m needs. The score is
``int(100·sigmoid((F(before) − F(after)) / 1000))``, ties to the lowest rank.
"""

from __future__ import annotations

import math

from .placement import GPU_MILLI, Request, lowest_free_gpus
from .state import ClusterState
from .strategy import Gpus, NodeScorer
from .workload import WorkloadProfile


def fgd_fragmentation(profile: WorkloadProfile, model: str, cpu_free: int, gpu_free) -> float:
    total = sum(gpu_free)
    frag = 0.0
    for m, p in profile.typical:
        if not m.num_gpu or (m.models and model not in m.models) or cpu_free < m.cpu:
            frag += p * total
            continue
        milli = m.gpu_milli
        if sum(1 for free in gpu_free if free >= milli) < m.num_gpu:
            frag += p * total
        else:
            frag += p * sum(free for free in gpu_free if free < milli)
    return frag


class FGD(NodeScorer):
    name = "fgd"

    def __init__(self, profile: WorkloadProfile) -> None:
        self.profile = profile

    def evaluate(self, state: ClusterState, i: int, request: Request) -> tuple[float, Gpus] | None:
        if not state.fits(i, request):
            return None
        model, gpu_free = state.model[i], state.gpu_free[i]
        cpu_after = state.cpu_free[i] - request.cpu
        before = fgd_fragmentation(self.profile, model, state.cpu_free[i], gpu_free)
        if request.is_share:
            best = None
            for g, free in enumerate(gpu_free):
                if free >= request.gpu_milli:
                    after = list(gpu_free)
                    after[g] -= request.gpu_milli
                    f = fgd_fragmentation(self.profile, model, cpu_after, after)
                    if best is None or f < best[0]:
                        best = (f, ((g, request.gpu_milli),))
            frag_after, gpus = best
        else:
            gpus = lowest_free_gpus(request, gpu_free) if request.num_gpu else ()
            after = list(gpu_free)
            for g, milli in gpus:
                after[g] -= milli
            frag_after = fgd_fragmentation(self.profile, model, cpu_after, after)
        x = (before - frag_after) / GPU_MILLI
        return float(int(100 / (1 + math.exp(-x)))), gpus
