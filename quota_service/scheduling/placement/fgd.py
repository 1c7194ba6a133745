"""FGD, the fragmentation-gradient strategy of the openb paper (PROTOCOL.md §5).

Kept as the reference the default strategy is measured against. A node's
fragmentation against a profile of typical requests is

    F(node) = Σ_m p_m · frag_m(node)

where frag_m is the node's free GPU milli that m could not use: all of it
if m is CPU-only, excluded by model, or does not fit (GPUs or CPU), else
the free milli of the GPUs with less free than m needs. The score is
``int(100·sigmoid((F(before) − F(after)) / 1000))``, ties to the lowest rank
(the loop is :class:`~.strategy.FragmentationGradient`'s). Memory is not
part of the measure.
"""

from __future__ import annotations

from .placement import Request
from .state import ClusterState
from .strategy import FragmentationGradient, Measure
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


class FGD(FragmentationGradient):
    name = "fgd"

    def __init__(self, profile: WorkloadProfile) -> None:
        self.profile = profile

    def measure(self, state: ClusterState, request: Request) -> Measure:
        profile = self.profile
        return lambda model, cpu, mem, gpus: fgd_fragmentation(profile, model, cpu, gpus)
