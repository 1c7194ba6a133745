"""A Slurm job's GPUs are the ledger's (docs/gpus.md): the job runs on the
ledger's node and sees exactly the ledger's device, by UUID, in PCI order,
with its share's caps, on the real single-node Slurm. The node's GPUs are
declared (no GPU here), as the demo declares them."""

from __future__ import annotations

import pytest

from session_fixtures import allocations, eventually, hub_log, spawn
from slurm_fixtures import jobs, new_user, slurm_hub_with, slurm_node

GiB = 2**30
UUIDS = ["GPU-00000000-1111-2222-3333-444444444444", "GPU-55555555-6666-7777-8888-999999999999"]


@pytest.fixture(scope="module")
def gpu_slurm_hub(tmp_path_factory):
    """A hub of its own: its service declares the Slurm node's GPUs."""
    devices = [{"index": i, "uuid": u, "model": "declared", "memory": 16 * GiB}
               for i, u in enumerate(UUIDS)]
    service = ("c.HubgridService.register_local_node = False\n"
               "c.HubgridService.nodes = [{'name': %r, 'resource_group': 'default', "
               "'capacity': {'cpu': '2', 'mem': '8G'}, 'devices': %r}]\n"
               % (slurm_node(), devices))
    with slurm_hub_with(tmp_path_factory.mktemp("slurm-gpu-hub"), service) as hub:
        yield hub


def test_a_jobs_gpu_is_the_ledgers_on_the_ledgers_node(gpu_slurm_hub):
    hub = gpu_slurm_hub
    user = new_user(hub)
    # the job prints its GPU variables and the node it ran on
    cmd = "env | grep -E '^(CUDA_|NVIDIA_|HUBGRID_GPU_MEMORY)' | sort; echo node=$SLURMD_NODENAME"
    r = spawn(hub, user, "job", cpu="0.5", mem="256M", gpu_shares="0.5", session_type="batch",
              command=cmd)
    assert r.status_code in (201, 202), r.text

    def ended():
        done = [a for a in allocations(hub, user) if a["state"] == "released"]
        return done[0] if done else None

    a = eventually(ended, timeout=120)
    assert a, hub_log(hub)
    assert a["exit_code"] == 0, a
    [g] = a["gpus"]
    assert (g["share"], g["memory"]) == ("0.5", 8 * GiB)
    log = hub.call("GET", f"allocations/{a['id']}/logs", user).text
    seen = dict(line.split("=", 1) for line in log.splitlines()
                if line.startswith(("CUDA_", "NVIDIA_", "HUBGRID_GPU_MEMORY", "node=")))
    assert seen == {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": g["uuid"],
        "NVIDIA_VISIBLE_DEVICES": g["uuid"],
        "HUBGRID_GPU_MEMORY_FRACTION": "0.5",
        "HUBGRID_GPU_MEMORY_BYTES": str(8 * GiB),
        "node": a["node"],  # Slurm ran it where the ledger placed it
    }, log
    assert g["uuid"] in UUIDS and jobs(f"hubgrid-{user}") == []
