"""Pure builders of a session's GPU environment: an allocation's devices in,
environment variables and Docker device requests out. No IO.

This module imports only the standard library and nothing of the project, so
``python -m bench.gpu`` loads it by file path on a GPU machine that has
PyTorch and nvidia-ml-py but no JupyterHub (docs/gpus.md).

Which devices a session sees (``where``):

- ``container`` (Docker): the NVIDIA container toolkit gives the container
  exactly the devices named (by UUID) in ``NVIDIA_VISIBLE_DEVICES`` and in the
  device request, and CUDA inside numbers them 0..n-1. hubgrid sets
  ``CUDA_VISIBLE_DEVICES=0,...,n-1`` explicitly, so an image that sets its own
  value cannot widen or shift the view.
- ``host`` (local processes, Slurm jobs): the process sees the whole node, so
  ``CUDA_VISIBLE_DEVICES`` names its devices -- by UUID when discovery knew
  them, else by NVML index -- and ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` makes
  CUDA's ordinals follow the PCI order NVML's indexes follow (CUDA's default,
  fastest first, can differ).

Fractional enforcement (a share is of ONE device, which the session sees as
device 0), per mode:

- ``mps``: NVIDIA MPS per-client limits, enforced by the node's MPS server:
  ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` (share of the SMs) and
  ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` (``0=<MiB>M``: device memory), with the
  daemon's ``CUDA_MPS_PIPE_DIRECTORY`` / ``CUDA_MPS_LOG_DIRECTORY``. A client
  that cannot reach the daemon runs without limits: the node must be checked.
- ``hami``: HAMi-core limits (``CUDA_DEVICE_MEMORY_LIMIT``,
  ``CUDA_DEVICE_SM_LIMIT``) and ``LD_PRELOAD`` of the library, only when the
  image declares it (label ``HAMI_LABEL``); without it nothing enforces them.
- ``framework``: ``HUBGRID_GPU_MEMORY_FRACTION`` / ``HUBGRID_GPU_MEMORY_BYTES``,
  applied on import of PyTorch and TensorFlow by the start-up hook
  (spawner/gpuhook), and ``XLA_PYTHON_CLIENT_MEM_FRACTION`` for JAX.
  Cooperative: a program that resets the limits, or allocates with a library
  that is not hooked, is not held.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

MODES = ("mps", "hami", "framework")
WHERE = ("container", "host")
MiB = 2**20
HUNDRED = Decimal(100)
#: the image label that declares HAMi-core: its value is the library's path
#: inside the image, e.g. ``LABEL org.hubgrid.hami-core=/usr/local/lib/libvgpu.so``
HAMI_LABEL = "org.hubgrid.hami-core"
#: where the NVIDIA MPS control daemon keeps its pipes and logs by default
MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"
MPS_LOG_DIRECTORY = "/var/log/nvidia-mps"


@dataclass(frozen=True)
class GPU:
    """One allocated device: its NVML index and UUID, the share taken of it
    (1 for a whole device) and the device memory the share may use, in bytes
    (``floor(share * device memory)``; 0 when the device's memory is unknown)."""

    index: int
    share: Decimal
    memory: int = 0
    uuid: str = ""

    @property
    def device_id(self) -> str:
        """How the node's driver names it: the UUID, else the index."""
        return self.uuid or str(self.index)


@dataclass(frozen=True)
class NodeEnforcement:
    """What a node gives its sessions to enforce shares: the MPS daemon's
    directories, and the HAMi-core library path (from the image's label;
    empty when the image declares none)."""

    mps_pipe_directory: str = MPS_PIPE_DIRECTORY
    mps_log_directory: str = MPS_LOG_DIRECTORY
    hami_library: str = ""


def allocation_gpus(rows) -> tuple[GPU, ...]:
    """The GPUs of an allocation as the service records them
    (``[{"index", "uuid", "share", "memory"}]``; ``memory`` is the share's bytes)."""
    return tuple(GPU(int(g["index"]), Decimal(g["share"]), int(g.get("memory") or 0),
                     g.get("uuid") or "") for g in rows)


def share_memory(share: Decimal, device_memory: int) -> int:
    """The bytes a share of a device may use, rounded down (exact)."""
    return int((Decimal(share) * device_memory).to_integral_value(ROUND_FLOOR))


def percent(share: Decimal) -> int:
    return int((share * HUNDRED).to_integral_value(ROUND_FLOOR))


def mib(n: int) -> int:
    return n // MiB


def hami_library(image_labels: dict | None) -> str:
    """The HAMi-core library an image declares (its label), or ''."""
    return ((image_labels or {}).get(HAMI_LABEL) or "").strip()


def visible_devices(gpus: tuple[GPU, ...], where: str = "container") -> dict[str, str]:
    """The variables that make exactly ``gpus`` visible, numbered 0..n-1."""
    if where not in WHERE:
        raise ValueError(f"unknown place {where!r}; use one of {', '.join(WHERE)}")
    if not gpus:
        return {"NVIDIA_VISIBLE_DEVICES": "void", "CUDA_VISIBLE_DEVICES": ""}
    ids = ",".join(g.device_id for g in gpus)
    cuda = ",".join(str(i) for i in range(len(gpus))) if where == "container" else ids
    return {"NVIDIA_VISIBLE_DEVICES": ids, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "CUDA_VISIBLE_DEVICES": cuda}


def mps_directories(node: NodeEnforcement) -> dict[str, str]:
    return {"CUDA_MPS_PIPE_DIRECTORY": node.mps_pipe_directory,
            "CUDA_MPS_LOG_DIRECTORY": node.mps_log_directory}


def share_environment(g: GPU, mode: str, node: NodeEnforcement = NodeEnforcement()) -> dict[str, str]:
    """The caps of a share ``g`` (the session's device 0) in ``mode``."""
    if mode == "mps":
        env = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(percent(g.share)),
               **mps_directories(node)}
        if g.memory:
            env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = f"0={mib(g.memory)}M"
        return env
    if mode == "hami":
        env = {"CUDA_DEVICE_SM_LIMIT": str(percent(g.share))}
        if g.memory:
            env["CUDA_DEVICE_MEMORY_LIMIT"] = f"{mib(g.memory)}m"
        if node.hami_library:
            env["LD_PRELOAD"] = node.hami_library
        return env
    fraction = str(g.share.normalize())
    # JAX: its pool may grow to the share, taken as used (preallocating the
    # whole share at start fails when the other sessions' CUDA contexts
    # already hold part of the device)
    env = {"HUBGRID_GPU_MEMORY_FRACTION": fraction, "XLA_PYTHON_CLIENT_MEM_FRACTION": fraction,
           "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    if g.memory:
        env["HUBGRID_GPU_MEMORY_BYTES"] = str(g.memory)
    return env


def gpu_environment(gpus: tuple[GPU, ...], mode: str, where: str = "container",
                    node: NodeEnforcement = NodeEnforcement()) -> dict[str, str]:
    """The environment that exposes exactly ``gpus`` and enforces shares."""
    if mode not in MODES:
        raise ValueError(f"unknown GPU sharing mode {mode!r}; use one of {', '.join(MODES)}")
    env = visible_devices(gpus, where)
    if gpus and mode == "mps":
        # whole devices too: on an MPS node every GPU process is the daemon's
        # client (in EXCLUSIVE_PROCESS mode others cannot open the device)
        env.update(mps_directories(node))
    shared = [g for g in gpus if g.share < 1]
    if not shared:
        return env
    if len(gpus) != 1:
        raise ValueError("a share is of ONE device: fractional allocations hold one GPU")
    return {**env, **share_environment(shared[0], mode, node)}


def device_requests(gpus: tuple[GPU, ...]) -> list[dict]:
    """Docker device requests for exactly the allocated devices (by UUID
    where known: indexes can change order across reboots, UUIDs cannot)."""
    if not gpus:
        return []
    return [{
        "Driver": "nvidia",
        "DeviceIDs": [g.device_id for g in gpus],
        "Capabilities": [["gpu"]],
    }]
