"""The allocation names each GPU by index and UUID and carries the device
memory its share may use (exact bytes), which the spawner turns into the
session's caps; nodes registered with UUIDs show them."""

from __future__ import annotations

import pytest

from quota_service.core.errors import Invalid
from quota_service.core.schemas import NodeCreate
from quota_service.scheduling import inventory
from spawner.gpuenv import allocation_gpus, gpu_environment
from test_ledger import ask, solo

H200 = 150_754_820_096  # bytes, as NVML reports one


@pytest.fixture
def known(cluster):
    solo(cluster, gpus=2)
    cluster.set_device_identity("solo-1", [("GPU-aaaa-1", H200), ("GPU-bbbb-2", H200)])
    return cluster


def test_a_share_carries_the_uuid_and_its_memory_rounded_down(known):
    a = ask(known, group="solo", gpu_shares="0.33")
    assert a["gpus"] == [{"index": 0, "uuid": "GPU-aaaa-1", "share": "0.33",
                          "memory": H200 * 33 // 100}]
    assert H200 * 33 // 100 == 49749090631  # floor, never up


def test_whole_devices_carry_all_their_memory(known):
    a = ask(known, group="solo", gpu=2)
    assert [(g["uuid"], g["memory"]) for g in a["gpus"]] == [("GPU-aaaa-1", H200),
                                                             ("GPU-bbbb-2", H200)]


def test_a_device_of_unknown_memory_and_uuid_gives_no_cap(cluster):
    solo(cluster, gpus=1)
    a = ask(cluster, group="solo", gpu_shares="0.5")
    assert a["gpus"] == [{"index": 0, "uuid": "", "share": "0.5", "memory": 0}]


def test_the_allocation_becomes_the_sessions_caps(known):
    a = ask(known, group="solo", gpu_shares="0.5")
    env = gpu_environment(allocation_gpus(a["gpus"]), "mps", "host")
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-aaaa-1"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == f"0={H200 // 2 // 2**20}M"


def test_node_registration_takes_uuids_and_refuses_one_twice():
    body = NodeCreate(name="n1", resource_group="default", capacity={"cpu": "8", "mem": "64G"},
                      devices=[{"index": 0, "model": "H200", "memory": H200, "uuid": "GPU-x-1"},
                               {"index": 1, "model": "H200", "memory": H200, "uuid": "GPU-x-1"}])
    with pytest.raises(Invalid, match="UUIDs must be unique"):
        inventory._devices(body.devices)
    with pytest.raises(ValueError, match="uuid"):
        NodeCreate(name="n1", resource_group="default", capacity={"cpu": "8"},
                   devices=[{"index": 0, "model": "H200", "uuid": "not a uuid"}])
