"""A GPU session's container on the real Docker engine: what an engine
without the NVIDIA toolkit can create (environment, the MPS pipe mount, the
IPC namespace) is created and inspected, and two MPS sessions are run side
by side to show that their shared memory is their own; the device request
itself, which such an engine refuses, is checked at the create call (the
engine names the missing driver). The body is the spawner's:
spawner/builders.py."""

from __future__ import annotations

import contextlib
import os
import uuid
from decimal import Decimal as D
from pathlib import Path

import docker
import pytest

from hub_fixtures import require
from spawner.builders import GPU, NodeEnforcement, SessionSpec, container_config

HOSTS = [h for h in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if h]
IMAGE = "hubgrid/base:latest"
GiB = 2**30


@pytest.fixture(scope="module")
def engine():
    require("a Docker engine", bool(HOSTS), "run `make test` (scripts/start-docker.sh)")
    try:
        cl = docker.APIClient(base_url=HOSTS[0], version="auto", timeout=30)
        cl.inspect_image(IMAGE)
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        require(f"Docker engine {HOSTS[0]} with {IMAGE}", False, f"{e} (run `make test`)")
    yield cl
    cl.close()


def spec(**kw) -> SessionSpec:
    base = dict(allocation=str(uuid.uuid4()), user="alice", domain="acme", project="ml",
                image=IMAGE, cpu=D("0.5"), mem=GiB)
    return SessionSpec(**{**base, **kw})


def create(engine, body: dict) -> dict:
    name = f"hubgrid-gputest-{uuid.uuid4().hex[:8]}"
    c = engine.create_container(image=body["Image"], command=["true"], name=name,
                                environment=body["Env"], labels=body["Labels"], user=body["User"],
                                host_config={**body["HostConfig"], "NetworkMode": "none"})
    try:
        return engine.inspect_container(c["Id"])
    finally:
        engine.remove_container(c["Id"], force=True)


@contextlib.contextmanager
def running(engine, body: dict):
    """A session's container started from ``body`` (idle), removed after."""
    c = engine.create_container(image=body["Image"], command=["sleep", "infinity"],
                                name=f"hubgrid-gputest-{uuid.uuid4().hex[:8]}",
                                environment=body["Env"], labels=body["Labels"], user=body["User"],
                                host_config={**body["HostConfig"], "NetworkMode": "none"})
    try:
        engine.start(c["Id"])
        yield c["Id"]
    finally:
        engine.remove_container(c["Id"], force=True)


def sh(engine, container: str, script: str) -> tuple[int, str]:
    """Run ``script`` in the container as its session user: (exit code, output)."""
    ex = engine.exec_create(container, ["sh", "-c", script])
    out = engine.exec_start(ex["Id"]).decode()
    return engine.exec_inspect(ex["Id"])["ExitCode"], out.strip()


def mps_session(pipe) -> dict:
    return container_config(spec(gpus=(GPU(0, D("0.5"), 40 * GiB, "GPU-aa"),), gpu_mode="mps",
                                 attach_gpus=False,
                                 enforcement=NodeEnforcement(mps_pipe_directory=str(pipe))))


def test_an_mps_session_gets_the_pipes_its_own_ipc_and_its_caps(engine, tmp_path):
    pipe = tmp_path / "mps-pipe"
    pipe.mkdir()
    half = GPU(3, D("0.5"), 40 * GiB, "GPU-3b2e")
    body = container_config(spec(gpus=(half,), gpu_mode="mps", attach_gpus=False,
                                 enforcement=NodeEnforcement(mps_pipe_directory=str(pipe)),
                                 env=(("CUDA_VISIBLE_DEVICES", "0,1,2,3"),)))
    info = create(engine, body)
    env = dict(e.split("=", 1) for e in info["Config"]["Env"])
    assert {k: env[k] for k in env if k.startswith(("CUDA_", "NVIDIA_"))} == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-3b2e", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "0",  # GPU 3 of the node is the container's device 0
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=40960M",
        "CUDA_MPS_PIPE_DIRECTORY": str(pipe),
        "CUDA_MPS_LOG_DIRECTORY": "/var/log/nvidia-mps"}
    assert info["HostConfig"]["IpcMode"] == "private"
    # the pipe directory is the one thing of the node's it gets
    [mount] = info["Mounts"]
    assert (mount["Source"], mount["Destination"], mount["RW"]) == (str(pipe), str(pipe), True)


def test_two_mps_sessions_do_not_share_their_shared_memory(engine, tmp_path):
    pipe = tmp_path / "mps-pipe"
    pipe.mkdir()
    pipe.chmod(0o777)  # the sessions' uid writes there, as MPS clients do
    name = f"hubgrid-shm-{uuid.uuid4().hex[:8]}"
    host_file = Path("/dev/shm") / f"{name}-host"
    host_file.write_text("the node's")
    try:
        with running(engine, mps_session(pipe)) as a, running(engine, mps_session(pipe)) as b:
            # a plain file in /dev/shm, and a POSIX shared memory object
            # (shm_open, what programs share memory with), made by session a
            code, out = sh(engine, a, f"echo secret > /dev/shm/{name} && python3 -c \"from"
                           f" multiprocessing import shared_memory as s; m = s.SharedMemory("
                           f"'{name}-posix', create=True, size=4096); m.buf[:6] = b'secret';"
                           f" print('made')\" && ls /dev/shm && echo piped > {pipe}/{name}")
            assert code == 0 and "made" in out and f"{name}-posix" in out, out
            # a sees its own, b sees neither, nor does the node
            assert sh(engine, a, f"cat /dev/shm/{name}") == (0, "secret")
            code, listing = sh(engine, b, "ls -A /dev/shm")
            assert code == 0 and name not in listing, listing
            assert sh(engine, b, f"cat /dev/shm/{name}")[0] != 0
            code, out = sh(engine, b, "python3 -c \"from multiprocessing import shared_memory"
                           f" as s; s.SharedMemory('{name}-posix')\"")
            assert code != 0 and "FileNotFoundError" in out, out
            assert sorted(f.name for f in Path("/dev/shm").glob(f"{name}*")) == [host_file.name]
            # nor do the sessions see the node's /dev/shm
            for c in (a, b):
                code, listing = sh(engine, c, "ls -A /dev/shm")
                assert code == 0 and host_file.name not in listing, listing
                assert sh(engine, c, f"cat /dev/shm/{host_file.name}")[0] != 0
            # and each /dev/shm is a tmpfs of its own
            devs = {sh(engine, c, "stat -c %d /dev/shm")[1] for c in (a, b)}
            assert len(devs) == 2 and str(os.stat("/dev/shm").st_dev) not in devs, devs
            # the MPS pipe directory is what they do share
            assert sh(engine, b, f"cat {pipe}/{name}") == (0, "piped")
    finally:
        host_file.unlink()


def test_a_framework_session_keeps_its_own_ipc_and_no_mps_pipes(engine):
    body = container_config(spec(gpus=(GPU(0, D("0.25"), 20 * GiB, "GPU-aa"),),
                                 gpu_mode="framework", attach_gpus=False))
    info = create(engine, body)
    env = dict(e.split("=", 1) for e in info["Config"]["Env"])
    assert (env["HUBGRID_GPU_MEMORY_FRACTION"], env["HUBGRID_GPU_MEMORY_BYTES"]) == (
        "0.25", str(20 * GiB))
    assert not any(k.startswith("CUDA_MPS_") for k in env)
    assert info["HostConfig"]["IpcMode"] == "private" and info["Mounts"] == []


def test_a_hami_image_label_preloads_the_library(engine):
    body = container_config(spec(gpus=(GPU(0, D("0.5"), 8 * GiB),), gpu_mode="hami",
                                 attach_gpus=False,
                                 enforcement=NodeEnforcement(hami_library="/usr/local/vgpu/libvgpu.so")))
    env = dict(e.split("=", 1) for e in create(engine, body)["Config"]["Env"])
    assert (env["LD_PRELOAD"], env["CUDA_DEVICE_MEMORY_LIMIT"], env["CUDA_DEVICE_SM_LIMIT"]) == (
        "/usr/local/vgpu/libvgpu.so", "8192m", "50")


def test_the_device_request_names_uuids_and_an_engine_without_the_toolkit_refuses_it(engine):
    body = container_config(spec(gpus=(GPU(1, D(1), 80 * GiB, "GPU-1111"),
                                       GPU(3, D(1), 80 * GiB, "GPU-3333"))))
    assert body["HostConfig"]["DeviceRequests"] == [
        {"Driver": "nvidia", "DeviceIDs": ["GPU-1111", "GPU-3333"], "Capabilities": [["gpu"]]}]
    assert "CUDA_VISIBLE_DEVICES=0,1" in body["Env"]
    if "nvidia" in (engine.info().get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA toolkit: the request would be granted")
    with pytest.raises(docker.errors.APIError, match="nvidia"):
        c = engine.create_container(image=IMAGE, command=["true"],
                                    host_config={**body["HostConfig"], "NetworkMode": "none"})
        try:  # some engines refuse at create, others at start
            engine.start(c["Id"])
        finally:
            engine.remove_container(c["Id"], force=True)
