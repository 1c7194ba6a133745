"""The Prometheus metrics as rules: exact readings of hand-made ledgers (on
SQLite and PostgreSQL), bounded labels, counters that never go down, and
the endpoint's authentication (``authenticate_prometheus``).

The ledgers are built with the scheduling driver (tests/ledger_world.py,
an explicit clock); the endpoint is the real tornado app (tests/service_app.py).
The Grafana dashboard's check is in tests/test_metrics_dashboard.py.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from prometheus_client.parser import text_string_to_metric_families

from quota_service.core import authz
from quota_service.core.models import ReclaimEvent
from quota_service.operations import metrics, metrics_export
from quota_service.operations.passstats import PASSES, PassStats
from service_app import served  # noqa: F401

GIB = 2**30
SECOND = dt.timedelta(seconds=1)


def submit(cluster, user, project, group, **amounts) -> dict:
    return cluster.submit(user, project, group,
                          slots={k.replace("_", "."): v for k, v in amounts.items()})


def build(cluster) -> dict:
    """The ledger every test reads: running, ended, pending sessions, limits
    and reclaim events; returns the instants the expected values need."""
    cluster.add_group("gpu", {"a100-1": ("A100", "A100"), "t4-1": ("T4", "T4")},
                      domains=("acme", "globex"))
    cluster.add_group("tiny", {"tiny-1": ()}, cpu="1", mem="1G")
    cluster.set_node("t4-1", schedulable=False)
    cluster.set_project("acme", "ml", slots={"gpu": 2}, max_concurrent_sessions=5)
    cluster.set_domain("acme", slots={"cpu": 100})
    whole = submit(cluster, "alice", "ml", "gpu", cpu="2", gpu="1")
    t_whole = cluster.now
    half = submit(cluster, "alice", "ml", "gpu", cpu="1", gpu_shares="0.5")
    t_half = cluster.now
    submit(cluster, "gina", "lab", "gpu", cpu="4", mem="8G")
    waits = submit(cluster, "alice", "ml", "gpu", gpu="1")  # project gpu: 1.5 + 1 > 2
    t_waits = cluster.now
    submit(cluster, "alice", "ml", "tiny", cpu="1")
    submit(cluster, "alice", "ml", "tiny", cpu="1")  # the node is full
    assert [whole["state"], half["state"], waits["state"]] == ["allocated", "allocated", "pending"]
    cluster.now += dt.timedelta(seconds=100, microseconds=250_001)
    cluster.release("alice", half["id"])
    t_released = cluster.now
    with cluster.world.tx() as s:
        for kind in ("warning", "reclaimed"):
            s.add(ReclaimEvent(allocation_id=half["id"], kind=kind, rule="idle", at=t_released,
                               resource_group_id=_group_id(s, "gpu"), project_id=1,
                               domain_id=1, user_id=1, details={}))
    now = t_released + dt.timedelta(seconds=10, microseconds=3)
    return {"now": now, "whole": t_whole, "half": t_half, "released": t_released,
            "waits": t_waits}


def _group_id(s, name):
    from quota_service.core.models import ResourceGroup

    return s.query(ResourceGroup.id).filter_by(name=name).scalar()


def seconds(a: dt.datetime, b: dt.datetime) -> Decimal:
    d = b - a
    return Decimal((d.days * 86400 + d.seconds) * 10**6 + d.microseconds) / 10**6


def read(cluster, now, per_user=False, ended=None) -> metrics.Readings:
    with cluster.world.tx() as s:
        return metrics.read(s, now, per_user=per_user, ended=ended)


@pytest.fixture
def ledger(cluster):
    return cluster, build(cluster)


def test_every_family_reads_the_ledger_exactly(ledger):
    cluster, t = ledger
    r = read(cluster, t["now"])
    D = Decimal
    assert r.allocated == {
        ("gpu", "acme", "ml", "cpu"): D(2), ("gpu", "acme", "ml", "gpu"): D(1),
        ("gpu", "globex", "lab", "cpu"): D(4), ("gpu", "globex", "lab", "mem"): D(8 * GIB),
        ("tiny", "acme", "ml", "cpu"): D(1),
    }
    assert r.running == {("gpu", "acme", "ml"): 1, ("gpu", "globex", "lab"): 1,
                         ("tiny", "acme", "ml"): 1}
    # the ended half share counts to its release, the running GPU up to now
    assert r.gpu_seconds == {
        ("gpu", "acme", "ml", "whole"): seconds(t["whole"], t["now"]),
        ("gpu", "acme", "ml", "share"): D("0.5") * seconds(t["half"], t["released"]),
    }
    assert r.gpu_seconds[("gpu", "acme", "ml", "share")] == D("52.1250005")
    assert r.pending == {"gpu": 1, "tiny": 1}
    assert r.pending_reasons == {("gpu", "slot-limit", "project"): 1,
                                 ("tiny", "capacity", "resource-group"): 1}
    assert r.pending_oldest["gpu"] == seconds(t["waits"], t["now"])
    # a gpu limit counts whole devices and shares together (the share ended)
    assert r.project_used[("acme", "ml", "gpu")] == D(1)
    assert r.project_used[("acme", "ml", "cpu")] == D(3)
    assert r.project_limit == {("acme", "ml", "gpu"): D(2)}
    assert r.project_sessions_limit == {("acme", "ml"): 5}
    assert r.project_used[("globex", "lab", "mem")] == D(8 * GIB)
    assert ("acme", "web", "cpu") not in r.project_used  # nothing used, nothing limited
    assert r.domain_used == {("acme", "cpu"): D(3), ("acme", "gpu"): D(1),
                             ("globex", "cpu"): D(4), ("globex", "mem"): D(8 * GIB)}
    assert r.domain_limit == {("acme", "cpu"): D(100)}
    # the drained T4 node is not capacity
    assert r.capacity == {("gpu", "cpu"): D(16), ("gpu", "mem"): D(64 * GIB),
                          ("gpu", "gpu"): D(2), ("tiny", "cpu"): D(1), ("tiny", "mem"): D(GIB)}
    assert r.nodes == {("gpu", "true"): 1, ("gpu", "false"): 1, ("tiny", "true"): 1}
    assert r.reclaim_events == {("gpu", "warning", "idle"): 1, ("gpu", "reclaimed", "idle"): 1}
    assert r.user_allocated is None and r.user_running is None


def test_ended_sessions_folded_between_scrapes_sum_as_a_full_read(ledger):
    """The exporter keeps ended sessions' GPU-seconds between scrapes; folded
    or not, the totals are a full read's, also after later releases."""
    cluster, t = ledger
    ended = metrics.EndedTotals(margin=dt.timedelta(seconds=5))
    now = t["now"]
    for step in range(3):
        assert read(cluster, now, ended=ended).gpu_seconds == read(cluster, now).gpu_seconds
        assert ended.watermark <= now - dt.timedelta(seconds=5)
        a = submit(cluster, "alice", "ml", "gpu", cpu="1", gpu_shares="0.25")
        cluster.now += dt.timedelta(seconds=20, microseconds=11 * step)
        cluster.release("alice", a["id"])
        now = cluster.now + dt.timedelta(seconds=2 + 4 * step)  # released inside the margin
    assert read(cluster, now, ended=ended).gpu_seconds == read(cluster, now).gpu_seconds
    assert ended.totals  # history was folded, not read again


def test_a_share_counts_against_a_gpu_limit_and_alone_against_a_share_limit():
    D = Decimal
    use = {"gpu": D(1), "gpu.shares": D("0.75"), "cpu": D(2)}
    assert metrics.counted_use(use, {"gpu": D(4), "gpu.shares": D(1)}) == {
        "cpu": D(2), "gpu": D("1.75"), "gpu.shares": D("0.75")}
    assert metrics.counted_use({}, {"mem": D(1)}) == {"mem": D(0)}


def test_unknown_reason_codes_and_levels_are_other_and_unjudged_requests_none():
    assert metrics.reason_labels([]) == {("none", "none")}
    assert metrics.reason_labels([{"code": "capacity", "level": "resource-group"},
                                  {"code": "ssh-key of bob", "level": "user bob"},
                                  "junk"]) == {("capacity", "resource-group"),
                                               ("other", "other")}


def test_per_user_series_only_when_asked(ledger):
    cluster, t = ledger
    r = read(cluster, t["now"], per_user=True)
    assert r.user_running == {("gpu", "acme", "alice"): 1, ("gpu", "globex", "gina"): 1,
                              ("tiny", "acme", "alice"): 1}
    assert r.user_allocated[("gpu", "acme", "alice", "gpu")] == Decimal(1)
    labels_off = exported_labels(read(cluster, t["now"]))
    assert "user" not in {name for names in labels_off.values() for name in names}


def exported_labels(readings) -> dict[str, set[str]]:
    collector = metrics_export.LedgerCollector(readings, metrics_export.Highest(), 0.0)
    return {f.name: {k for s in f.samples for k in s.labels} for f in collector.collect()}


def test_label_sets_are_bounded_by_the_cluster_not_its_users(ledger):
    """Without per-user labels, no label takes more values than there are
    groups, domains, projects, slots, reason codes or reclaim kinds and rules."""
    cluster, t = ledger
    stats = PassStats()
    for name in PASSES:
        stats.record(name, 0.5, ok=False)
    collector = metrics_export.LedgerCollector(read(cluster, t["now"]),
                                               metrics_export.Highest(), 0.0, stats.snapshot())
    bounded = {
        "resource_group": {"gpu", "tiny"}, "domain": {"acme", "globex", "default"},
        "project": {"ml", "web", "lab", "default"}, "slot": {"cpu", "mem", "gpu", "gpu.shares"},
        "kind": {"whole", "share", *metrics_export.RECLAIM_KINDS},
        "rule": set(metrics_export.RECLAIM_RULES), "schedulable": {"true", "false"},
        "reason": metrics.REASON_CODES | {"other", "none"},
        "level": metrics.REASON_LEVELS | {"other", "none"},
        "pass": set(PASSES), "quantile": set(),
    }
    for family in collector.collect():
        for sample in family.samples:
            for label, value in sample.labels.items():
                assert value in bounded[label], (family.name, label, value)


def test_a_counter_never_goes_down_between_scrapes():
    highest = metrics_export.Highest()
    assert highest.hold("c", ("a",), Decimal(10)) == 10
    assert highest.hold("c", ("a",), Decimal("9.99")) == 10  # a session ended a moment early
    assert highest.hold("c", ("a",), Decimal(12)) == 12
    assert highest.hold("c", ("b",), Decimal(1)) == 1


# --- the endpoint ----------------------------------------------------------------


def parse(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


async def test_the_endpoint_serves_the_readings_as_prometheus_text(served, cluster):  # noqa: F811
    t = build(cluster)
    served.svc.clock = lambda: t["now"]
    resp, text = await served.call("GET", "metrics", "root")
    assert resp.code == 200, text
    assert resp.headers["Content-Type"].startswith("text/plain; version=")
    got = parse(text)
    share = ("hubgrid_gpu_share_seconds_total", (("domain", "acme"), ("kind", "share"),
                                                 ("project", "ml"), ("resource_group", "gpu")))
    assert got[share] == 52.1250005
    assert got[("hubgrid_pending_reasons", (("level", "project"), ("reason", "slot-limit"),
                                            ("resource_group", "gpu")))] == 1
    assert got[("hubgrid_reclaim_events_total", (("kind", "shadow"), ("resource_group", "tiny"),
                                                 ("rule", "lifetime")))] == 0
    assert got[("hubgrid_up", ())] == 1
    # OpenMetrics for a scraper that asks for it
    resp = await served.client.fetch(served.api + "metrics", headers={
        "Authorization": served.auth("root"),
        "Accept": "application/openmetrics-text; version=1.0.0"})
    assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
    assert resp.body.decode().rstrip().endswith("# EOF")


async def test_who_may_scrape(served):  # noqa: F811
    """Anonymous 401, users and domain admins 403, a superadmin 200; open to
    anyone with authenticate_prometheus off (read at each scrape)."""
    codes = {}
    for who in (None, "alice", "ada", "root"):
        resp, body = await served.call("GET", "metrics", who)
        codes[who] = resp.code
        if resp.code != 200:
            assert "metrics" in body["message"] or resp.code == 401, body
    assert codes == {None: 401, "alice": 403, "ada": 403, "root": 200}
    served.svc.authenticate_prometheus = False
    resp, body = await served.call("GET", "metrics")
    assert resp.code == 200 and "hubgrid_up 1.0" in body


class FakeHubAuth:
    """The hub's answer for a token: its owner's model with the token's scopes."""

    access_scopes = {"access:services!service=hubgrid"}

    def __init__(self, models: dict[str, dict]):
        self.models = models

    async def get_user(self, handler, sync=False):
        auth = handler.request.headers.get("Authorization", "")
        return self.models.get(auth.partition(" ")[2])

    def check_scopes(self, required, model):
        from jupyterhub.services.auth import check_scopes

        return check_scopes(required, set(model["scopes"]))


async def test_a_hub_token_with_read_metrics_may_scrape(served):  # noqa: F811
    """A Prometheus service's token (scopes read:metrics and access to the
    service), and a user's with read:metrics; a service without it is refused,
    as is a token the hub does not let reach this service."""
    access = "access:services!service=hubgrid"
    served.svc.hub_auth = FakeHubAuth({
        "prom": {"kind": "service", "name": "prometheus", "scopes": [access, "read:metrics"]},
        "other": {"kind": "service", "name": "other", "scopes": [access]},
        "alice-metrics": {"kind": "user", "name": "alice", "scopes": [access, "read:metrics"]},
        "alice": {"kind": "user", "name": "alice", "scopes": [access]},
        "no-access": {"kind": "service", "name": "prometheus", "scopes": ["read:metrics"]},
    })
    codes = {}
    for token in ("prom", "other", "alice-metrics", "alice", "no-access"):
        resp = await served.client.fetch(served.api + "metrics", raise_error=False,
                                         headers={"Authorization": f"Bearer {token}"})
        codes[token] = resp.code
    assert codes == {"prom": 200, "other": 403, "alice-metrics": 200, "alice": 403,
                     "no-access": 403}


@pytest.mark.parametrize("role, scopes, allowed", [
    ("superadmin", (), True), ("domain-admin", (), False), ("user", (), False),
    ("user", ("read:metrics",), True), (None, ("read:metrics",), True), (None, (), False),
])
def test_the_rule_of_who_reads_metrics(role, scopes, allowed):
    from quota_service.core.models import Role

    p = None if role is None else authz.Principal("x", Role(role), "acme")
    assert authz.may_read_metrics(p, frozenset(scopes)) is allowed
