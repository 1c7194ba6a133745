"""The arrival sequence of one run, built as the FGD simulator builds it.

PROTOCOL.md §2 with Python's ``random.Random(seed)`` standing in for Go's
global ``math/rand`` (a statistical replicate, not a bit-exact replay):

1. the pods sorted by name are the resampling population;
2. one draw is used up (the simulator's debug-log ``rand.Int()``);
3. shuffle: sort by name, then Fisher–Yates over the whole list;
4. tune to 130 % of the cluster's GPU milli: tune-up draws pods uniformly
   with replacement and appends clones ``X#k`` (k counts accepted clones)
   until the first draw whose *per-GPU* milli would overflow the target
   (the simulator's quirk); tune-down removes random pods while over.

Node ranks (tie-break order) come from their own seeded permutation, so a
run replayed from its arrivals file gets the same ranks from the same seed.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

from .trace import Pod, base_name

TUNE_RATIO_PERCENT = 130


def build_arrivals(pods: list[Pod], total_gpu_milli: int, seed: int) -> list[Pod]:
    rng = random.Random(seed)
    population = sorted(pods, key=lambda p: p.name)
    rng.getrandbits(63)  # the simulator's debug-log rand.Int()
    shuffled = list(population)
    rng.shuffle(shuffled)
    demand = sum(p.request.gpu_demand for p in shuffled)
    target = total_gpu_milli * TUNE_RATIO_PERCENT // 100
    if demand < target:
        clones = 0
        while True:
            pod = population[rng.randrange(len(population))]
            if demand + pod.request.gpu_milli > target:  # per-GPU milli: the quirk
                break
            demand += pod.request.gpu_demand
            shuffled.append(Pod(f"{pod.name}#{clones}", pod.request))
            clones += 1
    else:
        while demand > target:
            pod = shuffled.pop(rng.randrange(len(shuffled)))
            demand -= pod.request.gpu_demand
    return shuffled


def node_ranks(node_names: list[str], seed: int) -> dict[str, int]:
    """A seeded permutation of the nodes sorted by name (§2.7): name -> rank."""
    rng = random.Random(f"openb-node-ranks-{seed}")
    ordered = sorted(node_names)
    perm = list(range(len(ordered)))
    rng.shuffle(perm)
    return dict(zip(ordered, perm))


def read_arrivals(path: str | Path, pods: list[Pod]) -> list[Pod]:
    """The sequence of an ``arrivals.csv`` (header ``pod``), resolving ``X#k`` to pod X."""
    by_name = {p.name: p for p in pods}
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != ["pod"]:
            raise ValueError(f"{path}: expected the header 'pod', got {header}")
        arrivals = []
        for (name,) in reader:
            original = by_name.get(base_name(name))
            if original is None:
                raise ValueError(f"{path}: pod {name!r} is not in the pod list")
            arrivals.append(Pod(name, original.request))
    return arrivals


def write_arrivals(path: str | Path, arrivals: list[Pod]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["pod"])
        w.writerows([p.name] for p in arrivals)
