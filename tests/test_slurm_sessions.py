"""Compute sessions as jobs of a real single-node Slurm, through the real hub.

`make test` installs and starts Slurm (scripts/start-slurm.sh) and names its
partition in HUBGRID_TEST_SLURM_PARTITION; the hub maps the resource group
``default`` to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

from hub_fixtures import launch_hub, require, stop_hub
from session_fixtures import (allocations, eventually, hub_log, run_in_terminal, server_of, spawn,
                              stop_server, wait_ready)

PARTITION = os.environ.get("HUBGRID_TEST_SLURM_PARTITION", "")
MiB = 2**20


def jobs(name: str) -> list[dict]:
    """Slurm's jobs named ``name``: id, state, partition, cpus, memory, comment."""
    out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i|%T|%P|%C|%m|%k"],
                         capture_output=True, text=True, check=True).stdout
    keys = ("id", "state", "partition", "cpus", "memory", "comment")
    return [dict(zip(keys, line.split("|"))) for line in out.splitlines() if line]


@pytest.fixture(scope="module")
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
    # a reclaim pass every second (the lifetime test below)
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "slurm"}, config=config,
                     service_config="c.HubgridService.reclaim_interval = 1.0\n")
    try:
        yield hub
    finally:
        stop_hub(hub)
        for job in subprocess.run(["squeue", "-h", "-o", "%i|%j"], capture_output=True,
                                  text=True).stdout.splitlines():
            jid, name = job.split("|", 1)
            if name.startswith("hubgrid-s"):
                subprocess.run(["scancel", jid])


def new_user(hub) -> str:
    name = "s" + uuid.uuid4().hex[:8]
    assert hub.login(name).status_code == 302
    return name


def test_a_session_is_a_job_in_the_mapped_partition_with_its_allocation(slurm_hub):
    hub = slurm_hub
    user = new_user(hub)
    assert spawn(hub, user, "one", cpu="1", mem="512M").status_code in (201, 202)
    try:
        wait_ready(hub, user, "one")
        [job] = jobs(f"hubgrid-{user}")
        assert (job["state"], job["partition"], job["cpus"], job["memory"]) == (
            "RUNNING", PARTITION, "1", "512M")
        [a] = allocations(hub, user, "allocated")
        assert a["server_name"] == "one"
        assert job["comment"] == f"hubgrid-allocation={a['id']}"  # what reconcile reads
        # the venv's `hubgrid` in a Lab terminal of the job's server
        shown = run_in_terminal(hub, user, "one", "command -v hubgrid")
        assert str(Path(sys.executable).parent / "hubgrid") in shown, shown
        r = requests.get(f"{hub.url}/user/{user}/one/api/status", timeout=30,
                         headers={"Authorization": f"token {hub.token(user)}"})
        assert r.status_code == 200, r.text
    finally:
        stop_server(hub, user, "one")
    assert eventually(lambda: jobs(f"hubgrid-{user}") == [], timeout=30)
    assert [a["state"] for a in allocations(hub, user)] == ["released"]


def test_a_batch_job_keeps_exit_code_and_output(slurm_hub):
    hub = slurm_hub
    user = new_user(hub)
    cmd = "echo hello from slurm; exit 4"
    r = spawn(hub, user, "job", cpu="1", mem="256M", session_type="batch", command=cmd)
    assert r.status_code in (201, 202), r.text

    def ended():
        done = [a for a in allocations(hub, user) if a["state"] == "released"]
        return done[0] if done else None

    a = eventually(ended, timeout=120)
    assert a, hub_log(hub)
    assert a["exit_code"] == 4 and a["command"] == cmd
    log = hub.call("GET", f"allocations/{a['id']}/logs", user)
    assert log.status_code == 200 and "hello from slurm" in log.text
    assert jobs(f"hubgrid-{user}") == []
    assert eventually(lambda: server_of(hub, user, "job") is None, timeout=30)


def test_a_refused_session_submits_no_job(slurm_hub):
    hub = slurm_hub
    user = new_user(hub)
    r = spawn(hub, user, "big", cpu="100000")
    assert 400 <= r.status_code < 500 and "largest node" in r.text
    assert jobs(f"hubgrid-{user}") == []
    assert allocations(hub, user) == []


def test_vfolders_are_refused_on_slurm_before_anything_is_asked(slurm_hub):
    hub = slurm_hub
    user = new_user(hub)
    r = spawn(hub, user, "vf", vfolders=["data"])
    assert r.status_code == 400 and "does not mount vfolders" in r.text, r.text
    assert jobs(f"hubgrid-{user}") == []
    assert allocations(hub, user) == []


def test_a_job_past_its_lifetime_is_warned_then_reclaimed_and_cancelled(slurm_hub):
    """Backend.AI #13273 (a lifetime that never expired), on a real Slurm job:
    warned on the allocation while the job runs, then stopped through the hub
    (the job cancelled) and released as 'reclaimed (lifetime)'."""
    hub = slurm_hub
    user, policy = new_user(hub), "life-" + uuid.uuid4().hex[:6]
    assert hub.call("POST", "resource-policies", "admin", json={
        "name": policy, "max_session_lifetime": 12, "reclaim_warning": 4}).status_code == 201
    r = hub.call("PATCH", f"users/{user}", "admin", json={"resource_policy": policy})
    assert r.status_code == 200, r.text
    assert spawn(hub, user, "short", cpu="1", mem="256M").status_code in (201, 202)
    wait_ready(hub, user, "short")
    [a] = allocations(hub, user, "allocated")
    assert len(jobs(f"hubgrid-{user}")) == 1

    def warned_while_running():
        notice = hub.call("GET", f"allocations/{a['id']}", user).json()["reclaim"]
        return notice if notice and jobs(f"hubgrid-{user}") else None

    notice = eventually(warned_while_running, timeout=30, interval=0.3)
    assert notice and notice["rule"] == "lifetime", hub_log(hub)
    assert eventually(lambda: server_of(hub, user, "short") is None, timeout=40), hub_log(hub)
    assert eventually(lambda: jobs(f"hubgrid-{user}") == [], timeout=30)
    done = eventually(lambda: [x for x in allocations(hub, user, "released")
                               if x["release_reason"].startswith("reclaimed (lifetime)")],
                      timeout=30)
    assert [x["id"] for x in done] == [a["id"]], allocations(hub, user)
