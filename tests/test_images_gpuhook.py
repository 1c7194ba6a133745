"""The session image carries the framework start-up hook (spawner/gpuhook,
docs/gpus.md) in its venv: a Python started in a session with a GPU share
caps a framework it imports; without a share nothing is installed. A
minimal fake ``torch`` (no GPU here) prints what the hook asked of it."""

from __future__ import annotations

from test_images_lab import engine, run  # noqa: F401 (the fixture)

FAKE_TORCH = """mkdir -p /tmp/fake/torch && cat > /tmp/fake/torch/__init__.py <<'PY'
class _Cuda:
    def device_count(self):
        return 1
    def _lazy_call(self, fn):
        fn()
    def set_per_process_memory_fraction(self, fraction, device):
        print("capped", fraction, device)
cuda = _Cuda()
PY
"""


def test_a_session_with_a_share_caps_torch_on_import(engine):  # noqa: F811
    code, out = run(engine, FAKE_TORCH + "HUBGRID_GPU_MEMORY_FRACTION=0.25 PYTHONPATH=/tmp/fake "
                                         "python -c 'import torch'")
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "capped 0.25 0", out


def test_without_a_share_the_hook_does_nothing(engine):  # noqa: F811
    code, out = run(engine, FAKE_TORCH + "PYTHONPATH=/tmp/fake python -c "
                                         "'import sys, torch; print(sorted(type(f).__name__ "
                                         "for f in sys.meta_path if type(f).__name__ == \"CapFinder\"))'")
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "[]", out
