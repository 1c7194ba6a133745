"""The openb benchmark end to end on a small excerpt, checked by its own checker.

bench/ is a folder of the repository, not an installed package: it imports
when the tests run from the repository root (``python -m pytest``).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # plain `pytest` does not put the root on the path
    sys.path.insert(0, str(REPO))

from bench.openb.__main__ import main  # noqa: E402
from bench.openb.check import check  # noqa: E402
from bench.openb.metric import allocation_columns  # noqa: E402
from bench.openb.trace import read_pods  # noqa: E402
from bench.openb.workload import build_arrivals  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
NODES = FIXTURES / "openb_nodes_40.csv"
PODS = FIXTURES / "openb_pods_300.csv"


def rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("openb")
    assert main(["--nodes", str(NODES), "--pods", str(PODS), "--seed", "7", "--out", str(out), "--baselines"]) == 0
    return out


def test_a_seeded_run_writes_arrivals_and_placements_that_obey_every_rule(run_dir):
    arrivals = rows(run_dir / "arrivals.csv")
    placements = rows(run_dir / "placements.csv")
    assert arrivals[0] == ["pod"] and placements[0] == ["pod", "node", "gpus"]
    assert len(arrivals) - 1 > 300  # tuned up to 130 % with clones X#k
    assert any("#" in name for (name,) in arrivals[1:])
    assert 0 < len(placements) - 1 < len(arrivals) - 1
    for name in ("placements.csv", "placements.first-fit.csv", "placements.best-fit.csv"):
        assert check(NODES, PODS, run_dir / "arrivals.csv", run_dir / name) == [], name


def test_replaying_the_arrivals_gives_the_same_placements(run_dir, tmp_path):
    args = ["--nodes", str(NODES), "--pods", str(PODS), "--arrivals", str(run_dir / "arrivals.csv")]
    assert main([*args, "--rank-seed", "7", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "placements.csv").read_bytes() == (run_dir / "placements.csv").read_bytes()
    assert (tmp_path / "arrivals.csv").read_bytes() == (run_dir / "arrivals.csv").read_bytes()


def test_several_seeds_print_mean_and_sd_per_workload(tmp_path, capsys):
    argv = ["--nodes", str(NODES), "--pods", str(PODS), "--seeds", "1-2", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mean ± sd over 2 run(s)" in out and "openb_pods_300" in out
    assert (tmp_path / "openb_pods_300" / "seed-2" / "placements.csv").exists()


def test_the_arrival_sequence_follows_the_protocol():
    pods = read_pods(PODS)
    arrivals = build_arrivals(pods, 200 * 1000, seed=3)
    assert arrivals == build_arrivals(pods, 200 * 1000, seed=3)
    originals, clones = arrivals[:300], arrivals[300:]
    assert sorted(p.name for p in originals) == sorted(p.name for p in pods)
    assert [p.name.split("#")[1] for p in clones] == [str(k) for k in range(len(clones))]
    demand = sum(p.request.gpu_demand for p in arrivals)
    assert 260_000 - 1000 < demand <= 260_000 + 7000


def test_tune_down_removes_pods_until_the_target():
    pods = read_pods(PODS)
    arrivals = build_arrivals(pods, 10 * 1000, seed=3)
    assert sum(p.request.gpu_demand for p in arrivals) <= 13_000
    assert not any("#" in p.name for p in arrivals)


def test_metric_reproduces_a_hand_computed_example():
    # 2 GPUs = 2000 milli; a = round(A / 2 / 10) half-to-even, y = round(U / 2 / 10, 2)
    arrived = [1980, 2000, 2010, 2030, 2600, 2620]
    allocated = [1900, 1950, 1950, 1960, 1990, 2000]
    # a:         99    100   100 (100.5) 102 (101.5) 130  131
    cols = allocation_columns(arrived, allocated, 2, [99, 100, 101, 129, 130, 120])
    # 101 and 129 are empty: the means over 100..102 = (97.5 + 97.5 + 98.0) / 3 and 128..130
    assert cols == {99: 95.0, 100: 97.5, 101: 97.67, 129: 99.5, 130: 99.5, 120: None}


# ---------------------------------------------------------------- the checker


@pytest.fixture
def tiny(tmp_path) -> dict[str, Path]:
    """Two one-GPU nodes (models A and B) and three pods; p3 cannot fit after p1, p2."""
    return {
        "nodes": write(tmp_path / "nodes.csv", [
            "sn,cpu_milli,memory_mib,gpu,model", "n1,10000,10000,1,A", "n2,10000,10000,1,B",
        ]),
        "pods": write(tmp_path / "pods.csv", [
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec",
            "p1,1000,1000,1,1000,A", "p2,1000,1000,1,600,", "p3,1000,1000,1,600,",
        ]),
        "arrivals": write(tmp_path / "arrivals.csv", ["pod", "p1", "p2", "p3"]),
    }


def check_tiny(tiny, tmp_path, lines: list[str]) -> list[str]:
    placements = write(tmp_path / "placements.csv", ["pod,node,gpus", *lines])
    return check(tiny["nodes"], tiny["pods"], tiny["arrivals"], placements)


def test_checker_accepts_valid_placements(tiny, tmp_path):
    assert check_tiny(tiny, tmp_path, ["p1,n1,0:1000", "p2,n2,0:600"]) == []


@pytest.mark.parametrize(
    "lines, complaint",
    [
        (["p1,n1,0:1000", "p2,n2,0:600", "p3,n2,0:600"], "has 400 free"),
        (["p1,n2,0:1000", "p2,n1,0:600"], "model B not in ['A']"),
        (["p1,n1,0:1000"], "p2: not placed, but n2 could take it"),
        (["p2,n2,0:600", "p1,n1,0:1000"], "out of arrival order"),
        (["p1,n1,0:1000", "p2,n2,0:600", "p9,n2,0:100"], "never arrived"),
        (["p1,n1,0:1000", "p2,n2,0:500"], "granted 500 milli"),
        (["p1,n1,", "p2,n2,0:600"], "0 GPU grant(s)"),
    ],
    ids=["over capacity", "wrong model", "missing pod that fits", "out of order", "unknown pod",
         "wrong milli", "no GPU granted"],
)
def test_checker_rejects_corrupted_placements(tiny, tmp_path, lines, complaint):
    problems = check_tiny(tiny, tmp_path, lines)
    assert any(complaint in p for p in problems), problems


def test_checker_rejects_a_real_run_with_a_placed_pod_dropped(run_dir, tmp_path):
    lines = (run_dir / "placements.csv").read_text().splitlines()
    write(tmp_path / "placements.csv", [lines[0], *lines[2:]])
    problems = check(NODES, PODS, run_dir / "arrivals.csv", tmp_path / "placements.csv")
    dropped = lines[1].split(",")[0]
    assert any(p.startswith(f"{dropped}: not placed, but") for p in problems), problems[:3]
