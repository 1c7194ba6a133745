"""BestFit, exactly as the FGD simulator's baseline (openb PROTOCOL.md §5).

The node with the least weighted leftover wins::

    s = 0.5·(cpu_free − cpu)/cpu_scale + 0.5·(gpu_free_total − gpu_demand)/gpu_scale
    score = int(100·(1 − s))          # truncated, as Go's int64()

with the simulator's scales 128000 milli-CPU and 8000 milli-GPU; ties go to
the lowest rank. Memory and GPU model are not part of the score. GPUs: whole
GPUs are the lowest-indexed free ones; a share takes the fitting GPU with
the least free milli (the simulator's ``best`` GPU selection).
"""

from __future__ import annotations

from .placement import Request, default_gpus
from .state import ClusterState
from .strategy import Gpus, NodeScorer


class BestFit(NodeScorer):
    name = "best-fit"

    def __init__(self, cpu_scale: int = 128_000, gpu_scale: int = 8_000) -> None:
        self.cpu_scale = cpu_scale
        self.gpu_scale = gpu_scale

    def evaluate(self, state: ClusterState, i: int, request: Request) -> tuple[float, Gpus] | None:
        if not state.fits(i, request):
            return None
        gpu_free = state.gpu_free[i]
        s = 0.5 * (state.cpu_free[i] - request.cpu) / self.cpu_scale + 0.5 * (
            sum(gpu_free) - request.gpu_demand
        ) / self.gpu_scale
        return float(int(100 * (1 - s))), default_gpus(request, gpu_free)
