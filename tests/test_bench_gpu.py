"""python -m bench.gpu: on a machine without an NVIDIA GPU it says so and
exits 0 (this machine); its sessions' orchestration (the project's
discovery and builders, barriers, the report) runs against the fake torch
of tests/fixtures/fake_gpu, which enforces a per-process fraction the way
PyTorch does. The real figures come from a real GPU (docs/gpus.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

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


def test_two_half_sessions_are_held_to_their_caps_with_the_fake_torch(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", str(FAKES))
    monkeypatch.setenv("FAKE_GPU_MEMORY", str(8 * GiB))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no nvidia-cuda-mps-control
    from bench.gpu.__main__ import report, run_all

    dev = {"index": 0, "uuid": "GPU-1234", "model": "Fake", "memory": 8 * GiB}
    modes = run_all(dev, Namespace(seconds=0.2, hami_library=""))
    whole = modes["none"]["sessions"][0]
    assert whole["devices"][0]["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert whole["memory"]["allocated"] == 8 * GiB
    assert whole["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-1234"
    assert whole["throughput"]["iterations"] > 0
    shared = modes["framework"]
    assert shared["cap"] == 4 * GiB
    for s in shared["sessions"]:
        assert s["hook_installed"] is True
        assert s["memory"]["allocated"] == 4 * GiB  # held by the hook's fraction
        assert s["env"]["HUBGRID_GPU_MEMORY_FRACTION"] == "0.5"
    assert modes["mps"] == {"unavailable": "nvidia-cuda-mps-control not found on PATH"}
    assert "unavailable" in modes["hami"]
    report(modes)
    printed = capsys.readouterr().out
    assert "mps: not available (nvidia-cuda-mps-control not found on PATH)" in printed
    assert "allocated 4.00 GiB against a cap of 4.00 GiB (100.0%, within the cap)" in printed


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
