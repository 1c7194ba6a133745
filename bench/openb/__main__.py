"""Run the service's placement strategies over the openb trace and print figures.

    python -m bench.openb --nodes NODES.csv --pods PODS.csv --seed 42 --out DIR
    python -m bench.openb --nodes NODES.csv --pods PODS.csv --arrivals A.csv --out DIR
    python -m bench.openb --nodes NODES.csv --pods P1.csv P2.csv --seeds 42-51 --out DIR --baselines

One run writes DIR/arrivals.csv (header ``pod``: the sequence, failed pods
included) and DIR/placements.csv (header ``pod,node,gpus``: placed pods in
decision order, ``gpus`` as ``index:milli;...``) for the first strategy, and
DIR/placements.<strategy>.csv for any further one. With several pod lists or
seeds, each run goes to DIR/<workload>/seed-<S>/. It prints the GPU
allocation ratio at columns 100 and 130 (PROTOCOL.md §6), decision latency
p50/p99 and the run time, then mean ± sd over the seeds per workload.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from quota_service.scheduling.placement import GPU_MILLI

from .metric import allocation_columns
from .replay import Run, replay, write_placements
from .strategies import BASELINES, NAMES, make_strategy
from .trace import read_nodes, read_pods
from .workload import build_arrivals, node_ranks, read_arrivals, write_arrivals

COLUMNS = (100, 130)
RANK_SEED_FOR_REPLAY = 0


def parse_seeds(text: str) -> list[int]:
    """``42-51`` or ``42,44,50`` or ``42``."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    return seeds


def workload_name(path: Path) -> str:
    return path.stem.removeprefix("openb_pod_list_")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.openb", description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=Path, required=True, help="node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
    p.add_argument("--pods", type=Path, nargs="+", required=True, help="pod list CSV(s), one workload each")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--seed", type=int, help="build the arrivals from this seed (PROTOCOL.md §2)")
    source.add_argument("--seeds", type=parse_seeds, help="several seeds, e.g. 42-51: print mean ± sd")
    source.add_argument("--arrivals", type=Path, help="replay this arrivals.csv exactly")
    p.add_argument(
        "--rank-seed", type=int, default=None,
        help="seed of the node tie-break ranks (default: the run's seed; "
        f"{RANK_SEED_FOR_REPLAY} with --arrivals)",
    )
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--strategy", action="append", choices=NAMES, help="strategy to run (repeatable; default hubgrid)")
    p.add_argument("--baselines", action="store_true", help=f"also run {' and '.join(BASELINES)}")
    args = p.parse_args(argv)
    strategies = list(args.strategy or ["hubgrid"])
    if args.baselines:
        strategies += [b for b in BASELINES if b not in strategies]
    args.strategies = strategies
    if args.arrivals is not None and len(args.pods) > 1:
        p.error("--arrivals replays one workload: give one --pods file")
    return args


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def run_one(args, pods_path: Path, seed: int | None, out: Path) -> dict[str, dict[int, float | None]]:
    """One workload, one arrival sequence, every strategy; returns the columns per strategy."""
    pods = read_pods(pods_path)
    names = [n.name for n in read_nodes(args.nodes)]
    rank_seed = args.rank_seed if args.rank_seed is not None else (
        seed if seed is not None else RANK_SEED_FOR_REPLAY
    )
    nodes = read_nodes(args.nodes, node_ranks(names, rank_seed))
    total_gpus = sum(len(n.gpu_free) for n in nodes)
    if seed is None:
        arrivals = read_arrivals(args.arrivals, pods)
    else:
        arrivals = build_arrivals(pods, total_gpus * GPU_MILLI, seed)
    out.mkdir(parents=True, exist_ok=True)
    write_arrivals(out / "arrivals.csv", arrivals)
    label = f"{workload_name(pods_path)}" + (f" seed {seed}" if seed is not None else f" {args.arrivals}")
    print(f"{label}: {len(arrivals)} arrivals on {len(nodes)} nodes ({total_gpus} GPUs)")
    results = {}
    for k, name in enumerate(args.strategies):
        run = replay(nodes, arrivals, make_strategy(name, pods))
        write_placements(out / ("placements.csv" if k == 0 else f"placements.{name}.csv"), run)
        results[name] = cols = allocation_columns(run.arrived, run.allocated, total_gpus, COLUMNS)
        print_run(run, cols, len(arrivals))
    return results


def print_run(run: Run, cols: dict[int, float | None], n: int) -> None:
    figures = "  ".join(f"col {k}: {'-' if v is None else f'{v:6.2f}'}" for k, v in cols.items())
    print(
        f"  {run.strategy:<10} {figures}  placed {len(run.placements)}/{n}  "
        f"latency p50 {percentile(run.latencies, 0.5) * 1e6:7.1f} µs  "
        f"p99 {percentile(run.latencies, 0.99) * 1e6:7.1f} µs  total {run.seconds:6.2f} s"
    )


def mean_sd(values: list[float]) -> str:
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):6.2f} ± {sd:4.2f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    seeds: list[int | None] = [None] if args.arrivals else (args.seeds or [args.seed])
    nested = len(args.pods) > 1 or len(seeds) > 1
    table: dict[tuple[str, str], dict[int, list[float]]] = {}
    for pods_path in args.pods:
        for seed in seeds:
            out = args.out / workload_name(pods_path) / f"seed-{seed}" if nested else args.out
            for name, cols in run_one(args, pods_path, seed, out).items():
                per = table.setdefault((workload_name(pods_path), name), {k: [] for k in COLUMNS})
                for k, v in cols.items():
                    if v is not None:
                        per[k].append(v)
    if nested or len(args.strategies) > 1:
        print(f"\nGPU allocation ratio, mean ± sd over {len(seeds)} run(s) per workload")
        print(f"{'workload':<14}{'strategy':<12}" + "".join(f"{'col ' + str(k):>17}" for k in COLUMNS))
        for (workload, name), per in table.items():
            print(f"{workload:<14}{name:<12}" + "".join(f"{mean_sd(per[k]):>17}" for k in COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
