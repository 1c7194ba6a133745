"""How much of a node's free GPU the expected requests could not use.

This is FGD's fragmentation measure (openb PROTOCOL.md §5) with one
addition: a node whose free GPUs outnumber what its free CPU and memory can
feed is partly stranded, and ``stranding_weight`` of that stranded GPU is
counted as fragmented too. With weight 0 it is exactly FGD's measure.

For each typical request m with frequency p_m, frag_m is

* all free GPU milli G, if m is CPU-only, excludes the node's model, or does
  not fit (too few GPUs with room, too little CPU or memory);
* otherwise the free milli on GPUs with less free than m needs, plus
  ``stranding_weight`` × what remains beyond the k_c copies of m that the
  node's CPU and memory can feed, when that is fewer than its GPUs can hold.

and F(node) = Σ p_m · frag_m. Plain integers in, a float out.
"""

from __future__ import annotations

from typing import Sequence

from .placement import GPU_MILLI, Request


def fragmentation(
    typical: Sequence[tuple[Request, float]],
    model: str,
    cpu_free: int,
    mem_free: int,
    gpu_free: Sequence[int],
    stranding_weight: float = 0.0,
) -> float:
    total = sum(gpu_free)
    if not total:
        return 0.0
    frag = 0.0
    for m, p in typical:
        if (
            not m.num_gpu
            or (m.models and model not in m.models)
            or cpu_free < m.cpu
            or mem_free < m.mem
        ):
            frag += p * total
            continue
        milli = m.gpu_milli
        if milli == GPU_MILLI:
            slots = sum(1 for free in gpu_free if free == GPU_MILLI) // m.num_gpu
            unusable = total - GPU_MILLI * sum(1 for free in gpu_free if free == GPU_MILLI)
        else:
            slots = sum(free // milli for free in gpu_free)
            unusable = sum(free for free in gpu_free if free < milli)
        if not slots:
            frag += p * total
            continue
        if stranding_weight:
            fed = min(
                cpu_free // m.cpu if m.cpu else slots,
                mem_free // m.mem if m.mem else slots,
            )
            if fed < slots:
                unusable += stranding_weight * (total - unusable - fed * m.gpu_demand)
        frag += p * unusable
    return frag
