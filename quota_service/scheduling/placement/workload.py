"""What the cluster expects to be asked: a profile of typical requests.

Fragmentation-aware strategies judge a node's free resources against the
requests that are likely to come. The service derives the profile from its
own history of requests, the openb benchmark from the trace's pod list (the
original pods, as the FGD paper does).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from .placement import Request


@dataclass(frozen=True)
class WorkloadProfile:
    """Typical requests with their relative weights (summing to 1)."""

    typical: tuple[tuple[Request, float], ...]

    @classmethod
    def from_requests(
        cls,
        requests: Iterable[Request],
        coverage: float = 1.0,
        *,
        with_memory: bool = True,
    ) -> WorkloadProfile:
        """The most frequent kinds of request until they cover ``coverage`` of all.

        Requests are grouped by (cpu, memory, GPUs, models); with
        ``with_memory=False`` memory is left out and set to 0, as FGD does
        (FGD also uses ``coverage=0.95``). Kinds are listed most frequent
        first, with their frequencies renormalised over the kept kinds.
        """
        if not 0 < coverage <= 1:
            raise ValueError(f"coverage must be in (0, 1], got {coverage}")
        counts = Counter(
            r if with_memory else Request(r.cpu, 0, r.num_gpu, r.gpu_milli, r.models)
            for r in requests
        )
        total = sum(counts.values())
        kept: list[tuple[Request, int]] = []
        covered = 0
        # most frequent first; equal weights in a fixed order so profiles are reproducible
        for request, w in sorted(counts.items(), key=lambda rw: (-rw[1], _order(rw[0]))):
            if covered >= coverage * total:
                break
            kept.append((request, w))
            covered += w
        return cls(tuple((r, w / covered) for r, w in kept))


def _order(r: Request) -> tuple:
    return (r.num_gpu, r.gpu_milli, r.cpu, r.mem, sorted(r.models))
