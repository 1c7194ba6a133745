"""One online run: each arrival is placed now or fails, as in the simulator (§3).

No departures, no retries; failed pods count as arrived. The strategy is the
service's own code; the replay only applies its decisions and records them.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field
from pathlib import Path

from quota_service.scheduling.placement import ClusterState, Decision, Node, Strategy

from .trace import Pod


@dataclass
class Run:
    strategy: str
    placements: list[tuple[str, Decision]] = field(default_factory=list)
    arrived: list[int] = field(default_factory=list)
    """Cumulative arrived milli-GPU after each event."""
    allocated: list[int] = field(default_factory=list)
    """Allocated milli-GPU after each event."""
    latencies: list[float] = field(default_factory=list)
    """Seconds per decision."""
    seconds: float = 0.0


def replay(nodes: list[Node], arrivals: list[Pod], strategy: Strategy) -> Run:
    start = time.perf_counter()
    state = ClusterState(nodes)
    run = Run(strategy.name)
    arrived = allocated = state.allocated_gpu_milli()
    clock = time.perf_counter
    for pod in arrivals:
        request = pod.request
        arrived += request.gpu_demand
        t0 = clock()
        decision = strategy.choose(state, request)
        run.latencies.append(clock() - t0)
        if decision is not None:
            state.apply(request, decision)
            allocated += request.gpu_demand
            run.placements.append((pod.name, decision))
        run.arrived.append(arrived)
        run.allocated.append(allocated)
    run.seconds = time.perf_counter() - start
    return run


def write_placements(path: str | Path, run: Run) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["pod", "node", "gpus"])
        for pod, d in run.placements:
            w.writerow([pod, d.node, ";".join(f"{i}:{m}" for i, m in d.gpus)])
