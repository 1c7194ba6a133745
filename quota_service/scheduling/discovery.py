"""GPU discovery on the local node with NVML (nvidia-ml-py).

A machine without an NVIDIA driver simply has no GPUs: NVML failing to
initialise is an answer, never a crash.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def local_gpus(nvml=None) -> list[dict]:
    """``[{"index": 0, "uuid": "GPU-...", "model": "A100", "memory": bytes}, ...]``
    or []: NVML's index (PCI bus order), the device's UUID (stable across
    reboots, what Docker device requests and CUDA_VISIBLE_DEVICES name), its
    model and its total memory in bytes."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency
            return []
    try:
        nvml.nvmlInit()
    except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        log.info("no NVIDIA GPUs on this node (NVML: %s)", e)
        return []
    try:
        out = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            name = nvml.nvmlDeviceGetName(h)
            if isinstance(name, bytes):
                name = name.decode()
            model = name.replace("NVIDIA ", "").replace(" ", "-")
            uuid = nvml.nvmlDeviceGetUUID(h)
            if isinstance(uuid, bytes):
                uuid = uuid.decode()
            out.append({"index": i, "uuid": uuid, "model": model,
                        "memory": int(nvml.nvmlDeviceGetMemoryInfo(h).total)})
        return out
    finally:
        nvml.nvmlShutdown()
