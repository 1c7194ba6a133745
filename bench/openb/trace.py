"""Reading the openb CSV files into the scheduler's own values.

Pods follow the simulator's conversion (PROTOCOL.md §1): ``cpu_milli`` and
``memory_mib`` as they are; GPUs only when ``num_gpu != 0``, with
``gpu_milli`` clamped to 1000 and a ``gpu_milli`` of 0 meaning no GPU;
``gpu_spec`` split on ``|`` with empty parts dropped (ignored for CPU-only
pods). Columns beyond these (times, qos, phase) are not used, and a file
may lack ``gpu_spec`` altogether (multigpu30 does).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from quota_service.scheduling.placement import GPU_MILLI, Node, Request


@dataclass(frozen=True)
class Pod:
    name: str
    request: Request


def read_pods(path: str | Path) -> list[Pod]:
    with open(path, newline="") as f:
        return [pod_from_row(row) for row in csv.DictReader(f)]


def pod_from_row(row: dict[str, str]) -> Pod:
    num_gpu = int(row["num_gpu"])
    milli = int(row["gpu_milli"]) if num_gpu else 0
    milli = GPU_MILLI if milli > GPU_MILLI else max(milli, 0)
    if not milli:
        num_gpu = 0
    spec = (row.get("gpu_spec") or "") if num_gpu else ""
    models = frozenset(part for part in spec.split("|") if part)
    try:
        request = Request(int(row["cpu_milli"]), int(row["memory_mib"]), num_gpu, milli, models)
    except ValueError as e:
        raise ValueError(f"pod {row['name']}: {e}") from None
    return Pod(row["name"], request)


def read_nodes(path: str | Path, ranks: dict[str, int] | None = None) -> list[Node]:
    """The nodes, empty, with their tie-break ranks (default: file order)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    nodes = []
    for order, row in enumerate(rows):
        rank = order if ranks is None else ranks[row["sn"]]
        nodes.append(
            Node.empty(
                row["sn"], int(row["cpu_milli"]), int(row["memory_mib"]), int(row["gpu"]),
                row["model"] if int(row["gpu"]) else "", rank=rank,
            )
        )
    return nodes


def base_name(pod: str) -> str:
    """The original pod of a resampled copy: ``X#k`` -> ``X``."""
    return pod.split("#", 1)[0]
