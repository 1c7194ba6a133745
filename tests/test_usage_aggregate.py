"""Usage accounting's pure sums (operations.usage) over hand-made intervals:
clipping, running sessions up to now, fractional shares, UTC days, empty
periods, exact arithmetic."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from quota_service.operations import usage
from quota_service.operations.usage import Interval, aggregate

UTC = dt.timezone.utc
D = Decimal


def t(day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0):
    return dt.datetime(2026, 3, day, hour, minute, second, micro, tzinfo=UTC)


def iv(aid, start, end=None, user="alice", project="ml", domain="acme", rg="gpu", **slots):
    amounts = {k.replace("_", "."): D(v) for k, v in slots.items()}
    return Interval(aid, user, domain, project, rg, amounts, start, end)


NOW = t(20)


def test_an_interval_inside_the_period_counts_its_own_amount_for_its_own_duration():
    r = aggregate([iv("a", t(2, 10), t(2, 12), cpu="2", mem=str(4 * 2**30), gpu="1")],
                  t(1), t(3), NOW)
    f = usage.figures_model(r.total)
    assert (f["sessions"], f["running"]) == (1, 0)
    assert f["session_hours"] == "2.000000"
    assert f["core_hours"] == "4.000000"
    assert f["mem_gib_hours"] == "8.000000"
    assert (f["gpu_hours"], f["gpu_share_hours"], f["gpu_device_hours"]) == (
        "2.000000", "0.000000", "2.000000")
    assert f["slot_seconds"] == {"cpu": "14400", "gpu": "7200", "mem": str(4 * 2**30 * 7200)}


def test_amounts_are_never_multiplied_by_summed_durations():
    """BA-6927: two sessions (1 GPU for 1 h, 3 GPUs for 3 h) used 10 GPU-hours, not 16."""
    r = aggregate([iv("a", t(2, 0), t(2, 1), gpu="1"), iv("b", t(2, 0), t(2, 3), gpu="3")],
                  t(1), t(3), NOW)
    assert r.total.slot_seconds["gpu"] == D(10 * 3600)
    assert usage.figures_model(r.total)["gpu_hours"] == "10.000000"


def test_intervals_are_clipped_to_the_period():
    before = iv("before", t(1, 22), t(2, 2), cpu="1")   # 2 h inside
    after = iv("after", t(2, 23), t(3, 5), cpu="1")     # 1 h inside
    around = iv("around", t(1), t(4), cpu="1")          # 24 h inside
    outside = iv("outside", t(3), t(4), cpu="1")        # starts at the period's end
    ended_at_start = iv("edge", t(1), t(2), cpu="1")    # ends at the period's start
    r = aggregate([before, after, around, outside, ended_at_start], t(2), t(3), NOW)
    assert r.total.sessions == 3
    assert r.total.slot_seconds["cpu"] == D((2 + 1 + 24) * 3600)


def test_a_running_session_counts_up_to_now_and_no_further():
    now = t(2, 6, 30)
    r = aggregate([iv("run", t(2, 5), None, gpu_shares="0.25")], t(2), t(3), now)
    assert (r.total.sessions, r.total.running) == (1, 1)
    assert r.total.seconds == D(5400)
    assert r.total.slot_seconds["gpu.shares"] == D("1350.00")
    assert usage.figures_model(r.total)["gpu_share_hours"] == "0.375000"


def test_a_running_session_is_clipped_to_a_period_that_ended():
    r = aggregate([iv("run", t(1, 12), None, cpu="1")], t(1), t(2), t(5))
    assert r.total.seconds == D(12 * 3600) and r.total.running == 1


def test_fractional_shares_and_whole_gpus_are_kept_apart_and_added_for_devices():
    r = aggregate([iv("half", t(2, 0), t(2, 2), gpu_shares="0.5"),
                   iv("third", t(2, 0), t(2, 3), gpu_shares="0.33"),
                   iv("two", t(2, 0), t(2, 1), gpu="2")], t(2), t(3), NOW)
    f = usage.figures_model(r.total)
    assert r.total.slot_seconds["gpu.shares"] == D("0.5") * 7200 + D("0.33") * 10800
    assert (f["gpu_hours"], f["gpu_share_hours"], f["gpu_device_hours"]) == (
        "2.000000", "1.990000", "3.990000")


def test_microsecond_times_stay_exact():
    r = aggregate([iv("a", t(2, 0, 0, 0, 1), t(2, 0, 0, 1, 0), cpu="0.001")], t(2), t(3), NOW)
    assert r.total.seconds == D("0.999999")
    assert r.total.slot_seconds["cpu"] == D("0.000999999")


def test_a_daily_series_cuts_at_utc_midnight_and_adds_up_to_the_total():
    # 22:00 on the 2nd to 03:00 on the 4th, seen from +02:00 times
    plus2 = dt.timezone(dt.timedelta(hours=2))
    start = dt.datetime(2026, 3, 3, 0, 0, tzinfo=plus2)      # 22:00 UTC on the 2nd
    end = dt.datetime(2026, 3, 4, 5, 0, tzinfo=plus2)        # 03:00 UTC on the 4th
    r = aggregate([iv("a", start, end, cpu="1")], t(1), t(5), NOW, daily=True)
    assert {d.isoformat(): f.seconds for d, f in r.days.items()} == {
        "2026-03-02": D(2 * 3600), "2026-03-03": D(24 * 3600), "2026-03-04": D(3 * 3600)}
    assert all(f.sessions == 1 for f in r.days.values())  # counted in each day it ran
    assert sum(f.slot_seconds["cpu"] for f in r.days.values()) == r.total.slot_seconds["cpu"]
    assert usage.every_day(t(1), t(5))[0] == dt.date(2026, 3, 1)
    assert len(usage.every_day(t(1), t(5))) == 4


def test_a_period_not_on_midnights_has_partial_first_and_last_days():
    r = aggregate([iv("a", t(1), t(5), cpu="1")], t(2, 12), t(3, 6), NOW, daily=True)
    assert {d.day: f.seconds for d, f in r.days.items()} == {2: D(12 * 3600), 3: D(6 * 3600)}
    assert usage.every_day(t(2, 12), t(3, 6)) == [dt.date(2026, 3, 2), dt.date(2026, 3, 3)]


def test_a_session_of_no_length_counts_once_where_it_started():
    r = aggregate([iv("z", t(2, 5), t(2, 5), cpu="1")], t(2), t(3), NOW, daily=True)
    assert (r.total.sessions, r.total.seconds) == (1, D(0))
    assert list(r.days) == [dt.date(2026, 3, 2)]
    assert aggregate([iv("z", t(3), t(3), cpu="1")], t(2), t(3), NOW).total.sessions == 0


def test_an_empty_period_has_zero_figures_and_no_groups():
    r = aggregate([iv("a", t(1), t(2), cpu="1")], t(10), t(11), NOW, daily=True)
    assert (r.total.sessions, r.groups, r.days) == (0, {}, {})
    f = usage.figures_model(r.total)
    assert f["gpu_device_hours"] == "0.000000" and f["slot_seconds"] == {}


@pytest.mark.parametrize("by,keys", [
    ("user", {("acme", "alice"), ("acme", "bob"), ("globex", "gina")}),
    ("project", {("acme", "ml"), ("acme", "web"), ("globex", "ml")}),
    ("domain", {("acme",), ("globex",)}),
    ("resource_group", {("gpu",), ("cpu",)}),
])
def test_groups_partition_the_total_exactly(by, keys):
    rows = [iv("a", t(2, 1), t(2, 4), cpu="1.5", gpu_shares="0.1"),
            iv("b", t(2, 2), t(2, 3), user="bob", project="web", cpu="0.333", gpu="1"),
            iv("c", t(1, 20), None, user="gina", domain="globex", rg="cpu", cpu="7")]
    r = aggregate(rows, t(2), t(3), t(2, 10), by=by, daily=True)
    assert set(r.groups) == keys
    for slot in ("cpu", "gpu", "gpu.shares"):
        assert sum(g.slot_seconds.get(slot, D(0)) for g in r.groups.values()) == \
            r.total.slot_seconds[slot]
    assert sum(g.sessions for g in r.groups.values()) == r.total.sessions == 3


def test_an_unknown_grouping_is_refused():
    with pytest.raises(ValueError):
        aggregate([], t(1), t(2), NOW, by="keypair")
