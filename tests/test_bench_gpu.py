"""python -m bench.gpu: on a machine without an NVIDIA GPU it says so and
exits 0 (this machine); its sessions' orchestration (the project's
discovery and builders, the hook on the sessions' path, barriers, the
report) runs against the fake torch of tests/fixtures/fake_gpu, which
records what it is asked and holds no cap. So these tests check the bench's
own part: each session gets its mode's environment and the hook, the hook
asks torch for the share, and the report states what each session really
allocated against its cap. Whether PyTorch then holds the cap is what the
bench measures on a real GPU (docs/gpus.md)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FAKES = REPO / "tests" / "fixtures" / "fake_gpu"
GiB = 2**30


def test_without_a_gpu_it_says_so_and_exits_0(tmp_path):
    out = subprocess.run([sys.executable, "-m", "bench.gpu", "--json", str(tmp_path / "r.json")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "no NVIDIA GPU on this machine" in out.stdout
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["gpus"] == [] and result["result"] == "no NVIDIA GPU"


def test_it_imports_nothing_beyond_the_stdlib_torch_and_pynvml():
    code = ("import sys, bench.gpu.__main__ as m\n"
            "bad = [n for n in ('jupyterhub', 'traitlets', 'tornado', 'sqlalchemy', 'spawner',"
            " 'quota_service', 'pydantic', 'docker') if n in sys.modules]\n"
            "assert not bad, bad\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    """run_all's modes on a fake 8 GiB device, the report it prints, and
    what the fake torch of each session process was asked."""
    record = tmp_path_factory.mktemp("bench") / "record.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", str(FAKES))
        mp.setenv("FAKE_GPU_MEMORY", str(8 * GiB))
        mp.setenv("FAKE_GPU_RECORD", str(record))
        mp.setenv("PATH", "/usr/bin:/bin")  # no nvidia-cuda-mps-control
        from bench.gpu.__main__ import report, run_all

        dev = {"index": 0, "uuid": "GPU-1234", "model": "Fake", "memory": 8 * GiB}
        modes = run_all(dev, Namespace(seconds=0.2, hami_library=""))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            report(modes)
    asked: dict[int, list[dict]] = {}
    for line in record.read_text().splitlines():
        event = json.loads(line)
        asked.setdefault(event.pop("pid"), []).append(event)
    return modes, printed.getvalue(), asked


def caps_before_first_allocation(events: list[dict]) -> list[tuple]:
    first = next(i for i, e in enumerate(events) if e["event"] == "alloc")
    return [(e["fraction"], e["device"]) for e in events[:first]
            if e["event"] == "set_per_process_memory_fraction"]


def test_framework_sessions_carry_the_hook_which_asks_torch_for_their_share(fake_run):
    modes, _, asked = fake_run
    shared = modes["framework"]
    assert shared["cap"] == 4 * GiB
    assert len(shared["sessions"]) == 2
    for s in shared["sessions"]:
        assert "error" not in s, s
        assert s["hook_installed"] is True
        assert s["env"]["HUBGRID_GPU_MEMORY_FRACTION"] == "0.5"
        assert s["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-1234"
        assert caps_before_first_allocation(asked[s["pid"]]) == [(0.5, 0)]


def test_the_whole_device_session_gets_no_cap(fake_run):
    modes, _, asked = fake_run
    [whole] = modes["none"]["sessions"]
    assert whole["devices"][0]["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert whole["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-1234"
    assert "HUBGRID_GPU_MEMORY_FRACTION" not in whole["env"]
    assert caps_before_first_allocation(asked[whole["pid"]]) == []
    assert whole["memory"]["allocated"] == 8 * GiB
    assert whole["throughput"]["iterations"] > 0


def test_the_report_states_what_was_allocated_not_what_the_cap_promised(fake_run):
    """The fake torch holds no cap, so each 0.5 session allocated the whole
    fake device: the bench must say so, as it would of a framework (or a
    hook) that failed to hold the share on a real GPU."""
    modes, printed, _ = fake_run
    for s in modes["framework"]["sessions"]:
        assert s["memory"]["allocated"] == 8 * GiB
    assert printed.count("allocated 8.00 GiB against a cap of 4.00 GiB (200.0%, OVER THE CAP)") == 2
    assert "allocated 8.00 GiB against a cap of 8.00 GiB (100.0%, within the cap)" in printed
    assert modes["mps"] == {"unavailable": "nvidia-cuda-mps-control not found on PATH"}
    assert "mps: not available (nvidia-cuda-mps-control not found on PATH)" in printed
    assert "unavailable" in modes["hami"]


def test_a_session_that_dies_does_not_hold_up_its_sibling(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{FAKES}")
    # session a's torch kills its process; session b's is the fake torch
    (tmp_path / "torch.py").write_text(f"""
import importlib.util, os, signal, sys
if '"name": "a"' in sys.argv[1]:
    os.kill(os.getpid(), signal.SIGKILL)
spec = importlib.util.spec_from_file_location("torch", {str(FAKES / "torch" / "__init__.py")!r})
module = importlib.util.module_from_spec(spec)
sys.modules["torch"] = module
spec.loader.exec_module(module)
""")
    from bench.gpu.__main__ import run_sessions

    a, b = run_sessions({}, ["a", "b"], {"alloc": True, "seconds": 0.1})
    assert a["error"].startswith("exit -9")
    assert "error" not in b, b
    assert b["memory"]["allocated"] == 8 * GiB  # b's turn came: a was marked as done
    assert b["throughput"]["iterations"] > 0
