"""The strategies the benchmark can run, by name: the service's own classes."""

from __future__ import annotations

from quota_service.scheduling.placement import (
    BestFit,
    FirstFit,
    Hubgrid,
    Strategy,
    WorkloadProfile,
)
from quota_service.scheduling.placement.fgd import FGD

from .trace import Pod

NAMES = ("hubgrid", "first-fit", "best-fit", "fgd")
BASELINES = ("first-fit", "best-fit")


def make_strategy(name: str, pods: list[Pod]) -> Strategy:
    """A fresh strategy; ``pods`` is the original pod list (the workload description)."""
    requests = [p.request for p in pods]
    if name == "hubgrid":
        return Hubgrid(WorkloadProfile.from_requests(requests))
    if name == "first-fit":
        return FirstFit()
    if name == "best-fit":
        return BestFit()
    if name == "fgd":
        return FGD(WorkloadProfile.from_requests(requests, coverage=0.95))
    raise ValueError(f"unknown strategy {name!r} (one of {', '.join(NAMES)})")
