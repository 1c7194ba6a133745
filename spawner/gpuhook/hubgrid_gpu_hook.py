"""hubgrid's framework start-up hook: applies a session's GPU memory share to
PyTorch, TensorFlow and JAX when a program imports them, without importing
them itself.

Installed next to ``hubgrid-gpu-hook.pth`` in an interpreter's site-packages
(the session image does; ``python -m spawner.gpuhook install`` does it for
the Python of local sessions), so every Python start runs :func:`install`.
With no ``HUBGRID_GPU_MEMORY_FRACTION`` in the environment (no share) it does
nothing. Otherwise it puts a finder first on ``sys.meta_path`` that, when
``torch`` / ``tensorflow`` / ``jax`` is imported, lets the normal import run
and then applies the cap:

- torch: ``torch.cuda.set_per_process_memory_fraction(fraction, i)`` for
  every visible device, queued with ``torch.cuda._lazy_call`` so CUDA is not
  initialised at import (a fork after ``import torch`` stays safe);
- tensorflow: each GPU gets one logical device with
  ``memory_limit = HUBGRID_GPU_MEMORY_BYTES`` in MiB (before TensorFlow
  initialises its devices);
- jax: ``XLA_PYTHON_CLIENT_MEM_FRACTION`` is set before jax runs (the
  spawner sets it too).

Cooperative: a program may undo it. Standard library only, no project
imports (this file is copied into images as it is).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from decimal import Decimal, InvalidOperation

TARGETS = ("torch", "tensorflow", "jax")
MiB = 2**20


def _fraction() -> Decimal | None:
    raw = os.environ.get("HUBGRID_GPU_MEMORY_FRACTION", "")
    try:
        f = Decimal(raw)
    except InvalidOperation:
        return None
    return f if 0 < f < 1 else None


def apply_torch(torch, fraction: Decimal) -> None:
    cuda = torch.cuda

    def cap():
        for i in range(cuda.device_count()):
            cuda.set_per_process_memory_fraction(float(fraction), i)

    lazy = getattr(cuda, "_lazy_call", None)
    (lazy or (lambda fn: fn()))(cap)


def apply_tensorflow(tf, fraction: Decimal) -> None:
    limit = int(os.environ.get("HUBGRID_GPU_MEMORY_BYTES") or 0) // MiB
    if not limit:
        return  # the device's memory is unknown: TensorFlow takes a limit in MiB
    config = tf.config
    for gpu in config.list_physical_devices("GPU"):
        config.set_logical_device_configuration(
            gpu, [config.LogicalDeviceConfiguration(memory_limit=limit)])


APPLY = {"torch": apply_torch, "tensorflow": apply_tensorflow}


class _CappingLoader(importlib.abc.Loader):
    """Runs the real loader, then applies the cap to the module."""

    def __init__(self, loader, name: str, fraction: Decimal):
        self.loader, self.name, self.fraction = loader, name, fraction

    def __getattr__(self, attr):  # get_resource_reader, is_package, ...
        return getattr(self.loader, attr)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        try:
            APPLY[self.name](module, self.fraction)
        except Exception as e:  # never break the user's import
            print(f"hubgrid: could not apply the GPU memory share to {self.name}: {e}",
                  file=sys.stderr)


class CapFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the frameworks it caps."""

    def __init__(self, fraction: Decimal):
        self.fraction = fraction
        self.done: set[str] = set()

    def find_spec(self, name, path=None, target=None):
        if name not in TARGETS or name in self.done:
            return None
        self.done.add(name)
        if name == "jax":
            os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", str(self.fraction))
            return None
        spec = importlib.util.find_spec(name)  # the other finders (we answer once)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _CappingLoader(spec.loader, name, self.fraction)
        return spec


def install() -> bool:
    """Put the finder first on sys.meta_path when this process has a share."""
    fraction = _fraction()
    if fraction is None or any(isinstance(f, CapFinder) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, CapFinder(fraction))
    return True
