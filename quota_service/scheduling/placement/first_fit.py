"""First fit: the first node in rank order that can take the request.

GPUs: whole GPUs are the lowest-indexed free ones, a share goes on the
lowest-indexed GPU with room. The simplest strategy, for comparison.
"""

from __future__ import annotations

from .placement import Request, lowest_free_gpus, share_candidates
from .state import ClusterState
from .strategy import Gpus, NodeScorer


class FirstFit(NodeScorer):
    name = "first-fit"

    def evaluate(self, state: ClusterState, i: int, request: Request) -> tuple[float, Gpus] | None:
        if not state.fits(i, request):
            return None
        if not request.num_gpu:
            return 0.0, ()
        if request.is_share:
            return 0.0, ((share_candidates(request, state.gpu_free[i])[0], request.gpu_milli),)
        return 0.0, lowest_free_gpus(request, state.gpu_free[i])
