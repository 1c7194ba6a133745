"""The placement vocabulary: what is asked, what a node offers, what is decided.

Pure values and pure rules, no IO, no clock, no randomness. Resources are
plain integers in the caller's units (the service uses milli-CPU and MiB; the
openb benchmark uses the trace's ``cpu_milli`` and ``memory_mib``). A GPU has
1000 milli; a request asks for whole GPUs (``num_gpu`` devices, 1000 milli
each) or for a share of ONE GPU (``num_gpu == 1`` and ``gpu_milli < 1000``),
never both.

The feasibility rules are those of the FGD simulator (openb PROTOCOL.md §4):

* cpu and memory fit in the node's free amounts;
* a GPU request needs a node with GPUs whose model is allowed (an empty
  ``models`` set allows any model);
* a share sits on one GPU with at least ``gpu_milli`` free;
* ``k`` whole GPUs are ``k`` completely free GPUs of the same node;
* an unschedulable node takes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GPU_MILLI = 1000
"""Capacity of one GPU in milli-GPU."""


@dataclass(frozen=True)
class Request:
    """What one session asks for.

    >>> Request(cpu=4000, mem=16384, num_gpu=1, gpu_milli=500)   # half a GPU
    >>> Request(cpu=32000, mem=65536, num_gpu=4)                  # four whole GPUs
    >>> Request(cpu=8000, mem=30517)                              # CPU only

    ``gpu_milli`` is per GPU: 1000 for whole GPUs (the default when
    ``num_gpu`` is set), 1..999 for a share of a single GPU. ``models`` lists
    the allowed GPU models; empty means any.
    """

    cpu: int
    mem: int
    num_gpu: int = 0
    gpu_milli: int = 0
    models: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        for name in ("cpu", "mem", "num_gpu", "gpu_milli"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        if self.num_gpu and not self.gpu_milli:
            object.__setattr__(self, "gpu_milli", GPU_MILLI)
        if not self.num_gpu and self.gpu_milli:
            raise ValueError(f"gpu_milli={self.gpu_milli} without num_gpu: ask for num_gpu=1")
        if self.gpu_milli > GPU_MILLI:
            raise ValueError(f"gpu_milli is per GPU and at most {GPU_MILLI}, got {self.gpu_milli}")
        if self.num_gpu >= 2 and self.gpu_milli != GPU_MILLI:
            raise ValueError(
                f"a share is of ONE GPU: num_gpu={self.num_gpu} needs whole GPUs, "
                f"got gpu_milli={self.gpu_milli}"
            )
        if not isinstance(self.models, frozenset):
            object.__setattr__(self, "models", frozenset(self.models))

    @property
    def is_share(self) -> bool:
        """A fraction of one GPU (as opposed to whole GPUs or none)."""
        return self.num_gpu == 1 and self.gpu_milli < GPU_MILLI

    @property
    def gpu_demand(self) -> int:
        """Total milli-GPU asked for: ``num_gpu × gpu_milli``."""
        return self.num_gpu * self.gpu_milli

    def allows_model(self, model: str) -> bool:
        return not self.models or model in self.models


@dataclass(frozen=True)
class Node:
    """A node as placement sees it: capacities, what is free now, its GPUs.

    ``gpu_free`` holds the free milli of each GPU (index = device index), each
    GPU having 1000. ``rank`` breaks ties between equally good nodes (lower
    wins); the service derives it from the node's name, the benchmark from a
    seeded permutation.
    """

    name: str
    cpu_capacity: int
    mem_capacity: int
    cpu_free: int
    mem_free: int
    gpu_model: str = ""
    gpu_free: tuple[int, ...] = ()
    schedulable: bool = True
    rank: int = 0
    #: False: its GPU shares cannot be enforced now (it takes whole GPUs only)
    takes_shares: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.cpu_free <= self.cpu_capacity:
            raise ValueError(f"{self.name}: cpu_free {self.cpu_free} outside 0..{self.cpu_capacity}")
        if not 0 <= self.mem_free <= self.mem_capacity:
            raise ValueError(f"{self.name}: mem_free {self.mem_free} outside 0..{self.mem_capacity}")
        if not isinstance(self.gpu_free, tuple):
            object.__setattr__(self, "gpu_free", tuple(self.gpu_free))
        for i, free in enumerate(self.gpu_free):
            if not 0 <= free <= GPU_MILLI:
                raise ValueError(f"{self.name}: GPU {i} free {free} outside 0..{GPU_MILLI}")

    @classmethod
    def empty(
        cls, name: str, cpu: int, mem: int, gpus: int = 0, gpu_model: str = "", *,
        schedulable: bool = True, rank: int = 0,
    ) -> Node:
        """A node with nothing allocated on it."""
        return cls(name, cpu, mem, cpu, mem, gpu_model, (GPU_MILLI,) * gpus, schedulable, rank)


@dataclass(frozen=True)
class Decision:
    """Where a request goes: the node and, per GPU used, ``(index, milli)``.

    ``gpus`` is empty for a CPU-only request, one pair for a share, and one
    ``(index, 1000)`` pair per whole GPU.
    """

    node: str
    gpus: tuple[tuple[int, int], ...] = ()


# ---------------------------------------------------------------- the rules


def fits(request: Request, node: Node) -> bool:
    """Whether ``node`` can take ``request`` now (PROTOCOL.md §4)."""
    return fits_values(
        request, node.schedulable, node.cpu_free, node.mem_free, node.gpu_model, node.gpu_free,
        node.takes_shares,
    )


def fits_values(
    request: Request, schedulable: bool, cpu_free: int, mem_free: int, model: str, gpu_free,
    takes_shares: bool = True,
) -> bool:
    """:func:`fits` on a node's raw values (the cluster state's hot path)."""
    if not schedulable or request.cpu > cpu_free or request.mem > mem_free:
        return False
    if not request.num_gpu:
        return True
    if not gpu_free or (request.models and model not in request.models):
        return False
    milli = request.gpu_milli
    if request.num_gpu == 1:
        return (takes_shares or milli == GPU_MILLI) and max(gpu_free) >= milli
    return sum(1 for free in gpu_free if free == GPU_MILLI) >= request.num_gpu


def share_candidates(request: Request, gpu_free) -> list[int]:
    """Indexes of the GPUs a share (or one whole GPU) could sit on."""
    milli = request.gpu_milli
    return [i for i, free in enumerate(gpu_free) if free >= milli]


def lowest_free_gpus(request: Request, gpu_free) -> tuple[tuple[int, int], ...]:
    """Whole GPUs: the lowest-indexed completely free ones (the simulator's rule)."""
    chosen = [i for i, free in enumerate(gpu_free) if free == GPU_MILLI][: request.num_gpu]
    return tuple((i, GPU_MILLI) for i in chosen)


def tightest_gpu(request: Request, gpu_free) -> tuple[tuple[int, int], ...]:
    """A share on the fitting GPU with the least free milli (lowest index on ties)."""
    milli = request.gpu_milli
    best = min(
        (free, i) for i, free in enumerate(gpu_free) if free >= milli
    )
    return ((best[1], milli),)


def default_gpus(request: Request, gpu_free) -> tuple[tuple[int, int], ...]:
    """The simulator's ``best`` GPU choice: whole GPUs lowest-indexed, shares tightest."""
    if not request.num_gpu:
        return ()
    if request.is_share:
        return tightest_gpu(request, gpu_free)
    return lowest_free_gpus(request, gpu_free)
