"""Reconcile's decision as data (quota_service/operations/reconcile_diff.py):
every path of the comparison of the ledger with containers, Slurm jobs and
hub servers, and the parsers of what the sources answer."""

from __future__ import annotations

import datetime as dt

from quota_service.operations import reconcile_diff as rd
from quota_service.operations.reconcile_diff import Allocation, Container, Job, Server, World
from quota_service.operations.reconcile_sources import (container_row, parse_squeue,
                                                         server_rows)

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
OLD = NOW - dt.timedelta(hours=1)
YOUNG = NOW - dt.timedelta(seconds=2)
GRACE = 5.0
ENGINE = "unix:///var/run/docker.sock"


def alloc(id_: str, state: str = "allocated", origin: str = "hub", server: str = "s",
          created=OLD, **kw) -> Allocation:
    return Allocation(id_, state, origin, "alice", "acme", server, created, **kw)


def released(id_: str, **kw) -> Allocation:
    return alloc(id_, "released", released=OLD + dt.timedelta(minutes=5),
                 release_reason="stopped", **kw)


def box(allocation: str, created=OLD, engine=ENGINE, cid=None) -> Container:
    return Container(engine, cid or f"c-{allocation}", f"hubgrid-{allocation}", allocation,
                     "running", created)


def job(id_: str, allocation: str | None, state: str = "RUNNING", submitted=OLD) -> Job:
    return Job(id_, "hubgrid-alice", state, allocation, submitted)


def server(allocation: str | None, pending=False, job_id=None, name="s") -> Server:
    return Server("alice", name, allocation, pending, job_id)


def world(allocations=(), containers=(), jobs=None, servers=None, unknown=True) -> World:
    return World(NOW, GRACE, {a.id: a for a in allocations}, list(containers), jobs, servers,
                 unknown)


def kinds(w: World) -> list[tuple[str, str]]:
    return [(d.kind, d.key) for d in rd.diff(w).differences]


def spared(w: World) -> list[str]:
    return [n.why for n in rd.diff(w).spared]


# --- containers ---------------------------------------------------------------

def test_a_container_of_a_live_allocation_is_healthy():
    a = alloc("a1")
    w = world([a], [box("a1")], servers=[server("a1")])
    assert rd.diff(w) == rd.Findings()


def test_a_container_of_an_ended_allocation_is_an_orphan_to_remove():
    w = world([released("a1")], [box("a1")], servers=[])
    [d] = rd.diff(w).differences
    assert (d.id, d.repair, d.engine, d.domain) == (
        "orphan-container:c-a1", "remove the container", ENGINE, "acme")
    assert "allocation a1 (alice/s) was released" in d.why and "(stopped)" in d.why


def test_a_container_naming_an_allocation_the_ledger_never_had_is_an_orphan():
    [d] = rd.diff(world([], [box("ghost")], servers=[])).differences
    assert d.kind == rd.ORPHAN and "its allocation ghost is not in the ledger" in d.why
    assert d.domain is None


def test_unknown_allocations_are_someone_elses_when_reconcile_unknown_is_off():
    w = world([], [box("ghost")], servers=[], unknown=False)
    assert kinds(w) == [] and "not in this ledger" in spared(w)[0]


def test_a_young_container_is_spared_it_may_be_starting():
    w = world([], [box("ghost", created=YOUNG)], servers=[])
    assert kinds(w) == [] and "within the grace of 5 s" in spared(w)[0]


def test_a_container_a_hub_server_still_holds_is_left_to_its_spawner():
    w = world([released("a1")], [box("a1")], servers=[server("a1")])
    assert kinds(w) == [] and "still holds it" in spared(w)[0]


def test_without_the_hub_no_container_is_judged():
    w = world([released("a1")], [box("a1")], servers=None)
    assert kinds(w) == [] and "the hub was not read" in spared(w)[0]


def test_orphans_on_every_engine_are_found():
    w = world([released("a1")], [box("a1", engine="e1", cid="x"),
                                 box("a2", engine="e2", cid="y")], servers=[])
    assert kinds(w) == [(rd.ORPHAN, "x"), (rd.ORPHAN, "y")]


# --- hub servers ----------------------------------------------------------------

def test_a_live_hub_allocation_no_server_holds_is_leaked():
    [d] = rd.diff(world([alloc("a1")], servers=[])).differences
    assert (d.id, d.repair) == ("leaked-allocation:a1", "release the allocation")
    assert d.why == "no hub server holds it (made 3600 s ago)"


def test_a_pending_hub_request_no_server_holds_is_leaked_too():
    assert kinds(world([alloc("a1", state="pending")], servers=[])) == [(rd.LEAKED, "a1")]


def test_an_allocation_a_server_holds_is_not_leaked():
    assert kinds(world([alloc("a1")], servers=[server("a1")])) == []


def test_a_young_allocation_is_spared_its_spawner_may_not_have_recorded_it():
    w = world([alloc("a1", created=YOUNG)], servers=[])
    assert kinds(w) == [] and "within the grace" in spared(w)[0]


def test_an_allocation_of_a_starting_server_is_spared():
    w = world([alloc("a1", server="gpu")], servers=[server(None, pending=True, name="gpu")])
    assert kinds(w) == [] and spared(w) == ["the hub lists its server as pending (starting or stopping)"]


def test_api_allocations_are_never_leaked_no_hub_server_holds_them():
    assert kinds(world([alloc("a1", origin="api")], servers=[])) == []


def test_without_the_hub_no_allocation_is_taken_for_leaked():
    assert kinds(world([alloc("a1")], servers=None)) == []


# --- Slurm jobs -------------------------------------------------------------------

def test_a_job_cancelled_behind_the_services_back_is_a_dead_job():
    """The hub's server names job 7, Slurm no longer lists it."""
    w = world([alloc("a1")], jobs=[], servers=[server("a1", job_id="7")])
    [d] = rd.diff(w).differences
    assert (d.id, d.job, d.lingering, d.repair) == (
        "dead-job:a1", "7", False, "release the allocation")
    assert d.why == "its Slurm job 7 is gone (not in squeue)"


def test_a_job_slurm_lists_as_ended_is_a_dead_job():
    w = world([alloc("a1")], jobs=[job("7", "a1", "CANCELLED")], servers=[server("a1")])
    [d] = rd.diff(w).differences
    assert d.kind == rd.DEAD_JOB and d.why == "its Slurm job 7 ended (CANCELLED)"
    assert not d.lingering


def test_a_dead_job_that_lingers_is_cancelled_as_well():
    w = world([alloc("a1")], jobs=[job("7", "a1", "COMPLETING")], servers=[server("a1")])
    [d] = rd.diff(w).differences
    assert d.lingering and d.repair == "release the allocation and scancel job 7"


def test_a_job_queued_again_while_the_hub_believes_its_server_runs_was_requeued():
    w = world([alloc("a1")], jobs=[job("7", "a1", "PENDING")],
              servers=[server("a1", job_id="7")])
    [d] = rd.diff(w).differences
    assert d.kind == rd.DEAD_JOB and d.lingering and "requeued" in d.why


def test_a_queued_job_of_a_starting_server_is_spared():
    w = world([alloc("a1")], jobs=[job("7", "a1", "PENDING")],
              servers=[server("a1", pending=True, job_id="7")])
    assert kinds(w) == [] and spared(w) == ["the hub lists its server as pending (starting or stopping)"]


def test_a_running_job_is_healthy_even_beside_an_ended_one():
    w = world([alloc("a1")], jobs=[job("6", "a1", "CANCELLED"), job("7", "a1", "RUNNING")],
              servers=[server("a1", job_id="7")])
    assert rd.diff(w) == rd.Findings()


def test_without_slurm_no_job_is_judged():
    assert kinds(world([alloc("a1")], jobs=None, servers=[server("a1", job_id="7")])) == []


def test_a_session_without_a_job_is_not_a_slurm_session():
    assert kinds(world([alloc("a1")], jobs=[], servers=[server("a1")])) == []


def test_a_leaked_allocation_is_not_reported_again_as_a_dead_job():
    w = world([alloc("a1")], jobs=[job("7", "a1", "CANCELLED")], servers=[])
    assert kinds(w) == [(rd.LEAKED, "a1")]


def test_a_running_job_of_an_ended_allocation_is_a_stray_job_to_cancel():
    w = world([released("a1")], jobs=[job("7", "a1")], servers=[])
    [d] = rd.diff(w).differences
    assert (d.id, d.repair, d.allocation) == ("stray-job:7", "scancel job 7", "a1")
    assert "was released" in d.why


def test_a_job_naming_an_unknown_allocation_is_stray_unless_unknown_ones_are_spared():
    assert kinds(world([], jobs=[job("7", "ghost")], servers=[])) == [(rd.STRAY_JOB, "7")]
    w = world([], jobs=[job("7", "ghost")], servers=[], unknown=False)
    assert kinds(w) == [] and "not in this ledger" in spared(w)[0]


def test_a_job_nothing_ties_to_an_allocation_is_left_alone():
    w = world([], jobs=[job("7", None)], servers=[])
    assert kinds(w) == [] and "no allocation names it" in spared(w)[0]


def test_a_job_the_hub_ties_to_a_live_allocation_is_healthy():
    w = world([alloc("a1")], jobs=[job("7", None)], servers=[server("a1", job_id="7")])
    assert rd.diff(w) == rd.Findings()


def test_a_stray_job_a_hub_server_still_holds_is_left_to_its_spawner():
    w = world([released("a1")], jobs=[job("7", "a1")], servers=[server("a1", job_id="7")])
    assert kinds(w) == [] and "still holds it" in spared(w)[0]


def test_a_young_stray_job_is_spared():
    w = world([released("a1")], jobs=[job("7", "a1", submitted=YOUNG)], servers=[])
    assert kinds(w) == [] and "within the grace" in spared(w)[0]


def test_finished_and_ending_jobs_of_ended_allocations_are_not_stray():
    w = world([released("a1")], jobs=[job("7", "a1", "COMPLETED"), job("8", "a1", "COMPLETING")],
              servers=[])
    assert rd.diff(w) == rd.Findings()


def test_differences_come_by_kind_then_key_with_stable_ids():
    w = world([released("r"), alloc("l"), alloc("d")],
              [box("r", cid="z"), box("r", cid="b")],
              jobs=[job("9", "r"), job("8", "d", "FAILED")],
              servers=[server("d", name="d")])
    assert [d.id for d in rd.diff(w).differences] == [
        "orphan-container:b", "orphan-container:z", "leaked-allocation:l", "dead-job:d",
        "stray-job:9"]


# --- what the sources answer ---------------------------------------------------------

def test_squeue_lines_become_hubgrid_jobs_with_the_allocation_their_comment_names():
    a = "0b2f6a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    b = "1c3f6a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    text = (f"41|hubgrid-alice|RUNNING|2026-03-01T12:00:00|hubgrid-allocation={a}|/srv/x.out\n"
            "42|hubgrid-check|COMPLETED|2026-03-01T12:00:01|(null)|/tmp/job.out\n"
            f"43|somebody-else|RUNNING|2026-03-01T12:00:02|hubgrid-allocation={a}|/x/{a}.log\n"
            "44|hubgrid-bob|CANCELLED by 1000|Unknown|(null)|/a|b/c.log\n"
            # a job from before the comment: its output file names it
            f"45|hubgrid-carl|RUNNING|2026-03-01T12:00:03|(null)|/srv/slurm-sessions/{b}.log\n"
            # the comment wins over a file named like another allocation
            f"46|hubgrid-dora|RUNNING|2026-03-01T12:00:04|hubgrid-allocation={b}|/s/{a}.log\n"
            f"47|hubgrid-eve|RUNNING|2026-03-01T12:00:05|hubgrid-allocation={a}x|/tmp/e.out\n")
    jobs = parse_squeue(text)
    assert [(j.id, j.state, j.allocation) for j in jobs] == [
        ("41", "RUNNING", a), ("42", "COMPLETED", None), ("44", "CANCELLED", None),
        ("45", "RUNNING", b), ("46", "RUNNING", b), ("47", "RUNNING", None)]
    assert jobs[0].submitted is not None and jobs[0].submitted.tzinfo is not None
    assert jobs[2].submitted is None


def test_hub_user_models_give_each_servers_allocation_job_and_pending_state():
    models = [{"name": "alice", "servers": {
        "": {"pending": None, "state": {"hubgrid_allocation": "a1", "job_id": "7"}},
        "gpu": {"pending": "spawn", "state": {}},
    }}, {"name": "bob"}]
    assert server_rows(models) == [Server("alice", "", "a1", False, "7"),
                                   Server("alice", "gpu", None, True, None)]


def test_only_containers_labelled_with_an_allocation_are_read():
    item = {"Id": "abc", "Names": ["/hubgrid-alice"], "State": "exited", "Created": 1767225600,
            "Labels": {"hubgrid.allocation": "a1"}}
    assert container_row(ENGINE, item) == Container(
        ENGINE, "abc", "hubgrid-alice", "a1", "exited",
        dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    assert container_row(ENGINE, {**item, "Labels": {}}) is None
