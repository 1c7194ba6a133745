"""GET usage through the service's real tornado app (no hub): who sees whose
rows, the figures, CSV parsed back, and 400s for bad input."""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest

from ledger_world import T0, Cluster
from service_app import served  # noqa: F401

HOUR = dt.timedelta(hours=1)
DAY0 = T0.date().isoformat()
PERIOD = f"start={DAY0}&end={(T0 + dt.timedelta(days=1)).date().isoformat()}"


@pytest.fixture
def used(served):  # noqa: F811
    """alice: 1 GPU + 2 cores for 1 h (ended) and a 0.5 share running;
    bob (acme/web): 0.5 core for 1 h; gina (globex): 4 cores for 2 h.
    The service's clock stands 3 h after T0."""
    c = Cluster(served.world)
    c.set_policy("default")
    c.add_group("gpu", {"n1": ("A100", "A100")}, domains=("acme", "globex"))
    c.join("bob", "acme", "web")
    a1 = c.submit("alice", "ml", "gpu", slots={"cpu": "2", "gpu": "1"})
    c.submit("alice", "ml", "gpu", slots={"cpu": "1", "gpu.shares": "0.5"})
    b1 = c.submit("bob", "web", "gpu", slots={"cpu": "0.5"})
    g1 = c.submit("gina", "lab", "gpu", slots={"cpu": "4"})
    start = c.now
    c.now = start + HOUR
    c.release("alice", a1["id"])
    c.release("bob", b1["id"])
    c.now = start + 2 * HOUR
    c.release("gina", g1["id"])
    served.svc.clock = lambda: T0 + 3 * HOUR
    return served


async def get(served, path, user):  # noqa: F811
    resp, body = await served.call("GET", path, user)
    assert resp.code == 200, body
    return body


async def test_each_caller_sees_only_the_rows_they_may_see(used):
    names = {}
    for who in ("alice", "bob", "ada", "gina", "gus", "root"):
        body = await get(used, f"usage?{PERIOD}", who)
        names[who] = {g["user"] for g in body["groups"]}
    assert names == {"alice": {"alice"}, "bob": {"bob"}, "ada": {"alice", "bob"},
                     "gina": {"gina"}, "gus": {"gina"}, "root": {"alice", "bob", "gina"}}
    by_domain = await get(used, f"usage?{PERIOD}&by=domain", "gus")
    assert [g["domain"] for g in by_domain["groups"]] == ["globex"]
    for path, who in (("usage?user=alice", "gina"), ("usage?user=alice", "gus"),
                      ("usage?user=alice", "bob"), ("usage?domain=acme", "gus"),
                      ("usage?user=nobody", "root"), ("usage?domain=nowhere", "root")):
        resp, body = await used.call("GET", path, who)
        assert resp.code == 404 and "not found" in body["message"], (path, who, body)
    # a user naming their own domain still sees only their own rows
    mine = await get(used, f"usage?{PERIOD}&domain=acme", "alice")
    assert [g["user"] for g in mine["groups"]] == ["alice"]


async def test_the_figures_count_ended_and_running_sessions_exactly(used):
    body = await get(used, f"usage?{PERIOD}&by=project", "root")
    rows = {(g["domain"], g["project"]): g for g in body["groups"]}
    ml = rows[("acme", "ml")]
    # submitted at T0 + 1, 2, 3, 4 s; released 1 h (alice, bob) and 2 h (gina)
    # after the last submit; the running share counts up to the service's now
    running_s = 3 * 3600 - 2
    assert (ml["sessions"], ml["running"]) == (2, 1)
    assert ml["slot_seconds"]["gpu"] == "3603" and ml["gpu_hours"] == "1.000833"
    assert Decimal(ml["slot_seconds"]["gpu.shares"]) == Decimal("0.5") * running_s
    assert Decimal(ml["slot_seconds"]["cpu"]) == 2 * 3603 + running_s
    assert rows[("globex", "lab")]["core_hours"] == "8.000000"
    assert rows[("acme", "web")]["slot_seconds"] == {"cpu": "1800.5"}
    total = body["total"]
    for slot in ("cpu", "gpu", "gpu.shares"):
        assert sum(Decimal(g["slot_seconds"].get(slot, "0")) for g in body["groups"]) == \
            Decimal(total["slot_seconds"][slot])
    assert total["sessions"] == 4 and body["as_of"] == (T0 + 3 * HOUR).isoformat()


async def test_the_daily_series_and_the_csv_say_the_same(used):
    body = await get(used, f"usage?{PERIOD}&by=user&series=daily", "ada")
    assert [d["day"] for d in body["series"]] == [DAY0]
    assert body["series"][0]["slot_seconds"] == body["total"]["slot_seconds"]
    assert {g["user"]: [d["day"] for d in g["series"]] for g in body["groups"]} == {
        "alice": [DAY0], "bob": [DAY0]}
    resp, text = await used.call("GET", f"usage?{PERIOD}&by=user&format=csv", "ada")
    assert resp.code == 200
    assert resp.headers["Content-Type"].startswith("text/csv")
    assert resp.headers["Content-Disposition"].startswith(
        f'attachment; filename="usage-user-{DAY0}-')
    rows = list(csv.DictReader(io.StringIO(text)))
    plain = await get(used, f"usage?{PERIOD}&by=user", "ada")
    assert [r["user"] for r in rows] == [g["user"] for g in plain["groups"]]
    for r, g in zip(rows, plain["groups"]):
        assert (int(r["sessions"]), r["gpu_device_hours"], r["slot_seconds.cpu"]) == (
            g["sessions"], g["gpu_device_hours"], g["slot_seconds"]["cpu"])
        assert r["domain"] == "acme" and r["period_start"] == plain["start"]


BAD = [
    ("start=yesterday", "start: not an ISO 8601"),
    ("end=2026-13-01", "end: not an ISO 8601"),
    ("start=2026-02-01&end=2026-01-01", "must be after start"),
    ("start=2026-01-01&end=2026-01-01", "must be after start"),
    ("start=2020-01-01&end=2026-01-01", "longer than 731 days"),
    ("by=keypair", "by: 'keypair' is not one of"),
    ("series=hourly", "series:"),
    ("format=xml", "format:"),
]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # parsing: no database
async def test_bad_input_is_a_400_with_the_reason(served):  # noqa: F811
    for query, words in BAD:
        resp, body = await served.call("GET", f"usage?{query}", "alice")
        assert resp.code == 400 and words in body["message"], (query, body)
    # an unknown parameter is refused like on every endpoint (422)
    resp, body = await served.call("GET", "usage?colour=red", "alice")
    assert resp.code == 422 and "colour" in body["message"]


async def test_without_a_period_the_last_30_utc_days_up_to_today_are_shown(used):
    body = await get(used, "usage", "alice")
    assert body["end"] == "2030-01-02T00:00:00+00:00"
    assert body["start"] == "2029-12-03T00:00:00+00:00"
    assert body["by"] == "user" and body["series_interval"] is None
