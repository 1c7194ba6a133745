"""Does a GPU share hold on a real GPU? Two 0.5-share sessions on one device.

    python -m bench.gpu [--device 0] [--seconds 8] [--json PATH]
                        [--hami-library PATH]

Needs only Python with PyTorch and nvidia-ml-py (no hub, no Docker, no
network). Discovers the GPUs with the project's own NVML discovery
(quota_service/scheduling/discovery.py), builds each sharing mode's session
environment with the project's own builders (spawner/gpuenv.py, as a local
or Slurm session gets it), starts each session's process
(bench/gpu/child.py) with that environment, and prints per mode:

- ``none``: one process, the whole device (the baseline);
- ``framework``: two 0.5 sessions with the start-up hook (spawner/gpuhook)
  on their path, as a session image has it;
- ``hami``: two 0.5 sessions preloading HAMi-core, when a libvgpu.so is
  found (``--hami-library``, $HUBGRID_HAMI_LIBRARY or the usual places);
- ``mps``: an MPS control daemon started for the run (its own pipe and log
  directories), two 0.5 sessions as its clients, stopped at the end;

and for each session: the devices it sees (count, names, UUIDs), the device
memory it could allocate (until out of memory) against its cap, and (none,
mps, hami) the throughput of a bf16 matmul loop run by both at once. Modes
that cannot run are reported with the reason. Where no NVIDIA GPU is
present it says so and exits 0. Figures only; docs/gpus.md keeps a run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = REPO / "bench" / "gpu" / "child.py"
HOOK_DIR = REPO / "spawner" / "gpuhook"
HAMI_PLACES = ("/usr/local/vgpu/libvgpu.so", "/usr/local/lib/libvgpu.so",
               "/usr/lib/x86_64-linux-gnu/libvgpu.so", "/usr/lib/libvgpu.so")
PHASE_LIMIT = 75  # seconds a mode's processes may take
GiB = 2**30
HALF = Decimal("0.5")


def load(name: str, relpath: str):
    """A project module by file path: the packages' __init__ files pull in
    JupyterHub, which a GPU test machine need not have."""
    spec = importlib.util.spec_from_file_location(name, REPO / relpath)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


discovery = load("hubgrid_bench_discovery", "quota_service/scheduling/discovery.py")
gpuenv = load("hubgrid_bench_gpuenv", "spawner/gpuenv.py")


def session_env(built: dict[str, str]) -> dict[str, str]:
    """This process's environment less any GPU settings, plus the built ones."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("CUDA_VISIBLE", "CUDA_MPS_", "CUDA_DEVICE_", "NVIDIA_VISIBLE",
                                 "HUBGRID_GPU_", "XLA_PYTHON_CLIENT_"))}
    return {**base, **built, "PYTHONUNBUFFERED": "1"}


def run_sessions(built: dict[str, str], names: list[str], task: dict) -> list[dict]:
    """Start one child per name with the environment ``built``, together.
    A child that dies is marked arrived at every stage of the barrier, so
    its siblings do not wait for it."""
    with tempfile.TemporaryDirectory(prefix="hubgrid-bench-") as tmp:
        barrier = os.path.join(tmp, "barrier")
        procs = {}
        for turn, name in enumerate(names):
            t = {**task, "name": name, "turn": turn, "barrier": barrier, "parties": len(names)}
            out, err = open(os.path.join(tmp, f"{name}.out"), "w+"), open(os.path.join(tmp, f"{name}.err"), "w+")
            procs[name] = (subprocess.Popen([sys.executable, str(CHILD), json.dumps(t)],
                                            env=session_env(built), cwd=REPO, text=True,
                                            stdout=out, stderr=err), out, err)
        deadline, running = time.monotonic() + PHASE_LIMIT, set(names)
        while running and time.monotonic() < deadline:
            for name in list(running):
                if procs[name][0].poll() is not None:
                    running.discard(name)
                    for stage in ("alloc", "start"):
                        os.makedirs(os.path.join(barrier, stage), exist_ok=True)
                        Path(barrier, stage, name).touch()
            time.sleep(0.05)
        return [collect(name, *procs[name]) for name in names]


def collect(name: str, p: subprocess.Popen, out, err) -> dict:
    if p.poll() is None:
        p.kill()
        p.wait()
        return {"name": name, "error": f"did not finish in {PHASE_LIMIT} s"}
    out.seek(0)
    err.seek(0)
    text, errors = out.read(), err.read().strip()
    out.close()
    err.close()
    for line in text.splitlines():
        if line.startswith("BENCH-GPU-RESULT "):
            return json.loads(line[len("BENCH-GPU-RESULT "):])
    brief = errors if len(errors) < 800 else errors[:400] + " ... " + errors[-400:]
    return {"name": name, "error": f"exit {p.returncode}: {brief}"}


# --- MPS ---------------------------------------------------------------------

def start_mps(tmp: Path):
    """(NodeEnforcement, "") with a running control daemon, or (None, why)."""
    exe = shutil.which("nvidia-cuda-mps-control")
    if not exe:
        return None, "nvidia-cuda-mps-control not found on PATH"
    pipe, logs = tmp / "mps-pipe", tmp / "mps-log"
    pipe.mkdir()
    logs.mkdir()
    node = gpuenv.NodeEnforcement(mps_pipe_directory=str(pipe), mps_log_directory=str(logs))
    try:
        r = subprocess.run([exe, "-d"], env=mps_env(node), capture_output=True, text=True,
                           timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"nvidia-cuda-mps-control -d: {e}"
    if r.returncode:
        return None, f"nvidia-cuda-mps-control -d exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}"
    for _ in range(100):
        if (pipe / "control").exists():
            return node, ""
        time.sleep(0.05)
    return None, f"the MPS control daemon made no control pipe in {pipe}; log: {mps_log(node)}"


def mps_env(node) -> dict[str, str]:
    return {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": node.mps_pipe_directory,
            "CUDA_MPS_LOG_DIRECTORY": node.mps_log_directory}


def mps_command(node, command: str) -> str:
    try:
        r = subprocess.run(["nvidia-cuda-mps-control"], input=command + "\n", env=mps_env(node),
                           capture_output=True, text=True, timeout=20)
        return (r.stdout + r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"failed: {e}"


def mps_log(node) -> str:
    tails = []
    for name in ("control.log", "server.log"):
        path = Path(node.mps_log_directory, name)
        if path.exists():
            tails.append(f"{name}: " + " | ".join(path.read_text(errors="replace").splitlines()[-4:]))
    return "; ".join(tails) or "(no log)"


def find_hami(given: str) -> str:
    for path in (given, os.environ.get("HUBGRID_HAMI_LIBRARY", ""), *HAMI_PLACES):
        if path and Path(path).is_file():
            return path
    return ""


# --- the modes ---------------------------------------------------------------

def mode_none(dev, seconds: float) -> dict:
    whole = gpuenv.GPU(dev["index"], Decimal(1), dev["memory"], dev.get("uuid", ""))
    built = gpuenv.gpu_environment((whole,), "framework", "host")
    sessions = run_sessions(built, ["whole"], {"alloc": True, "seconds": seconds,
                                               "nvml_index": dev["index"]})
    return {"env": built, "cap": dev["memory"], "sessions": sessions}


def mode_shared(dev, mode: str, node, task: dict, names=("a", "b")) -> dict:
    half = gpuenv.GPU(dev["index"], HALF, gpuenv.share_memory(HALF, dev["memory"]),
                      dev.get("uuid", ""))
    built = gpuenv.gpu_environment((half,), mode, "host", node)
    sessions = run_sessions(built, list(names), {**task, "nvml_index": dev["index"]})
    return {"env": built, "cap": half.memory, "sessions": sessions}


def run_all(dev, args) -> dict:
    seconds = args.seconds
    modes: dict[str, dict] = {"none": mode_none(dev, seconds)}
    modes["framework"] = mode_shared(dev, "framework", gpuenv.NodeEnforcement(),
                                     {"alloc": True, "hook_dir": str(HOOK_DIR)})
    if importlib.util.find_spec("jax") is not None:
        modes["framework-jax"] = mode_shared(
            dev, "framework", gpuenv.NodeEnforcement(),
            {"alloc": True, "hook_dir": str(HOOK_DIR), "framework": "jax"}, ("jax-a", "jax-b"))
    else:
        modes["framework-jax"] = {"unavailable": "jax is not installed"}
    lib = find_hami(args.hami_library)
    if lib:
        modes["hami"] = mode_shared(dev, "hami", gpuenv.NodeEnforcement(hami_library=lib),
                                    {"alloc": True, "seconds": seconds})
    else:
        modes["hami"] = {"unavailable": "no libvgpu.so found (give --hami-library PATH)"}
    with tempfile.TemporaryDirectory(prefix="hubgrid-bench-mps-") as tmp:
        node, why = start_mps(Path(tmp))
        if node is None:
            modes["mps"] = {"unavailable": why}
        else:
            try:
                modes["mps"] = mode_shared(dev, "mps", node, {"alloc": True, "seconds": seconds})
                modes["mps"]["servers"] = mps_command(node, "get_server_list")
                modes["mps"]["log"] = mps_log(node)
            finally:
                modes.setdefault("mps", {})["quit"] = mps_command(node, "quit")
    return modes


# --- the report --------------------------------------------------------------

def gib(n: int) -> str:
    return f"{n / GiB:.2f} GiB"


def report(modes: dict) -> None:
    base = next((s.get("throughput", {}).get("tflops") for s in modes["none"].get("sessions", [])),
                None)
    for mode, r in modes.items():
        print(f"\n== {mode} ==")
        if "unavailable" in r:
            print(f"{mode}: not available ({r['unavailable']})")
            continue
        print("  env: " + " ".join(f"{k}={v}" for k, v in sorted(r["env"].items())))
        total = sum(s.get("throughput", {}).get("tflops", 0) for s in r["sessions"])
        for s in r["sessions"]:
            print_session(s, r["cap"], total, base)
        for key in ("servers", "log", "quit"):
            if r.get(key):
                print(f"  mps {key}: {r[key]}")


def print_session(s: dict, cap: int, total: float, base) -> None:
    name = s.get("name", "?")
    if s.get("error") and "devices" not in s:
        print(f"  session {name}: FAILED: {s['error']}")
        return
    devs = s.get("devices", [])
    print(f"  session {name}: sees {len(devs)} device(s): "
          + ", ".join(f"{d['ordinal']}={d['name']} {d['uuid']} ({gib(d['memory'])})" for d in devs))
    if "hook_installed" in s:
        print(f"    start-up hook installed: {s['hook_installed']}")
    info = s.get("mem_get_info")
    if info:
        print(f"    cudaMemGetInfo: free {gib(info['free'])} of {gib(info['total'])}")
    mem = s.get("memory")
    if mem:
        held = "within the cap" if mem["allocated"] <= cap else "OVER THE CAP"
        free = mem.get("device_free_at_stop")
        free = f"; the device had {gib(free)} free then (NVML)" if free is not None else ""
        print(f"    allocated {gib(mem['allocated'])} against a cap of {gib(cap)} "
              f"({100 * mem['allocated'] / cap:.1f}%, {held}){free}")
        print(f"      stopped by: {mem['stopped_by']}")
        if mem.get("pool_limit"):
            print(f"      JAX pool limit: {gib(mem['pool_limit'])}")
    tp = s.get("throughput")
    if tp:
        parts = [f"{tp['tflops']} TFLOP/s bf16 over {tp['seconds']} s"]
        if total and total != tp["tflops"]:
            parts.append(f"{100 * tp['tflops'] / total:.1f}% of the sessions' sum")
        if base:
            parts.append(f"{100 * tp['tflops'] / base:.1f}% of the whole-GPU baseline")
        print("    throughput: " + ", ".join(parts))
    if s.get("error"):
        print(f"    error: {s['error']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.splitlines()[0])
    ap.add_argument("--device", type=int, default=0, help="NVML index of the GPU to share")
    ap.add_argument("--seconds", type=float, default=8.0, help="length of each throughput run")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--hami-library", default="", metavar="PATH", help="HAMi-core's libvgpu.so")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    started = time.monotonic()
    gpus = discovery.local_gpus()
    result: dict = {"gpus": gpus}
    if not gpus:
        print("no NVIDIA GPU on this machine: nothing to measure")
        result["result"] = "no NVIDIA GPU"
    else:
        dev = next((g for g in gpus if g["index"] == args.device), None)
        if dev is None:
            print(f"no GPU with NVML index {args.device}; found "
                  + ", ".join(str(g["index"]) for g in gpus))
            return 2
        print(f"GPU {dev['index']}: {dev['model']} {dev.get('uuid', '')} "
              f"{dev['memory']} bytes ({gib(dev['memory'])}); {len(gpus)} GPU(s) on this machine")
        result["device"] = dev
        result["modes"] = run_all(dev, args)
        report(result["modes"])
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    print(f"\nbench.gpu finished in {result['elapsed_s']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
