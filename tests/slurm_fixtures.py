"""One hub on the real single-node Slurm for every Slurm session module
(CI time): ``make test`` installs and starts Slurm (scripts/start-slurm.sh)
and names its partition in HUBGRID_TEST_SLURM_PARTITION; the hub maps the
resource group ``default`` to it. Session-scoped, imported once by
tests/conftest.py (a module importing it itself would get a hub of its own).
Users are made per test (``new_user``: ``s`` and 8 hex digits), so the
modules do not see each other's sessions.
"""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def slurm_hub(tmp_path_factory):
    require("Slurm", bool(PARTITION) and shutil.which("sbatch") is not None,
            "run `make test` (scripts/start-slurm.sh)")
    ok = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%T"], capture_output=True, text=True)
    require("a Slurm node", ok.returncode == 0 and ok.stdout.strip() != "", ok.stderr)
    state = tmp_path_factory.mktemp("slurm-hub")
    config = (f"c.HubgridSlurmSpawner.partitions = {{'default': {PARTITION!r}}}\n"
              "c.HubgridSlurmSpawner.pending_poll_interval = 0.5\n"
              "c.HubgridSlurmSpawner.startup_poll_interval = 0.5\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n")
    # a reclaim pass every second (test_slurm_sessions' lifetime test), a
    # serving pass every 2 s (test_replicas_slurm)
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "slurm"}, config=config,
                     service_config="c.HubgridService.reclaim_interval = 1.0\n"
                     "c.HubgridService.serving_interval = 2\n")
    try:
        yield hub
    finally:
        stop_hub(hub)
        for job in subprocess.run(["squeue", "-h", "-o", "%i|%j"], capture_output=True,
                                  text=True).stdout.splitlines():
            jid, name = job.split("|", 1)
            if name.startswith("hubgrid-s"):
                subprocess.run(["scancel", jid])
