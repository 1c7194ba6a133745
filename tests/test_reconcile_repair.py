"""Reconcile's repairs (quota_service/operations/reconcile_repair.py) with a
fake engine and a fake Slurm: each looks again just before it acts and skips
what no longer holds, releases name reconcile and happen once, and every act
(or its failure) is in the access log. The real engines and Slurm are in
tests/test_reconcile_chaos.py."""

from __future__ import annotations

import datetime as dt
import uuid

import docker.errors
import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import Allocation, AuditEntry, Project, ResourceGroup, User
from quota_service.operations import reconcile
from quota_service.operations import reconcile_diff as rd
from quota_service.operations.reconcile_repair import Actor, Tools, repair_one

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
ACTOR = Actor("root", "acme", "keypair", "127.0.0.1")
ENGINE = "tcp://engine-1:2375"


class FakeEngine:
    """An engine holding ``held`` (container id -> allocation label)."""

    def __init__(self, held: dict[str, str]):
        self.held = dict(held)
        self.removed: list[str] = []

    def inspect_container(self, cid):
        if cid not in self.held:
            raise docker.errors.NotFound("no such container")
        return {"Config": {"Labels": {"hubgrid.allocation": self.held[cid]}}}

    def remove_container(self, cid, force=False):
        assert force
        del self.held[cid]
        self.removed.append(cid)

    def close(self):
        pass


class FakeSlurm:
    """squeue and scancel over ``jobs`` (id -> state)."""

    def __init__(self, jobs: dict[str, str], fail_scancel: bool = False):
        self.jobs = dict(jobs)
        self.cancelled: list[str] = []
        self.fail_scancel = fail_scancel

    def __call__(self, argv: list[str]) -> str:
        if argv[0] == "scancel":
            if self.fail_scancel:
                raise RuntimeError("scancel failed (1): Access/permission denied")
            self.cancelled.append(argv[1])
            self.jobs[argv[1]] = "CANCELLED"
            return ""
        job = argv[argv.index("-j") + 1]
        if job not in self.jobs:
            raise RuntimeError("squeue -h failed (1): slurm_load_jobs error: Invalid job id "
                               "specified")
        return f"{job}|hubgrid-alice|{self.jobs[job]}|2026-03-01T11:00:00|(null)|/x/y.log\n"


@pytest.fixture
def ledger(tenancy):
    """Makes allocations of alice's in acme/ml; returns (factory, make)."""
    factory = tenancy.session_factory
    with db.transaction(factory) as s:
        s.add(ResourceGroup(name="default"))

    def make(state: str = "allocated") -> str:
        with db.transaction(factory) as s:
            u = s.scalar(sa.select(User).where(User.name == "alice"))
            p = s.scalar(sa.select(Project).where(Project.name == "ml"))
            rg = s.scalar(sa.select(ResourceGroup).where(ResourceGroup.name == "default"))
            a = Allocation(id=str(uuid.uuid4()), user_id=u.id, project_id=p.id,
                           domain_id=u.domain_id, resource_group_id=rg.id, state=state,
                           origin="hub", server_name="s", slots={"cpu": "1"},
                           created_at=NOW - dt.timedelta(hours=1))
            s.add(a)
            return a.id

    return factory, make


def tools(factory, engine=None, slurm=None) -> Tools:
    return Tools(factory, lambda: NOW, lambda url, timeout: engine, 10.0, "squeue", "scancel",
                 run=slurm or FakeSlurm({}))


def state_of(factory, allocation: str) -> tuple[str, str]:
    with factory() as s:
        a = s.get(Allocation, allocation)
        return a.state, a.release_reason


def audit_log(factory) -> list[tuple[str, str, str, str | None]]:
    with factory() as s:
        return [(e.action, e.outcome, e.target, e.domain)
                for e in s.scalars(sa.select(AuditEntry).order_by(AuditEntry.id))]


def end_detail(factory, allocation) -> str:
    with factory() as s:
        return s.scalars(sa.select(AuditEntry.detail).where(
            AuditEntry.action == "session.end", AuditEntry.target == allocation)).one()


def orphan(allocation, cid="c1"):
    return rd.Difference(rd.ORPHAN, cid, f"container {cid}", "its allocation was released",
                         "remove the container", allocation=allocation, engine=ENGINE,
                         domain="acme")


def test_an_orphan_container_is_removed_unless_it_is_gone_relabelled_or_live_again(ledger):
    factory, make = ledger
    over, live = make("released"), make("allocated")
    engine = FakeEngine({"c1": over, "c2": "someone-else", "c3": live})
    t = tools(factory, engine)
    assert repair_one(t, orphan(over, "c1"), ACTOR) == {
        "id": "orphan-container:c1", "outcome": "repaired",
        "detail": f"removed container c1 from {ENGINE}"}
    assert repair_one(t, orphan(over, "c1"), ACTOR)["detail"] == "the container is gone already"
    assert repair_one(t, orphan(over, "c2"), ACTOR)["outcome"] == "skipped"
    assert repair_one(t, orphan(live, "c3"), ACTOR)["detail"] == \
        f"its allocation {live} is allocated now"
    assert engine.removed == ["c1"]
    assert audit_log(factory) == [
        ("reconcile.remove-container", "success", "orphan-container:c1", "acme")]


def test_a_leaked_allocation_is_released_once_with_a_reason_naming_reconcile(ledger):
    factory, make = ledger
    a = make()
    d = rd.Difference(rd.LEAKED, a, f"allocation {a}", "no hub server holds it (made 3600 s "
                      "ago)", "release the allocation", allocation=a, domain="acme")
    assert repair_one(tools(factory), d, ACTOR)["outcome"] == "repaired"
    assert state_of(factory, a) == ("released", "reconcile: no hub server holds it (made "
                                                "3600 s ago)")
    again = repair_one(tools(factory), d, ACTOR)
    assert (again["outcome"], again["detail"]) == ("skipped", f"allocation {a} is released "
                                                              "already")
    # the session's own end (its access-log record, about the allocation), then reconcile's act
    assert [e[:3] for e in audit_log(factory)] == [
        ("session.end", "success", a),
        ("reconcile.release-allocation", "success", f"leaked-allocation:{a}")]
    assert "reconcile: no hub server holds it" in end_detail(factory, a)


def dead(allocation, job="7", lingering=False):
    return rd.Difference(rd.DEAD_JOB, allocation, f"allocation {allocation}",
                         f"its Slurm job {job} is gone", "release the allocation",
                         allocation=allocation, job=job, lingering=lingering, domain="acme")


def test_a_dead_job_is_closed_and_cancelled_only_where_slurm_still_lists_it(ledger):
    factory, make = ledger
    gone, ending, back = make(), make(), make()
    slurm = FakeSlurm({"8": "COMPLETING", "9": "RUNNING"})
    t = tools(factory, slurm=slurm)
    assert repair_one(t, dead(gone, "7"), ACTOR)["detail"] == f"released allocation {gone}"
    assert repair_one(t, dead(ending, "8", True), ACTOR)["detail"] == (
        f"released allocation {ending}, cancelled Slurm job 8")
    assert repair_one(t, dead(back, "9"), ACTOR)["detail"] == "its Slurm job 9 is RUNNING now"
    assert slurm.cancelled == ["8"]
    assert [state_of(factory, a)[0] for a in (gone, ending, back)] == [
        "released", "released", "allocated"]


def test_a_failed_act_is_reported_and_logged_as_an_error(ledger):
    factory, make = ledger
    a = make()
    out = repair_one(tools(factory, slurm=FakeSlurm({"8": "COMPLETING"}, fail_scancel=True)),
                     dead(a, "8", True), ACTOR)
    assert out["outcome"] == "failed" and "permission denied" in out["detail"]
    # released before the cancel failed: the session's end is logged, the failed act too
    assert audit_log(factory) == [("session.end", "success", a, "acme"),
                                  ("reconcile.close-job", "error", f"dead-job:{a}", "acme")]


def test_a_stray_job_is_cancelled_unless_it_ended_or_its_allocation_lives_again(ledger):
    factory, make = ledger
    over, live = make("released"), make()
    slurm = FakeSlurm({"7": "RUNNING", "8": "COMPLETED", "9": "RUNNING"})

    def stray(job, allocation):
        return rd.Difference(rd.STRAY_JOB, job, f"Slurm job {job}", "its allocation ended",
                             f"scancel job {job}", allocation=allocation, job=job)

    t = tools(factory, slurm=slurm)
    assert repair_one(t, stray("7", over), ACTOR)["detail"] == "cancelled Slurm job 7"
    assert repair_one(t, stray("8", over), ACTOR)["detail"] == "the Slurm job 8 ended already"
    assert repair_one(t, stray("9", live), ACTOR)["outcome"] == "skipped"
    assert repair_one(t, stray("6", over), ACTOR)["detail"] == "the Slurm job 6 ended already"
    assert slurm.cancelled == ["7"]
    assert audit_log(factory) == [("reconcile.cancel-job", "success", "stray-job:7", None)]


class StartingHub:
    """A hub whose only active server, alice's ``s``, is starting."""

    async def _paged(self, path, query=""):
        return [{"name": "alice", "servers": {"s": {"pending": "spawn", "state": {}}}}]


async def test_a_session_starting_while_the_engines_are_read_is_not_an_orphan(ledger):
    """The ledger is read after the engines: the allocation of a container
    seen is in it, however old the container looks (no grace needed)."""
    factory, make = ledger
    made: list[str] = []

    class Engine(FakeEngine):
        def containers(self, all=False, filters=None):
            made.append(make())  # the spawner: the allocation first, then the container
            return [{"Id": "c1", "Names": ["/s"], "State": "running", "Created": 0,
                     "Labels": {"hubgrid.allocation": made[-1]}}]

    t = Tools(factory, lambda: NOW, lambda url, timeout: Engine({}), 10.0, None, None)
    ctx = reconcile.Context(t, lambda: [ENGINE], StartingHub(), 5.0, True, lambda: None)
    report = await reconcile.run(ctx)
    assert made and report["differences"] == [] and report["complete"]
    assert report["sources"]["docker"] == {ENGINE: {"read": True, "containers": 1}}
