"""One hub on the real single-node Slurm for every Slurm session module
(CI time): ``make test`` installs and starts Slurm (scripts/start-slurm.sh)
and names its partition in HUBGRID_TEST_SLURM_PARTITION; the hub maps the
resource group ``default`` to it. Session-scoped, imported once by
tests/conftest.py (a module importing it itself would get a hub of its own).
Users are made per test (``new_user``: ``s`` and 8 hex digits), so the
modules do not see each other's sessions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid

import pytest

from hub_fixtures import launch_hub, require, stop_hub

PARTITION = os.environ.get("HUBGRID_TEST_SLURM_PARTITION", "")


def jobs(name: str) -> list[dict]:
    """Slurm's jobs named ``name``: id, state, partition, cpus, memory, comment."""
    out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i|%T|%P|%C|%m|%k"],
                         capture_output=True, text=True, check=True).stdout
    keys = ("id", "state", "partition", "cpus", "memory", "comment")
    return [dict(zip(keys, line.split("|"))) for line in out.splitlines() if line]


def new_user(hub) -> str:
    name = "s" + uuid.uuid4().hex[:8]
    assert hub.login(name).status_code == 302
    return name


def slurm_node() -> str:
    """The partition's node (the one slurmd of scripts/start-slurm.sh), or ""."""
    out = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%n"], capture_output=True,
                         text=True)
    return out.stdout.split()[0] if out.returncode == 0 and out.stdout.split() else ""


@contextlib.contextmanager
def slurm_hub_with(state, service_config: str):
    """A hub on the real Slurm, the group ``default`` mapped to its
    partition, with ``service_config`` for its service; its jobs are
    cancelled when it stops."""
    require("Slurm", bool(PARTITION) and shutil.which("sbatch") is not None,
            "run `make test` (scripts/start-slurm.sh)")
    require("a Slurm node", bool(slurm_node()), "sinfo names no node")
    config = (f"c.HubgridSlurmSpawner.partitions = {{'default': {PARTITION!r}}}\n"
              "c.HubgridSlurmSpawner.pending_poll_interval = 0.5\n"
              "c.HubgridSlurmSpawner.startup_poll_interval = 0.5\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n")
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "slurm"}, config=config,
                     service_config=service_config)
    try:
        yield hub
    finally:
        stop_hub(hub)
        for job in subprocess.run(["squeue", "-h", "-o", "%i|%j"], capture_output=True,
                                  text=True).stdout.splitlines():
            jid, name = job.split("|", 1)
            if name.startswith("hubgrid-s"):
                subprocess.run(["scancel", jid])


@pytest.fixture(scope="session")
def slurm_hub(tmp_path_factory):
    # a reclaim pass every second (test_slurm_sessions' lifetime test), a
    # serving pass every 2 s (test_replicas_slurm)
    with slurm_hub_with(tmp_path_factory.mktemp("slurm-hub"),
                        "c.HubgridService.reclaim_interval = 1.0\n"
                        "c.HubgridService.serving_interval = 2\n") as hub:
        yield hub
