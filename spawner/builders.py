"""Pure builders: an allocation in, a container's settings out. No IO.

Like KubeSpawner's ``make_pod``: the spawner resolves its settings into a
frozen ``SessionSpec`` and calls the builders once; tests compare their
output with plain dicts.

The GPU environment and device requests are built by spawner/gpuenv.py
(device identity, renumbering and the caps of each sharing mode).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from .gpuenv import GPU, MODES, NodeEnforcement, device_requests, gpu_environment

__all__ = ["GPU", "MODES", "NodeEnforcement", "device_requests", "gpu_environment",
           "Mount", "SessionSpec", "container_config", "host_config", "labels",
           "slurm_gres", "slurm_request", "vfolder_mounts"]

MiB = 2**20
#: environment variables only the GPU builders set in a container
GPU_VARIABLES = ("CUDA_", "NVIDIA_", "HUBGRID_GPU_", "XLA_PYTHON_CLIENT_", "LD_PRELOAD")


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = True
    #: the bind's propagation ("": Docker's default, rprivate); ``rslave``:
    #: mounts made later under ``source`` on the node appear in the container
    propagation: str = ""


@dataclass(frozen=True)
class SessionSpec:
    """Everything a container of one session needs, already resolved."""

    allocation: str
    user: str
    domain: str
    project: str
    image: str
    cpu: Decimal
    mem: int
    gpus: tuple[GPU, ...] = ()
    gpu_mode: str = "framework"
    #: give the container the devices (False: declared GPUs with no driver)
    attach_gpus: bool = True
    mounts: tuple[Mount, ...] = ()
    uid: int = 1000
    gid: int = 100
    pids_limit: int = 4096
    env: tuple[tuple[str, str], ...] = field(default=())
    #: the node's MPS directories and the image's HAMi-core library
    enforcement: NodeEnforcement = NodeEnforcement()


def labels(spec: SessionSpec) -> dict[str, str]:
    return {
        "hubgrid.allocation": spec.allocation,
        "hubgrid.user": spec.user,
        "hubgrid.domain": spec.domain,
        "hubgrid.project": spec.project,
    }


def uses_mps(spec: SessionSpec) -> bool:
    """An MPS client: GPUs on a node whose sharing mode is ``mps``."""
    return spec.gpu_mode == "mps" and bool(spec.gpus)


def host_config(spec: SessionSpec) -> dict:
    """Docker HostConfig: the allocation's limits, no privileges, only the
    allowed mounts, and an IPC namespace of its own.

    ``IpcMode: private`` gives every session, MPS clients included, its own
    System V IPC, POSIX message queues and /dev/shm, whatever the engine's
    ``default-ipc-mode``; no other container can join it. Sessions all run
    as the same uid, so a shared /dev/shm would let each read the others'
    shared memory. An MPS client gets one thing of the node's more: the MPS
    pipe directory (read-write: the client connects to the control daemon
    and the server through the sockets and pipes in it). docs/gpus.md says
    what this leaves shared and what it requires of the node."""
    mounts = [{"Type": "bind", "Source": m.source, "Target": m.target, "ReadOnly": m.read_only,
               **({"BindOptions": {"Propagation": m.propagation}} if m.propagation else {})}
              for m in spec.mounts]
    if uses_mps(spec):
        pipe = spec.enforcement.mps_pipe_directory
        mounts.append({"Type": "bind", "Source": pipe, "Target": pipe, "ReadOnly": False})
    return {
        "NanoCpus": int(spec.cpu * 10**9),
        "Memory": spec.mem,
        "MemorySwap": spec.mem,  # no swap beyond the memory limit
        "PidsLimit": spec.pids_limit,
        "Privileged": False,
        "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges"],
        "DeviceRequests": device_requests(spec.gpus) if spec.attach_gpus else [],
        "Mounts": mounts,
        "IpcMode": "private",
    }


def vfolder_mounts(mounts, root: str) -> tuple[Mount, ...]:
    """Bind mounts of a session's vfolders, from the service's allocation
    ``mounts`` (``[{"name", "path", "mode"}]``): each folder at
    ``<root>/<name>`` (or its ``target``: a replica's model folder at
    ``/models``), read-only unless its mode is ``rw``. The service
    validated the names; a name that could leave ``root`` is refused here
    too (ValueError), as is a mount point used twice."""
    if not posixpath.isabs(root):
        raise ValueError(f"vfolder mount root {root!r} must be an absolute path")
    out, seen = [], set()
    for m in mounts:
        name = m["name"]
        if not name or "/" in name or "\0" in name or name in (".", ".."):
            raise ValueError(f"vfolder name {name!r} cannot be a mount point")
        if m["mode"] not in ("ro", "rw"):
            raise ValueError(f"vfolder {name!r}: mode {m['mode']!r} is neither ro nor rw")
        if name in seen:
            raise ValueError(f"two vfolders would be mounted at {name!r}")
        target = m.get("target") or posixpath.join(root, name)  # a replica's /models
        if not posixpath.isabs(target) or target in seen:
            raise ValueError(f"vfolder {name!r} cannot be mounted at {target!r}")
        seen.add(name)
        seen.add(target)
        out.append(Mount(m["path"], target, read_only=m["mode"] != "rw"))
    return tuple(out)


def container_config(spec: SessionSpec) -> dict:
    """The container's create body (less command and networking, which the
    spawner owns)."""
    # the GPU variables come from the allocation alone: none from elsewhere
    # (a user's env, the host-side values of the mixin) survives
    env = {**{k: v for k, v in spec.env if not k.startswith(GPU_VARIABLES)},
           **gpu_environment(spec.gpus, spec.gpu_mode, "container", spec.enforcement)}
    return {
        "Image": spec.image,
        "User": f"{spec.uid}:{spec.gid}",
        "Env": [f"{k}={v}" for k, v in sorted(env.items())],
        "Labels": labels(spec),
        "HostConfig": host_config(spec),
    }


def slurm_gres(gpus: tuple[GPU, ...], shards_per_gpu: int) -> str:
    """The ``--gres`` of an allocation: ``gpu:N`` for whole devices, or
    ``shard:K`` for a share of one (K of the ``shards_per_gpu`` shards that
    slurm.conf declares per GPU; at least one). Only with ``gpu_gres =
    "count"``: Slurm then counts the devices, the ledger still names them."""
    if not gpus:
        return ""
    shared = [g for g in gpus if g.share < 1]
    if not shared:
        return f"gpu:{len(gpus)}"
    if len(gpus) != 1:
        raise ValueError("a share is of ONE device: fractional allocations hold one GPU")
    shards = int((shared[0].share * shards_per_gpu).to_integral_value(ROUND_FLOOR))
    return f"shard:{max(shards, 1)}"


SLURM_GPU_GRES = ("none", "count")


def slurm_request(cpu: Decimal, mem: int, gpus: tuple[GPU, ...], partition: str,
                  shards_per_gpu: int = 100, node: str = "",
                  gpu_gres: str = "none") -> dict[str, str]:
    """batchspawner's ``req_*`` values for an allocation. Slurm counts whole
    CPUs and MiB: a fractional cpu grant is rounded up (the job may use a
    little more than granted, never less), memory rounded up to MiB.

    The ledger is the one truth of GPUs: a job with GPUs runs on the node the
    ledger chose (``--nodelist``) and gets the ledger's devices in its
    environment (``gpu_environment``, re-applied by hubgrid-session after
    Slurm's own). ``gpu_gres``: ``none`` asks Slurm for no GPU at all (the
    nodes' GPUs are hubgrid's); ``count`` also asks ``--gres`` so that
    Slurm's accounting counts them (docs/gpus.md: needs ConstrainDevices=no,
    since Slurm's own pick may be another device)."""
    if gpu_gres not in SLURM_GPU_GRES:
        raise ValueError(f"gpu_gres {gpu_gres!r}: use one of {', '.join(SLURM_GPU_GRES)}")
    return {
        "partition": partition,
        "nprocs": str(int(cpu.to_integral_value(ROUND_CEILING)) or 1),
        "memory": f"{-(-mem // MiB)}M" if mem else "",
        "gres": slurm_gres(gpus, shards_per_gpu) if gpu_gres == "count" else "",
        "nodelist": node if gpus else "",
    }


def reapplied_gpu_environment(env: dict[str, str]) -> dict[str, str]:
    """Copies of the GPU variables (``HUBGRID_GPUENV_<NAME>``) that
    hubgrid-session exports again as ``<NAME>`` once Slurm has set up the
    job's environment (Slurm unsets or rewrites CUDA_VISIBLE_DEVICES)."""
    return {f"HUBGRID_GPUENV_{k}": v for k, v in env.items() if k.startswith(GPU_VARIABLES)}
