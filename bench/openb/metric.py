"""The published metric: GPU allocation ratio per arrived-percent column (PROTOCOL.md §6).

For every event i (each arrival, failed or not) with cumulative arrived
milli A_i and allocated milli U_i after it::

    a_i = round(A_i / total_gpus / 10)          # whole percent, half-to-even
    y_i = round(U_i / total_gpus / 10, 2)
    column k = round(mean{y_i : a_i = k}, 2)    # else the mean over k-1..k+1, else None
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence


def allocation_columns(
    arrived: Sequence[int], allocated: Sequence[int], total_gpus: int, columns: Sequence[int]
) -> dict[int, float | None]:
    buckets: dict[int, list[float]] = defaultdict(list)
    for a, u in zip(arrived, allocated, strict=True):
        buckets[round(a / total_gpus / 10)].append(round(u / total_gpus / 10, 2))
    result: dict[int, float | None] = {}
    for k in columns:
        ys = buckets.get(k)
        if not ys:
            ys = [y for j in (k - 1, k, k + 1) for y in buckets.get(j, ())]
        result[k] = round(sum(ys) / len(ys), 2) if ys else None
    return result
