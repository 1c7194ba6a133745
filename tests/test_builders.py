"""The pure container builders, compared with plain data (no Docker needed)."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from spawner.builders import (
    GPU,
    NodeEnforcement,
    Mount,
    SessionSpec,
    container_config,
    device_requests,
    gpu_environment,
    reapplied_gpu_environment,
    slurm_gres,
    slurm_request,
    vfolder_mounts,
)
from spawner.gpuenv import HAMI_LABEL, allocation_gpus, hami_library, share_memory

GiB = 2**30
A100 = 80 * GiB


def spec(**kw) -> SessionSpec:
    base = dict(allocation="a-1", user="alice", domain="acme", project="ml",
                image="hubgrid/base:1", cpu=D("2.5"), mem=8 * GiB)
    base.update(kw)
    return SessionSpec(**base)


def test_no_gpu_hides_every_device():
    for where in ("container", "host"):
        assert gpu_environment((), "mps", where) == {"NVIDIA_VISIBLE_DEVICES": "void",
                                                     "CUDA_VISIBLE_DEVICES": ""}
    assert device_requests(()) == []


def test_a_container_names_devices_by_uuid_and_sees_them_as_0_to_n():
    gpus = (GPU(1, D(1), A100, "GPU-aaa"), GPU(3, D(1), A100, "GPU-ccc"))
    assert gpu_environment(gpus, "framework") == {"NVIDIA_VISIBLE_DEVICES": "GPU-aaa,GPU-ccc",
                                            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                                            "CUDA_VISIBLE_DEVICES": "0,1"}
    assert device_requests(gpus) == [
        {"Driver": "nvidia", "DeviceIDs": ["GPU-aaa", "GPU-ccc"], "Capabilities": [["gpu"]]}]


def test_a_session_on_gpu_3_of_a_container_sees_device_0():
    env = gpu_environment((GPU(3, D(1), A100, "GPU-ddd"),), "framework", "container")
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "GPU-ddd"


def test_a_host_process_names_its_devices_in_pci_order():
    by_uuid = (GPU(1, D(1), A100, "GPU-aaa"), GPU(3, D(1), A100, "GPU-ccc"))
    assert gpu_environment(by_uuid, "hami", "host") == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-aaa,GPU-ccc", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "GPU-aaa,GPU-ccc"}
    # a declared inventory without UUIDs: NVML indexes, which PCI order makes CUDA's
    by_index = (GPU(1, D(1)), GPU(3, D(1)))
    assert gpu_environment(by_index, "mps", "host")["CUDA_VISIBLE_DEVICES"] == "1,3"
    assert device_requests(by_index)[0]["DeviceIDs"] == ["1", "3"]


def test_an_unknown_place_is_refused():
    with pytest.raises(ValueError, match="unknown place"):
        gpu_environment((GPU(0, D(1)),), "mps", "cloud")


QUARTER = GPU(2, D("0.25"), 20 * GiB, "GPU-q")


@pytest.mark.parametrize("mode,expected", [
    ("mps", {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25",
             "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=20480M",
             "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps",
             "CUDA_MPS_LOG_DIRECTORY": "/var/log/nvidia-mps"}),
    ("hami", {"CUDA_DEVICE_SM_LIMIT": "25", "CUDA_DEVICE_MEMORY_LIMIT": "20480m"}),
    ("framework", {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.25",
                   "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                   "HUBGRID_GPU_MEMORY_FRACTION": "0.25",
                   "HUBGRID_GPU_MEMORY_BYTES": str(20 * GiB)}),
])
def test_a_share_gets_the_enforcement_of_its_mode(mode, expected):
    env = gpu_environment((QUARTER,), mode)
    assert env == {"NVIDIA_VISIBLE_DEVICES": "GPU-q", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                   "CUDA_VISIBLE_DEVICES": "0", **expected}
    host = gpu_environment((QUARTER,), mode, "host")
    assert host == {**env, "CUDA_VISIBLE_DEVICES": "GPU-q"}


def test_whole_devices_on_an_mps_node_are_clients_without_limits():
    env = gpu_environment((GPU(1, D(1), A100, "GPU-aaa"),), "mps")
    assert env == {"NVIDIA_VISIBLE_DEVICES": "GPU-aaa", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                   "CUDA_VISIBLE_DEVICES": "0", "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps",
                   "CUDA_MPS_LOG_DIRECTORY": "/var/log/nvidia-mps"}
    assert gpu_environment((), "mps") == {"NVIDIA_VISIBLE_DEVICES": "void",
                                          "CUDA_VISIBLE_DEVICES": ""}


def test_mps_clients_get_the_nodes_daemon_directories():
    node = NodeEnforcement(mps_pipe_directory="/run/mps", mps_log_directory="/run/mps-log")
    env = gpu_environment((QUARTER,), "mps", "container", node)
    assert (env["CUDA_MPS_PIPE_DIRECTORY"], env["CUDA_MPS_LOG_DIRECTORY"]) == ("/run/mps", "/run/mps-log")


def test_hami_preloads_the_library_only_when_the_image_declares_it():
    assert "LD_PRELOAD" not in gpu_environment((QUARTER,), "hami")
    lib = hami_library({HAMI_LABEL: "/usr/local/vgpu/libvgpu.so"})
    env = gpu_environment((QUARTER,), "hami", "container", NodeEnforcement(hami_library=lib))
    assert env["LD_PRELOAD"] == "/usr/local/vgpu/libvgpu.so"
    assert hami_library({"other": "x"}) == hami_library(None) == ""


def test_a_share_of_a_gpu_of_unknown_memory_limits_compute_only():
    env = gpu_environment((GPU(0, D("0.5")),), "mps")
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" not in env
    assert "HUBGRID_GPU_MEMORY_BYTES" not in gpu_environment((GPU(0, D("0.5")),), "framework")


def test_shares_round_down_never_up():
    memory = share_memory(D("0.33"), 3 * GiB + 1)
    assert memory == (3 * GiB + 1) * 33 // 100
    env = gpu_environment((GPU(0, D("0.33"), memory),), "hami")
    assert env["CUDA_DEVICE_SM_LIMIT"] == "33"
    assert env["CUDA_DEVICE_MEMORY_LIMIT"] == f"{memory // 2**20}m"


def test_an_allocation_record_becomes_gpus():
    assert allocation_gpus([{"index": 3, "uuid": "GPU-x", "share": "0.5", "memory": 7},
                            {"index": 4, "share": "1"}]) == (
        GPU(3, D("0.5"), 7, "GPU-x"), GPU(4, D(1), 0, ""))


def test_unknown_mode_and_shares_across_devices_are_refused():
    with pytest.raises(ValueError, match="unknown GPU sharing mode"):
        gpu_environment((GPU(0, D("0.5")),), "magic")
    with pytest.raises(ValueError, match="ONE device"):
        gpu_environment((GPU(0, D("0.5")), GPU(1, D("0.5"))), "mps")


def test_container_config_carries_limits_labels_and_no_privileges():
    cfg = container_config(spec(
        gpus=(GPU(0, D("0.5"), A100 // 2, "GPU-0"),), gpu_mode="mps",
        mounts=(Mount("/srv/vf/alice/data", "/home/jovyan/data", read_only=True),),
        env=(("JUPYTERHUB_USER", "alice"),),
    ))
    assert cfg == {
        "Image": "hubgrid/base:1",
        "User": "1000:100",
        "Env": [
            "CUDA_DEVICE_ORDER=PCI_BUS_ID",
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50",
            "CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=40960M",
            "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps",
            "CUDA_VISIBLE_DEVICES=0",
            "JUPYTERHUB_USER=alice",
            "NVIDIA_VISIBLE_DEVICES=GPU-0",
        ],
        "Labels": {"hubgrid.allocation": "a-1", "hubgrid.user": "alice",
                   "hubgrid.domain": "acme", "hubgrid.project": "ml"},
        "HostConfig": {
            "NanoCpus": 2_500_000_000,
            "Memory": 8 * GiB,
            "MemorySwap": 8 * GiB,
            "PidsLimit": 4096,
            "Privileged": False,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "DeviceRequests": [{"Driver": "nvidia", "DeviceIDs": ["GPU-0"],
                                "Capabilities": [["gpu"]]}],
            # the MPS client's way to the node's daemon: its pipe directory
            "Mounts": [{"Type": "bind", "Source": "/srv/vf/alice/data",
                        "Target": "/home/jovyan/data", "ReadOnly": True},
                       {"Type": "bind", "Source": "/tmp/nvidia-mps",
                        "Target": "/tmp/nvidia-mps", "ReadOnly": False}],
            # its own IPC namespace and /dev/shm, MPS client or not
            "IpcMode": "private",
        },
    }


def test_only_mps_clients_get_the_daemons_pipes():
    for mode in ("framework", "hami"):
        cfg = container_config(spec(gpus=(GPU(0, D("0.5"), A100 // 2),), gpu_mode=mode))
        assert cfg["HostConfig"]["Mounts"] == []
    none = container_config(spec(gpu_mode="mps"))
    assert none["HostConfig"]["Mounts"] == []
    client = container_config(spec(gpus=(GPU(0, D(1), A100),), gpu_mode="mps",
                                   enforcement=NodeEnforcement(mps_pipe_directory="/run/mps")))
    assert client["HostConfig"]["Mounts"] == [{"Type": "bind", "Source": "/run/mps",
                                               "Target": "/run/mps", "ReadOnly": False}]


@pytest.mark.parametrize("mode", ["mps", "framework", "hami"])
@pytest.mark.parametrize("gpus", [(), (GPU(0, D("0.5"), A100 // 2, "GPU-0"),), (GPU(0, D(1), A100),)])
def test_every_session_has_its_own_ipc_namespace_and_dev_shm(mode, gpus):
    """MPS clients included: only the pipe directory of the MPS daemon is
    shared, never the host's or another container's IPC namespace (where
    sessions, all of one uid, would read each other's shared memory)."""
    host = container_config(spec(gpus=gpus, gpu_mode=mode))["HostConfig"]
    assert host["IpcMode"] == "private"
    assert not any(m["Target"].startswith("/dev") for m in host["Mounts"])


def test_no_setting_can_share_ipc_among_sessions():
    import dataclasses

    from spawner.docker import HubgridDockerSpawner

    assert "mps_ipc_mode" not in HubgridDockerSpawner.class_trait_names()
    assert not [f.name for f in dataclasses.fields(SessionSpec) if "ipc" in f.name]


def test_the_allocation_environment_cannot_be_overridden_by_extra_env():
    cfg = container_config(spec(gpus=(GPU(1, D(1)),), env=(("CUDA_VISIBLE_DEVICES", "0,1,2,3"),)))
    assert "CUDA_VISIBLE_DEVICES=0" in cfg["Env"]
    assert "NVIDIA_VISIBLE_DEVICES=1" in cfg["Env"]
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" not in cfg["Env"]


def test_the_spawner_applies_the_allocation_limits_and_gpu_environment():
    from spawner import HubgridLocalProcessSpawner
    from spawner.options import SessionOptions

    sp = HubgridLocalProcessSpawner(gpu_sharing_mode="hami")
    sp._apply_allocation({
        "id": "a-9", "domain": "acme", "project": "ml", "resource_group": "gpu", "node": "n1",
        "slots": {"cpu": "1.5", "mem": str(4 * GiB), "gpu.shares": "0.5"},
        "gpus": [{"index": 3, "uuid": "GPU-3", "share": "0.5", "memory": 8 * GiB}],
    }, SessionOptions())
    assert (sp.cpu_limit, sp.mem_limit) == (1.5, 4 * GiB)
    # a local process sees the whole node: its device by UUID, in PCI order
    assert {k: sp.session_env[k] for k in ("HUBGRID_ALLOCATION", "CUDA_VISIBLE_DEVICES",
                                           "CUDA_DEVICE_ORDER", "CUDA_DEVICE_SM_LIMIT",
                                           "CUDA_DEVICE_MEMORY_LIMIT")} == {
        "HUBGRID_ALLOCATION": "a-9", "CUDA_VISIBLE_DEVICES": "GPU-3",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_DEVICE_SM_LIMIT": "50", "CUDA_DEVICE_MEMORY_LIMIT": "8192m"}


def test_declared_gpus_without_a_runtime_get_the_environment_but_no_devices():
    cfg = container_config(spec(gpus=(GPU(2, D("0.5"), A100 // 2),), attach_gpus=False))
    assert cfg["HostConfig"]["DeviceRequests"] == []
    assert "NVIDIA_VISIBLE_DEVICES=2" in cfg["Env"]
    attached = container_config(spec(gpus=(GPU(2, D("0.5"), A100 // 2),)))
    assert attached["HostConfig"]["DeviceRequests"][0]["DeviceIDs"] == ["2"]


@pytest.mark.parametrize("gpus, gres", [
    ((), ""),
    ((GPU(0, D(1)), GPU(5, D(1))), "gpu:2"),
    ((GPU(1, D("0.25")),), "shard:25"),
    ((GPU(1, D("0.005")),), "shard:1"),  # never zero shards
])
def test_slurm_gres_asks_for_whole_gpus_or_shards(gpus, gres):
    assert slurm_gres(gpus, 100) == gres


def test_slurm_gres_refuses_a_share_spread_over_devices():
    with pytest.raises(ValueError, match="ONE device"):
        slurm_gres((GPU(0, D("0.5")), GPU(1, D("0.5"))), 100)


def test_slurm_request_rounds_cpu_and_memory_up():
    assert slurm_request(D("1.5"), 512 * 2**20 + 1, (), "batch", node="n1") == {
        "partition": "batch", "nprocs": "2", "memory": "513M", "gres": "", "nodelist": ""}


def test_a_slurm_job_with_gpus_runs_on_the_ledgers_node_and_asks_slurm_for_none():
    assert slurm_request(D("0.1"), 0, (GPU(3, D("0.5")),), "gpu", node="gpu-07") == {
        "partition": "gpu", "nprocs": "1", "memory": "", "gres": "", "nodelist": "gpu-07"}


def test_a_slurm_job_may_also_ask_gres_for_slurms_accounting():
    assert slurm_request(D(1), 0, (GPU(0, D(1)), GPU(2, D(1))), "gpu", node="n",
                         gpu_gres="count")["gres"] == "gpu:2"
    assert slurm_request(D(1), 0, (GPU(1, D("0.25")),), "gpu", node="n",
                         gpu_gres="count")["gres"] == "shard:25"
    with pytest.raises(ValueError, match="gpu_gres"):
        slurm_request(D(1), 0, (), "gpu", gpu_gres="pick")


def test_the_gpu_variables_travel_twice_to_a_slurm_job():
    env = gpu_environment((GPU(3, D("0.5"), 8 * GiB, "GPU-3"),), "framework", "host")
    again = reapplied_gpu_environment({**env, "HOME": "/home/a"})
    assert again == {f"HUBGRID_GPUENV_{k}": v for k, v in env.items()}
    assert again["HUBGRID_GPUENV_CUDA_VISIBLE_DEVICES"] == "GPU-3"


# ---------------------------------------------------------------- vfolder mounts

def test_vfolders_mount_under_the_root_read_only_unless_rw():
    mounts = [{"folder": "f1", "name": "data", "path": "/srv/vf/f1", "mode": "ro"},
              {"folder": "f2", "name": ".dotfiles", "path": "/srv/vf/f2", "mode": "rw"}]
    assert vfolder_mounts(mounts, "/home/jovyan") == (
        Mount("/srv/vf/f1", "/home/jovyan/data", read_only=True),
        Mount("/srv/vf/f2", "/home/jovyan/.dotfiles", read_only=False))


@pytest.mark.parametrize("mount, root, problem", [
    ({"name": "../etc", "path": "/srv/vf/x", "mode": "rw"}, "/home/jovyan", "mount point"),
    ({"name": "..", "path": "/srv/vf/x", "mode": "rw"}, "/home/jovyan", "mount point"),
    ({"name": "", "path": "/srv/vf/x", "mode": "rw"}, "/home/jovyan", "mount point"),
    ({"name": "a\0b", "path": "/srv/vf/x", "mode": "rw"}, "/home/jovyan", "mount point"),
    ({"name": "data", "path": "/srv/vf/x", "mode": "wd"}, "/home/jovyan", "neither ro nor rw"),
    ({"name": "data", "path": "/srv/vf/x", "mode": "rw"}, "home", "absolute"),
])
def test_a_mount_that_could_leave_the_root_is_refused(mount, root, problem):
    with pytest.raises(ValueError, match=problem):
        vfolder_mounts([mount], root)


def test_two_folders_at_one_mount_point_are_refused():
    m = {"name": "data", "path": "/srv/vf/x", "mode": "ro"}
    with pytest.raises(ValueError, match="two vfolders"):
        vfolder_mounts([m, {**m, "path": "/srv/vf/y"}], "/home/jovyan")
