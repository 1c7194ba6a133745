"""An independent checker of a placements.csv against the openb rules.

    python -m bench.openb.check --nodes NODES.csv --pods PODS.csv \\
        --arrivals DIR/arrivals.csv --placements DIR/placements.csv

It shares no code with the scheduler: it reads the CSV files itself,
replays the arrivals in order and verifies that

* every placed pod arrived, once, and placements follow arrival order;
* the node exists; cpu, memory and the 1001-pod limit are never exceeded;
* GPU grants match the request: k distinct, completely free GPUs for whole
  GPUs (all on the one node of the row), one GPU with room for a share, no
  GPU for a CPU-only pod, never more than 1000 milli on a GPU;
* the node's model is allowed by the pod's ``gpu_spec``;
* a pod is absent from placements only if no node could take it at that
  moment (PROTOCOL.md: the simulator places every pod that fits).

Exit status 0 when every rule holds, 1 with one line per violation otherwise.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

MILLI = 1000
MAX_PODS = 1001


@dataclass(frozen=True)
class Want:
    cpu: int
    mem: int
    gpus: int
    milli: int  # per GPU
    models: frozenset[str]


@dataclass
class Box:
    name: str
    cpu: int
    mem: int
    model: str
    free: list[int]
    pods: int = 0


def load_pods(path: Path) -> dict[str, Want]:
    wants = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            gpus = int(row["num_gpu"])
            milli = min(int(row["gpu_milli"]), MILLI) if gpus else 0
            if milli <= 0:
                gpus = milli = 0
            spec = row.get("gpu_spec") or ""
            models = frozenset(s for s in spec.split("|") if s) if gpus else frozenset()
            wants[row["name"]] = Want(int(row["cpu_milli"]), int(row["memory_mib"]), gpus, milli, models)
    return wants


def load_nodes(path: Path) -> dict[str, Box]:
    with open(path, newline="") as f:
        return {
            r["sn"]: Box(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), r["model"], [MILLI] * int(r["gpu"]))
            for r in csv.DictReader(f)
        }


def read_column(path: Path, header: list[str]) -> list[list[str]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != header:
        raise ValueError(f"{path}: expected header {','.join(header)}")
    return rows[1:]


def could_take(box: Box, w: Want) -> bool:
    if w.cpu > box.cpu or w.mem > box.mem or box.pods >= MAX_PODS:
        return False
    if not w.gpus:
        return True
    if not box.free or (w.models and box.model not in w.models):
        return False
    return sum(1 for x in box.free if x >= w.milli) >= w.gpus


def grant_problem(box: Box, w: Want, grants: list[tuple[int, int]]) -> str | None:
    if w.cpu > box.cpu:
        return f"cpu {w.cpu} > free {box.cpu}"
    if w.mem > box.mem:
        return f"memory {w.mem} > free {box.mem}"
    if box.pods >= MAX_PODS:
        return f"more than {MAX_PODS} pods"
    if len(grants) != w.gpus:
        return f"{len(grants)} GPU grant(s) for a pod of {w.gpus} GPU(s)"
    if not w.gpus:
        return None
    if w.models and box.model not in w.models:
        return f"model {box.model} not in {sorted(w.models)}"
    if len({i for i, _ in grants}) != len(grants):
        return "the same GPU granted twice"
    for i, m in grants:
        if not 0 <= i < len(box.free):
            return f"GPU {i} does not exist (node has {len(box.free)})"
        if m != w.milli:
            return f"GPU {i} granted {m} milli, the pod asks {w.milli}"
        if box.free[i] < m:
            return f"GPU {i} has {box.free[i]} free, {m} granted (over 1000)"
        if w.milli == MILLI and box.free[i] != MILLI:
            return f"whole GPU {i} is not completely free ({box.free[i]})"
    return None


def parse_grants(text: str) -> list[tuple[int, int]]:
    if not text:
        return []
    return [(int(i), int(m)) for i, m in (part.split(":") for part in text.split(";"))]


def check(nodes: Path, pods: Path, arrivals: Path, placements: Path) -> list[str]:
    """Every violation found, as readable lines (empty: all rules hold)."""
    wants = load_pods(pods)
    boxes = load_nodes(nodes)
    sequence = [row[0] for row in read_column(arrivals, ["pod"])]
    rows = read_column(placements, ["pod", "node", "gpus"])
    problems: list[str] = []
    position = {}
    for k, name in enumerate(sequence):
        if name in position:
            problems.append(f"arrivals: {name} arrives twice")
        position[name] = k
        if name.split("#", 1)[0] not in wants:
            problems.append(f"arrivals: {name} is not in the pod list")
    placed: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    last = -1
    for pod, node, gpus in rows:
        if pod not in position:
            problems.append(f"placements: {pod} never arrived")
            continue
        if pod in placed:
            problems.append(f"placements: {pod} placed twice")
            continue
        if position[pod] < last:
            problems.append(f"placements: {pod} is out of arrival order")
        last = max(last, position[pod])
        try:
            placed[pod] = (node, parse_grants(gpus))
        except ValueError:
            problems.append(f"placements: {pod}: unreadable gpus {gpus!r}")
    if problems:
        return problems
    hopeless: set[Want] = set()  # nothing is ever released, so a misfit stays a misfit
    for name in sequence:
        w = wants.get(name.split("#", 1)[0])
        if w is None:
            continue
        if name not in placed:
            if w in hopeless:
                continue
            taker = next((b.name for b in boxes.values() if could_take(b, w)), None)
            if taker is not None:
                problems.append(f"{name}: not placed, but {taker} could take it")
            else:
                hopeless.add(w)
            continue
        node, grants = placed[name]
        box = boxes.get(node)
        if box is None:
            problems.append(f"{name}: unknown node {node}")
            continue
        problem = grant_problem(box, w, grants)
        if problem is not None:
            problems.append(f"{name} on {node}: {problem}")
            continue
        box.cpu -= w.cpu
        box.mem -= w.mem
        box.pods += 1
        for i, m in grants:
            box.free[i] -= m
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.openb.check", description=__doc__.split("\n")[0])
    for name in ("nodes", "pods", "arrivals", "placements"):
        p.add_argument(f"--{name}", type=Path, required=True)
    args = p.parse_args(argv)
    problems = check(args.nodes, args.pods, args.arrivals, args.placements)
    for line in problems[:200]:
        print(line)
    if problems:
        print(f"FAILED: {len(problems)} violation(s)")
        return 1
    print("OK: every rule holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
