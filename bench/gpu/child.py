"""One session's process for ``python -m bench.gpu``: run with the session
environment the project's builders made, it reports (one JSON line on
stdout) the CUDA devices it sees, the device memory it could allocate, and
the throughput of a compute-bound matmul loop started together with its
sibling sessions.

    python bench/gpu/child.py '{"hook_dir": "", "alloc": true, "seconds": 10,
                                "barrier": DIR, "parties": 2, "name": "a"}'

Imports torch only (and the hook's site directory, when given, first: the
way a session image's site-packages runs the hook's .pth file).
"""

from __future__ import annotations

import json
import os
import site
import sys
import time
from pathlib import Path

GiB, MiB = 2**30, 2**20


def arrive(barrier: str, stage: str, name: str) -> None:
    os.makedirs(os.path.join(barrier, stage), exist_ok=True)
    Path(barrier, stage, name).touch()


def wait_for(barrier: str, stage: str, count: int, limit: float = 60.0) -> bool:
    """Until ``count`` sessions have arrived at ``stage``."""
    if count <= 0:
        return True
    end = time.monotonic() + limit
    path = os.path.join(barrier, stage)
    while time.monotonic() < end:
        if os.path.isdir(path) and len(os.listdir(path)) >= count:
            return True
        time.sleep(0.01)
    return False


def device_free(index: int) -> int | None:
    """What NVML says is free on the device (all processes), if it can."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).free)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def devices(torch) -> list[dict]:
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        uuid = str(getattr(p, "uuid", "") or "")
        out.append({"ordinal": i, "name": p.name, "memory": int(p.total_memory),
                    "uuid": uuid if not uuid or uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"})
    return out


def allocate_until_oom(torch, task: dict) -> dict:
    """Hold as much device memory as the process may (1 GiB chunks, then
    64 MiB, then 4 MiB, until allocation fails), in turn: session k starts
    when k sessions hold theirs, and all let go together. What NVML says is
    free on the device when one stops shows whether its cap or the device's
    end stopped it."""
    barrier, name, parties = task.get("barrier"), task.get("name", ""), task.get("parties", 1)
    if barrier and not wait_for(barrier, "alloc", task.get("turn", 0)):
        return {"allocated": 0, "stopped_by": "the session before it never allocated"}
    held, total = [], 0
    error = ""
    for chunk in (GiB, 64 * MiB, 4 * MiB):
        while True:
            try:
                held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda:0"))
                total += chunk
            except Exception as e:  # torch.cuda.OutOfMemoryError, RuntimeError (MPS)
                error = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                break
    out = {"allocated": total, "stopped_by": error, "device_free_at_stop": device_free(task.get("nvml_index", 0))}
    if barrier:
        arrive(barrier, "alloc", name)
        wait_for(barrier, "alloc", parties)
    held.clear()
    torch.cuda.empty_cache()
    return out


def matmul_loop(torch, seconds: float) -> dict:
    n = 8192
    a = torch.randn(n, n, device="cuda:0", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda:0", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    iters, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        iters += 10
    elapsed = time.perf_counter() - start
    return {"iterations": iters, "seconds": round(elapsed, 3),
            "tflops": round(2 * n**3 * iters / elapsed / 1e12, 2)}


def run_jax(task: dict, out: dict) -> dict:
    """The same memory check through JAX (its pool is sized by
    XLA_PYTHON_CLIENT_MEM_FRACTION when the first array is made)."""
    barrier, parties = task.get("barrier"), task.get("parties", 1)
    if barrier:  # JAX takes its pool when it starts: one after the other
        wait_for(barrier, "alloc", task.get("turn", 0))
    import jax
    import jax.numpy as jnp

    devs = jax.devices("gpu")
    out["devices"] = [{"ordinal": i, "name": d.device_kind, "uuid": "", "memory": 0}
                      for i, d in enumerate(devs)]
    held, total, error = [], 0, ""
    for chunk in (GiB, 64 * MiB, 4 * MiB):
        while True:
            try:
                x = jnp.zeros((chunk,), jnp.uint8)
                x.block_until_ready()
                held.append(x)
                total += chunk
            except Exception as e:  # XlaRuntimeError: RESOURCE_EXHAUSTED
                error = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                break
    stats = devs[0].memory_stats() or {}
    out["memory"] = {"allocated": total, "stopped_by": error,
                     "device_free_at_stop": device_free(task.get("nvml_index", 0)),
                     "pool_limit": stats.get("bytes_limit")}
    if barrier:
        arrive(barrier, "alloc", out["name"])
        wait_for(barrier, "alloc", parties)
    return out


def use_hook(hook_dir: str) -> bool:
    """Run the start-up hook of ``hook_dir`` (this checkout's) the way a
    session image's site-packages runs it. A copy installed in this Python
    (``python -m spawner.gpuhook install``) ran already at start-up: it is
    taken out first, so that what is measured is this checkout's hook.
    True when that hook, and no other, is in place."""
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "CapFinder"]
    sys.modules.pop("hubgrid_gpu_hook", None)
    sys.path.insert(0, hook_dir)  # its .pth imports the hook from here, not a copy
    site.addsitedir(hook_dir)
    hook = sys.modules.get("hubgrid_gpu_hook")
    ours = hook is not None and Path(hook.__file__).resolve().parent == Path(hook_dir).resolve()
    return ours and any(isinstance(f, hook.CapFinder) for f in sys.meta_path)


def run(task: dict) -> dict:
    out: dict = {"name": task.get("name", ""), "pid": os.getpid(),
                 "env": {k: v for k, v in os.environ.items()
                         if k.startswith(("CUDA_", "NVIDIA_", "HUBGRID_GPU", "XLA_", "LD_PRELOAD"))}}
    if task.get("hook_dir"):
        out["hook_installed"] = use_hook(task["hook_dir"])
    if task.get("framework") == "jax":
        return run_jax(task, out)
    import torch

    if not torch.cuda.is_available():
        out["error"] = f"torch {torch.__version__}: CUDA is not available"
        return out
    out["devices"] = devices(torch)
    free, total = torch.cuda.mem_get_info(0)
    out["mem_get_info"] = {"free": int(free), "total": int(total)}
    if task.get("alloc"):
        out["memory"] = allocate_until_oom(torch, task)
    if task.get("seconds"):
        if task.get("barrier"):
            arrive(task["barrier"], "start", out["name"])
        if task.get("barrier") and not wait_for(task["barrier"], "start", task["parties"]):
            out["error"] = "a sibling session never reached the start line"
            return out
        out["throughput"] = matmul_loop(torch, float(task["seconds"]))
    return out


def main() -> int:
    task = json.loads(sys.argv[1])
    try:
        out = run(task)
    except Exception as e:  # report, never a traceback only
        out = {"name": task.get("name", ""), "error": f"{type(e).__name__}: {e}"[:500]}
    if task.get("barrier"):  # siblings do not wait for one that failed
        for stage in ("alloc", "start"):
            arrive(task["barrier"], stage, task.get("name", "x"))
    print("BENCH-GPU-RESULT " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
