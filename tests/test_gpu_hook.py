"""The framework start-up hook (spawner/gpuhook): on import of PyTorch or
TensorFlow it asks the framework for the session's memory share, without
importing them itself. Fake ``torch`` / ``tensorflow`` modules
(tests/fixtures/fake_gpu: no GPU here) record what they were asked and
enforce nothing, so each test checks the hook's own part: the right call,
on every device, before the first allocation. That the frameworks then hold
the cap is measured on a real GPU (``python -m bench.gpu``, docs/gpus.md).
Each case runs in a fresh interpreter that processes the hook's .pth file
the way site-packages does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spawner.gpuhook.installer import FILES, install

REPO = Path(__file__).resolve().parent.parent
FAKES = REPO / "tests" / "fixtures" / "fake_gpu"
HOOK_DIR = REPO / "spawner" / "gpuhook"


def run(code: str, tmp_path: Path, site_dir: Path = HOOK_DIR, **env) -> list[dict]:
    """``code`` in a fresh Python whose site dir holds the hook; the fakes'
    record."""
    record = tmp_path / "record.jsonl"
    record.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("HUBGRID_GPU_", "XLA_PYTHON_CLIENT_"))}
    full = {**clean, "PYTHONPATH": str(FAKES), "FAKE_GPU_RECORD": str(record), **env}
    prog = f"import site; site.addsitedir({str(site_dir)!r})\n{code}"
    # -S: no site-packages of this interpreter (a hook installed there stays out)
    out = subprocess.run([sys.executable, "-S", "-c", prog], env=full, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    if not record.exists():
        return []
    return [{k: v for k, v in json.loads(line).items() if k != "pid"}
            for line in record.read_text().splitlines()]


def test_torch_gets_the_fraction_when_cuda_starts_before_the_first_allocation(tmp_path):
    events = run("import torch\n"
                 "assert torch.cuda.fraction is None, 'CUDA must not start at import'\n"
                 "torch.empty(1, device='cuda')\n", tmp_path,
                 HUBGRID_GPU_MEMORY_FRACTION="0.25")
    assert events == [{"event": "import torch"}, {"event": "cuda init"},
                      {"event": "set_per_process_memory_fraction", "fraction": 0.25, "device": 0},
                      {"event": "alloc", "bytes": 1}]


def test_every_visible_device_is_capped_before_torch_allocates_on_any(tmp_path):
    """The fake holds no cap: what is checked is that the hook asked torch
    for the share on each device before the program's first allocation,
    which is what makes PyTorch's allocator refuse beyond it."""
    events = run("import torch\n"
                 "torch.empty(2 * 2**30, device='cuda:1')\n"
                 "torch.empty(2**30, device='cuda:0')\n", tmp_path,
                 HUBGRID_GPU_MEMORY_FRACTION="0.25", FAKE_GPU_COUNT="3")
    first_alloc = next(i for i, e in enumerate(events) if e["event"] == "alloc")
    asked = [(e["fraction"], e["device"]) for e in events[:first_alloc]
             if e["event"] == "set_per_process_memory_fraction"]
    assert asked == [(0.25, 0), (0.25, 1), (0.25, 2)]
    assert not [e for e in events[first_alloc:] if e["event"] == "set_per_process_memory_fraction"]


def test_tensorflow_gets_a_memory_limit_in_mib(tmp_path):
    events = run("import tensorflow\n", tmp_path, HUBGRID_GPU_MEMORY_FRACTION="0.5",
                 HUBGRID_GPU_MEMORY_BYTES=str(40 * 2**30 + 123))
    assert events == [{"event": "import tensorflow"},
                      {"event": "set_logical_device_configuration",
                       "device": "/physical_device:GPU:0", "memory_limit": [40 * 1024]}]


def test_jax_gets_its_fraction_before_it_is_imported(tmp_path):
    (tmp_path / "jax.py").write_text("import os\nFRACTION = os.environ.get('XLA_PYTHON_CLIENT_MEM_FRACTION')\n")
    run(f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import jax\nassert jax.FRACTION == '0.3', jax.FRACTION\n", tmp_path,
        HUBGRID_GPU_MEMORY_FRACTION="0.3")


def test_the_hook_imports_no_framework_itself(tmp_path):
    events = run("import sys\nimport json\n"
                 "assert 'torch' not in sys.modules and 'tensorflow' not in sys.modules\n"
                 "assert any(type(f).__name__ == 'CapFinder' for f in sys.meta_path)\n",
                 tmp_path, HUBGRID_GPU_MEMORY_FRACTION="0.5")
    assert events == []


@pytest.mark.parametrize("fraction", [None, "1", "0", "abc"])
def test_without_a_share_the_hook_stays_out_of_the_way(tmp_path, fraction):
    env = {"HUBGRID_GPU_MEMORY_FRACTION": fraction} if fraction else {}
    events = run("import sys\n"
                 "assert not any(type(f).__name__ == 'CapFinder' for f in sys.meta_path)\n"
                 "import torch\ntorch.empty(1)\n", tmp_path, **env)
    assert "set_per_process_memory_fraction" not in [e["event"] for e in events]


def test_a_failing_framework_call_does_not_break_the_import(tmp_path):
    (tmp_path / "tensorflow.py").write_text("class config:\n    @staticmethod\n"
                                            "    def list_physical_devices(kind):\n"
                                            "        raise RuntimeError('no driver')\n")
    record = tmp_path / "record.jsonl"
    out = subprocess.run(
        [sys.executable, "-S", "-c", f"import site; site.addsitedir({str(HOOK_DIR)!r})\n"
         f"import sys; sys.path.insert(0, {str(tmp_path)!r})\nimport tensorflow\nprint('imported')"],
        env={**os.environ, "HUBGRID_GPU_MEMORY_FRACTION": "0.5",
             "HUBGRID_GPU_MEMORY_BYTES": str(2**30), "FAKE_GPU_RECORD": str(record)},
        capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "imported"
    assert "could not apply the GPU memory share to tensorflow: no driver" in out.stderr


def test_install_copies_the_hook_into_a_site_directory(tmp_path):
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    assert install(str(site_dir)) == site_dir
    assert sorted(p.name for p in site_dir.iterdir()) == sorted(FILES)
    events = run("import torch\ntorch.empty(1)\n", tmp_path, site_dir=site_dir,
                 HUBGRID_GPU_MEMORY_FRACTION="0.5")
    assert events[-2:] == [{"event": "set_per_process_memory_fraction", "fraction": 0.5, "device": 0},
                           {"event": "alloc", "bytes": 1}]
