"""GPU-aware placement: pure decisions over an in-memory cluster state.

Build a :class:`ClusterState` from :class:`Node` values, ask a strategy
where a :class:`Request` goes, apply the :class:`Decision` you commit::

    state = ClusterState([Node.empty("gpu-1", 64000, 262144, gpus=4, gpu_model="A100")])
    strategy = Hubgrid(WorkloadProfile.from_requests(past_requests))
    decision = place(state, Request(cpu=8000, mem=32768, num_gpu=1, gpu_milli=500), strategy)
    if decision is not None:
        state.apply(request, decision)      # and state.release(request, decision) when it ends

No IO, no clock, no global randomness; integers for every resource.
"""

from .best_fit import BestFit
from .first_fit import FirstFit
from .fragmentation import fragmentation
from .hubgrid import Hubgrid
from .placement import GPU_MILLI, Decision, Node, Request, fits
from .state import ClusterState, PlacementError
from .strategy import FragmentationGradient, NodeScorer, Strategy
from .workload import WorkloadProfile


def place(state: ClusterState, request: Request, strategy: Strategy) -> Decision | None:
    """Where ``request`` goes now, by ``strategy``; None when no node can take it."""
    return strategy.choose(state, request)


__all__ = [
    "GPU_MILLI", "BestFit", "ClusterState", "Decision", "FirstFit", "FragmentationGradient",
    "Hubgrid", "Node", "NodeScorer", "PlacementError", "Request", "Strategy", "WorkloadProfile",
    "fits", "fragmentation", "place",
]
