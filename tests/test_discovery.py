"""NVML discovery: a machine without NVML has no GPUs; with NVML, its devices."""

from __future__ import annotations

from quota_service.scheduling.discovery import local_gpus


class NVMLWithoutDriver:
    """Test double: nvmlInit fails like it does on a machine with no driver."""

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        raise self.NVMLError("NVML Shared Library Not Found")


class FakeNVMLWithTwoA100:
    """Test double standing in for a node with two GPUs (no GPU here)."""

    def __init__(self):
        self.shut = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA A100-SXM4-80GB"

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-0000000{h}-aaaa-bbbb-cccc-dddddddddddd".encode()

    def nvmlDeviceGetMemoryInfo(self, h):
        class Info:
            total = 80 * 2**30

        return Info()


def test_this_machine_has_no_gpus_and_does_not_crash():
    assert local_gpus() == []


def test_nvml_failing_to_initialise_means_no_gpus():
    assert local_gpus(NVMLWithoutDriver()) == []


def test_nvml_devices_are_listed_with_uuid_model_and_memory():
    nvml = FakeNVMLWithTwoA100()
    assert local_gpus(nvml) == [
        {"index": 0, "uuid": "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd",
         "model": "A100-SXM4-80GB", "memory": 80 * 2**30},
        {"index": 1, "uuid": "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd",
         "model": "A100-SXM4-80GB", "memory": 80 * 2**30},
    ]
    assert nvml.shut
