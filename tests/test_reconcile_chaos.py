"""Reconcile on the real components: a hub with Slurm sessions, the service,
both Docker engines ($HUBGRID_TEST_DOCKER_HOSTS) and Slurm
($HUBGRID_TEST_SLURM_PARTITION).

Injected behind the service's back: orphan containers on both engines
(labelled with allocations that ended), leaked allocations (ledger rows of
hub servers that do not exist), a dead job (a real session's Slurm job
cancelled with scancel) and a stray job (a hubgrid job whose allocation
ended). One dry run of ``hubgrid-admin reconcile`` lists every one, one
repair of what it listed repairs every one (each in the access log), a
second dry run finds nothing; the healthy session and a container of
another hubgrid (``reconcile_unknown = False``) are untouched.

The hub polls its servers only hourly here and mirrors hourly, so neither
finds the damage before reconcile does.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from hub_fixtures import launch_hub, require, stop_hub
from session_fixtures import allocations, eventually, spawn, wait_ready

from quota_service.core.models import Allocation, Project, ResourceGroup, User
from quota_service.operations import reconcile_cli

PARTITION = os.environ.get("HUBGRID_TEST_SLURM_PARTITION", "")
HOSTS = [h for h in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if h]
IMAGE = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE", "hubgrid/base:latest")
TAG = "r" + uuid.uuid4().hex[:6]  # users, containers and jobs of this module


def squeue(*args: str) -> list[list[str]]:
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%j|%T", *args],
                         capture_output=True, text=True).stdout
    return [line.split("|") for line in out.splitlines() if line]


def job_state(job: str) -> str | None:
    return next((state for jid, _name, state in squeue("-j", job) if jid == job), None)


@pytest.fixture(scope="module")
def chaos(tmp_path_factory):
    require("Slurm", bool(PARTITION) and shutil.which("sbatch") is not None,
            "run `make test` (scripts/start-slurm.sh)")
    require("two Docker engines", len(HOSTS) >= 2, "run `make test` (HUBGRID_TEST_DOCKER_HOSTS)")
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test`")
    import docker

    engines = [docker.APIClient(base_url=url, version="auto", timeout=30) for url in HOSTS]
    state = tmp_path_factory.mktemp("reconcile-hub")
    config = (f"c.HubgridSlurmSpawner.partitions = {{'default': {PARTITION!r}}}\n"
              "c.HubgridSlurmSpawner.pending_poll_interval = 0.5\n"
              "c.HubgridSlurmSpawner.startup_poll_interval = 0.5\n"
              "c.Spawner.poll_interval = 3600\n"
              # the REST start answers at once (202): both sessions start together
              "c.JupyterHub.tornado_settings = {'slow_spawn_timeout': 0}\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n")
    service = (f"c.HubgridService.docker_hosts = {HOSTS!r}\n"
               "c.HubgridService.hub_sync_interval = 3600\n"
               "c.HubgridService.reconcile_unknown = False\n")
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "slurm"}, config=config, service_config=service)
    try:
        yield hub, engines
    finally:
        stop_hub(hub)
        for jid, name, _state in squeue():
            if name.startswith(f"hubgrid-{TAG}"):
                subprocess.run(["scancel", jid])
        for client in engines:
            for c in client.containers(all=True, filters={"label": f"chaos={TAG}"}):
                client.remove_container(c["Id"], force=True)
            client.close()


def ledger_rows(hub, user: str, states: list[str], minutes_ago: int) -> list[str]:
    """Allocations of ``user``'s project in group default, written straight
    into the service's database (hub servers named ghost-N)."""
    engine = sa.create_engine(f"sqlite:///{hub.state / 'hubgrid.sqlite'}")
    ids = []
    try:
        with Session(engine) as s, s.begin():
            u = s.scalars(sa.select(User).where(User.name == user)).one()
            project = s.scalars(sa.select(Project).where(Project.domain_id == u.domain_id)).first()
            rg = s.scalars(sa.select(ResourceGroup).where(ResourceGroup.name == "default")).one()
            at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
            for n, state in enumerate(states):
                ids.append(str(uuid.uuid4()))
                ended = state == "released"
                s.add(Allocation(
                    id=ids[-1], user_id=u.id, project_id=project.id, domain_id=u.domain_id,
                    resource_group_id=rg.id, state=state, origin="hub",
                    server_name=f"ghost-{n}", slots={"cpu": "1", "mem": str(2**28)},
                    created_at=at - dt.timedelta(minutes=minutes_ago),
                    admitted_at=at - dt.timedelta(minutes=minutes_ago),
                    released_at=at if ended else None, ended_at=at if ended else None,
                    release_reason="stopped" if ended else ""))
    finally:
        engine.dispose()
    return ids


def orphan(client, allocation: str, start: bool) -> str:
    c = client.create_container(IMAGE, ["sleep", "600"], name=f"hubgrid-{TAG}-{allocation[:8]}",
                                labels={"hubgrid.allocation": allocation, "chaos": TAG})
    if start:
        client.start(c["Id"])
    return c["Id"]


def cli(env: dict, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = reconcile_cli.main(["reconcile", *args], env=env, out=out, err=out)
    return code, out.getvalue()


def test_one_pass_finds_and_repairs_orphans_leaks_and_dead_jobs_on_the_real_components(chaos):
    hub, engines = chaos
    keep, lost = f"{TAG}keep", f"{TAG}lost"
    for user in (keep, lost):
        assert hub.login(user).status_code == 302
    kp = hub.call("POST", "keypairs", "admin", json={"user": "admin"}).json()
    env = {"HUBGRID_API_URL": hub.api, "HUBGRID_ACCESS_KEY": kp["access_key"],
           "HUBGRID_SECRET_KEY": kp["secret_key"]}
    for user in (keep, lost):
        assert spawn(hub, user, "one", cpu="1", mem="256M").status_code in (201, 202)

    # while the sessions start: ended allocations, their orphan containers on
    # both engines and a stray job; a container of another hubgrid
    ended = ledger_rows(hub, keep, ["released"] * 3, minutes_ago=10)
    orphans = [orphan(engines[0], ended[0], start=True), orphan(engines[1], ended[1], start=False)]
    foreign = orphan(engines[0], str(uuid.uuid4()), start=False)
    stray = subprocess.run(
        ["sbatch", "--parsable", "-p", PARTITION, f"--job-name=hubgrid-{TAG}stray",
         f"--comment=hubgrid-allocation={ended[2]}", f"--output={hub.state / 'stray.out'}",
         "--mem=64M", "--wrap", "sleep 600"],
        capture_output=True, text=True, check=True).stdout.strip().split(";")[0]

    for user in (keep, lost):
        wait_ready(hub, user, "one")
    [dead] = allocations(hub, lost, "allocated")
    [healthy] = allocations(hub, keep, "allocated")
    [lost_job] = [jid for jid, name, state in squeue("-n", f"hubgrid-{lost}") if state == "RUNNING"]
    subprocess.run(["scancel", lost_job], check=True)  # behind the hub's and the service's back
    assert eventually(lambda: job_state(lost_job) in (None, "CANCELLED"), timeout=30)
    leaked = ledger_rows(hub, lost, ["allocated", "allocated"], minutes_ago=1)

    expected = ({f"orphan-container:{c}" for c in orphans}
                | {f"leaked-allocation:{a}" for a in leaked}
                | {f"dead-job:{dead['id']}", f"stray-job:{stray}"})
    seen = subprocess.run([sys.executable, "-m", "quota_service.operations.reconcile_cli",
                           "reconcile", "--json"], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)
    assert seen.returncode == 1, seen.stderr  # differences found
    report = json.loads(seen.stdout)
    assert report["complete"] and report["repairs"] is None, report["sources"]
    assert {d["id"] for d in report["differences"]} == expected, report
    assert any(foreign[:12] in n["object"] for n in report["spared"])

    code, out = cli(env, "--repair", "--json", "--only", *sorted(expected), "stray-job:0")
    repaired = json.loads(out)
    assert code == 0, out
    outcomes = {r["id"]: r["outcome"] for r in repaired["repairs"]}
    assert outcomes == {**{i: "repaired" for i in expected}, "stray-job:0": "skipped"}

    code, out = cli(env)
    assert code == 0 and "0 difference(s)" in out, out

    # reality agrees
    for client, cid in zip(engines, orphans):
        assert not client.containers(all=True, filters={"id": cid})
    assert engines[0].containers(all=True, filters={"id": foreign})
    # (scancel answers at once; the job passes through COMPLETING on its way out)
    assert eventually(lambda: job_state(stray) in (None, "CANCELLED"), timeout=30), \
        job_state(stray)
    by_id = {a["id"]: a for a in allocations(hub, lost) + allocations(hub, keep)}
    for a in [dead["id"], *leaked]:
        assert by_id[a]["state"] == "released" and "reconcile" in by_id[a]["release_reason"]
    assert by_id[healthy["id"]]["state"] == "allocated"
    assert [state for _jid, _name, state in squeue("-n", f"hubgrid-{keep}")] == ["RUNNING"]
    log = hub.call("GET", "audit?user=admin&limit=500", "admin").json()["entries"]
    audited = {e["target"] for e in log if e["action"].startswith("reconcile.")
               and e["outcome"] == "success"}
    assert expected <= audited
