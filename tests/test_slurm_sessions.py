"""Compute sessions as jobs of a real single-node Slurm, through the real hub.

The hub is the one every Slurm module shares (tests/slurm_fixtures.py:
``make test`` starts Slurm, scripts/start-slurm.sh; the hub maps the resource
group ``default`` to its partition).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import requests

from session_fixtures import (allocations, eventually, hub_log, run_in_terminal, server_of, spawn,
                              stop_server, wait_ready)
from slurm_fixtures import PARTITION, jobs, new_user  # noqa: F401 - slurm_hub: conftest.py

MiB = 2**20


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
