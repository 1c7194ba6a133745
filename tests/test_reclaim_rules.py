"""Idle reclamation's pure rules (quota_service/operations/reclaim: rules,
window, activity) with injected clocks and readings: every decision path."""

from __future__ import annotations

import ast
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from quota_service.operations.reclaim import activity, rules
from quota_service.operations.reclaim.window import Reading, Window, average, judge

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
D = Decimal


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def run(st, now, *, last=None, util=None, current=None, kept=None, slack=10.0, shadow=False):
    found = rules.findings(st, T0, last, "the hub", util, now, current, kept)
    return rules.decide(st, found, current, now, slack, shadow)


# --- the modules are pure ------------------------------------------------------

@pytest.mark.parametrize("module", ["rules", "window", "activity"])
def test_the_rule_modules_do_no_io(module):
    path = Path(__file__).parent.parent / "quota_service/operations/reclaim" / f"{module}.py"
    tree = ast.parse(path.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    assert imported <= {"__future__", "datetime", "dataclasses", "decimal"}


# --- lifetime ----------------------------------------------------------------------

LIFE = rules.Settings(max_lifetime=3600, warning=300)


def test_lifetime_does_nothing_before_the_warning_lead():
    assert run(LIFE, at(3000)).action == "none"


def test_lifetime_warns_at_the_lead_time_then_reclaims_at_the_deadline():
    warn = run(LIFE, at(3300))
    assert warn.action == "warn" and warn.notice.rule == "lifetime"
    assert warn.notice.deadline == at(3600)
    assert run(LIFE, at(3400), current=warn.notice).action == "none"
    done = run(LIFE, at(3600), current=warn.notice)
    assert done.action == "reclaim" and done.notice.numbers["max_session_lifetime"] == 3600


def test_lifetime_expires_even_while_the_session_is_busy():
    """Backend.AI #13273: activity must not make the lifetime endless."""
    warn = run(LIFE, at(3300), last=at(3299))
    assert run(LIFE, at(3600), last=at(3599), current=warn.notice).action == "reclaim"


def test_a_late_warning_moves_the_deadline_so_the_owner_is_warned_first():
    """The service was down across the deadline: warn now, reclaim a lead later."""
    late = run(LIFE, at(4000))
    assert late.action == "warn" and late.notice.deadline == at(4000 + 300 - 10)
    assert run(LIFE, at(4100), current=late.notice).action == "none"
    assert run(LIFE, at(4290), current=late.notice).action == "reclaim"


def test_without_a_warning_lead_the_deadline_reclaims_at_once():
    st = rules.Settings(max_lifetime=60, warning=0)
    assert run(st, at(59)).action == "none"
    assert run(st, at(60)).action == "reclaim"


# --- idle --------------------------------------------------------------------------

IDLE = rules.Settings(idle_timeout=600, warning=120)


def test_idle_counts_from_the_start_without_any_activity():
    assert run(IDLE, at(479)).action == "none"
    assert run(IDLE, at(480)).action == "warn"


def test_idle_counts_from_the_last_activity():
    d = run(IDLE, at(990), last=at(500))
    assert d.action == "warn" and d.notice.deadline == at(1100)
    assert d.notice.numbers["idle_seconds"] == 490


def test_a_short_timeout_is_announced_half_way_not_as_soon_as_the_session_rests():
    """A 2-minute idle_timeout with the default 300 s warning: announced after
    60 s without activity, reclaimed at 120 s (not at 300 s, and no warning
    while the user merely pauses); the same holds for a short lifetime."""
    st = rules.Settings(idle_timeout=120, warning=300)
    assert run(st, at(59), slack=1).action == "none"
    warn = run(st, at(61), slack=1)
    assert warn.action == "warn" and warn.notice.deadline == at(120)
    assert run(st, at(120), current=warn.notice, slack=1).action == "reclaim"
    life = rules.Settings(max_lifetime=100, warning=300)
    assert run(life, at(49), slack=1).action == "none"
    assert run(life, at(50), slack=1).notice.deadline == at(100)


def test_activity_after_a_warning_clears_it():
    warn = run(IDLE, at(990), last=at(500))
    assert run(IDLE, at(1010), last=at(1005), current=warn.notice).action == "clear"


def test_keep_pushes_the_deadline_and_is_bounded():
    st = rules.Settings(idle_timeout=600, warning=120, keep_extension=900, max_keeps=2)
    warn = run(st, at(485))
    until = rules.keep(st, 0, None, warn.notice, at(510))
    assert until == at(600 + 900)
    assert run(st, at(700), kept=until).action == "none"
    d = run(st, at(1385), kept=until)
    assert d.action == "warn" and d.notice.deadline == until
    until2 = rules.keep(st, 1, until, d.notice, at(1401))
    assert until2 == until + dt.timedelta(seconds=900)
    with pytest.raises(ValueError, match="max_keeps 2"):
        rules.keep(st, 2, until2, None, at(1500))
    with pytest.raises(ValueError, match="allows no keep"):
        rules.keep(IDLE, 0, None, None, at(1))
    assert rules.can_keep(st, 1) and not rules.can_keep(st, 2) and not rules.can_keep(IDLE, 0)


def test_the_earliest_rule_is_announced():
    st = rules.Settings(idle_timeout=600, max_lifetime=700, warning=200)
    d = run(st, at(450), last=at(0))
    assert d.action == "warn" and d.notice.rule == "idle"
    d2 = run(st, at(520), last=at(300), current=d.notice)  # activity: idle moves past lifetime
    assert d2.action == "warn" and d2.notice.rule == "lifetime"


def test_shadow_mode_reports_once_and_warns_never():
    assert run(IDLE, at(500), shadow=True).action == "none"
    d = run(IDLE, at(600), shadow=True)
    assert d.action == "shadow" and d.notice.rule == "idle"
    assert run(IDLE, at(700), shadow=True, current=d.notice).action == "none"


# --- activity ------------------------------------------------------------------------

def test_a_busy_kernel_with_no_browser_is_activity_at_the_report():
    report = {"reported_at": at(900).isoformat(), "busy_kernels": 1, "connections": 0,
              "last_activity": at(100).isoformat()}
    last, source = activity.latest(at(50), report, at(901))
    assert last == at(900) and "busy kernel" in source
    idle_report = dict(report, busy_kernels=0)
    assert activity.latest(at(50), idle_report, at(901))[0] == at(100)


def test_activity_from_a_clock_ahead_never_lies_in_the_future():
    report = {"reported_at": at(10).isoformat(), "last_activity": at(5000).isoformat()}
    assert activity.latest(None, report, at(20))[0] == at(10)
    assert activity.latest(None, None, at(20)) == (None, "nothing")
    assert activity.parse_time("not a time") is None
    assert activity.parse_time("2026-01-01T12:00:00Z") == T0


# --- utilization window -----------------------------------------------------------------

def cpu_readings(times, busy_cores, cores_used=None):
    """Readings at ``times`` of a session using ``busy_cores`` cores all along."""
    return [Reading(at(t), cpu_seconds=D(str(t)) * D(str(busy_cores)), mem_used=100,
                    mem_limit=1000) for t in times]


def test_the_window_fills_despite_timer_jitter():
    """Backend.AI #2205: readings every 10 s +- jitter still fill a 30 s window."""
    times = [0, 10.7, 19.6, 31.2]
    avg = average(cpu_readings(times, 1), at(31.2), 30, D(2), gpus=False)
    assert avg.full and avg.values["cpu"] == D("50.00") and avg.values["mem"] == D("10.00")
    assert not average(cpu_readings(times[:3], 1), at(19.6), 30, D(2), gpus=False).full


def test_cpu_is_normalised_per_granted_core():
    """Backend.AI #6092/#2804: 3 busy cores of a 4-core grant are 75 %, not 300 %."""
    avg = average(cpu_readings([0, 10, 20, 30, 40], 3), at(40), 30, D(4), gpus=False)
    assert avg.values["cpu"] == D("75.00")


def test_the_window_keeps_its_anchor_and_drops_the_rest():
    w = Window()
    for t in (0, 10, 20, 30, 40, 50):
        w.add(Reading(at(t)), keep=25)
    assert [r.at for r in w.readings] == [at(20), at(30), at(40), at(50)]
    w.add(Reading(at(45)), keep=25)  # a clock that went back is ignored
    assert w.readings[-1].at == at(50)


TH = {"cpu": D(10), "mem": D(50), "gpu_util": D(10)}


def test_and_needs_every_metric_below_or_any():
    low = average(cpu_readings([0, 10, 20, 30], D("0.05")), at(30), 30, D(1), gpus=False)
    assert judge(low, TH, "and", gpus=False).idle is True
    busy = average(cpu_readings([0, 10, 20, 30], 1), at(30), 30, D(1), gpus=False)
    j = judge(busy, TH, "and", gpus=False)
    assert j.idle is False and "cpu 100.00 % >= 10 %" in j.why
    assert judge(busy, TH, "or", gpus=False).idle is True  # mem 10 % < 50 %


def test_a_failed_gpu_reading_is_no_data_never_idle():
    """Backend.AI #10315: a failed GPU reading counted as 0 % killed busy sessions."""
    rs = [Reading(at(t), D(0), 10, 1000, gpu_util=None if t == 20 else D(90), gpu_mem=D(50))
          for t in (0, 10, 20, 30)]
    avg = average(rs, at(30), 30, D(1), gpus=True)
    for op in ("and", "or"):
        j = judge(avg, TH, op, gpus=True)
        assert j.idle is None and "gpu_util" in j.numbers["no_data"]
    # sessions without GPUs are judged without the GPU thresholds
    assert judge(avg, TH, "and", gpus=False).idle is True


def test_a_failed_cpu_reading_or_a_restarted_container_is_no_data():
    rs = cpu_readings([0, 10, 20, 30], D("0.01"))
    broken = rs[:2] + [Reading(at(20), None, 10, 1000)] + rs[3:]
    assert judge(average(broken, at(30), 30, D(1), False), TH, "or", False).idle is None
    restarted = rs[:2] + [Reading(at(20), D(0), 10, 1000)] + rs[3:]
    avg = average(restarted, at(30), 30, D(1), False)
    assert "restarted" in avg.missing["cpu"]


def test_an_under_used_session_is_warned_then_reclaimed_after_the_grace():
    st = rules.Settings(utilization_window=30, utilization_grace=100, thresholds=TH,
                        warning=60)
    low = judge(average(cpu_readings([0, 10, 20, 30], D("0.01")), at(30), 30, D(1), False),
                TH, "and", False)
    assert run(st, at(30), util=low).action == "none"  # in the grace period
    warn = run(st, at(120), util=low)
    assert warn.action == "warn" and warn.notice.deadline == at(180)
    assert run(st, at(150), util=low, current=warn.notice).action == "none"
    assert run(st, at(180), util=low, current=warn.notice).action == "reclaim"
    busy = rules.findings(st, T0, None, "", judge(average(cpu_readings(
        [0, 10, 20, 30], 1), at(30), 30, D(1), False), TH, "and", False), at(150),
        warn.notice, None)
    assert rules.decide(st, busy, warn.notice, at(150), 10).action == "clear"


def test_gpu_hours_are_exact():
    assert rules.gpu_amount([{"index": 0, "share": "0.5"}, {"index": 1, "share": "1"}]) == D("1.5")
    assert rules.gpu_hours(D("1.5"), at(0), at(7200)) == D("3.0000")


def test_the_public_notice_says_what_and_when_and_whether_it_can_be_kept():
    n = rules.Notice("idle", at(600), "no activity", {"idle_seconds": 480}, at(480))
    data = dict(rules.notice_to_json(n), max_keeps=2, keep_extension=900)
    pub = rules.public(data, 1, None)
    assert pub["rule"] == "idle" and pub["deadline"] == at(600).isoformat()
    assert pub["can_keep"] is True and pub["numbers"] == {"idle_seconds": 480}
    assert rules.public(data, 2, None)["can_keep"] is False
    assert rules.public(dict(data, shadow=True), 0, None) is None
    assert rules.public(None, 0, None) is None


def test_reasons_say_times_in_utc_to_the_second_and_the_numbers_keep_iso():
    """No raw ISO time (microseconds, offsets) in the texts
    people read; the numbers stay machine-readable."""
    st = rules.Settings(idle_timeout=600, max_lifetime=3600)
    started = T0 + dt.timedelta(microseconds=123456)
    last = T0 + dt.timedelta(seconds=5, microseconds=654321)
    found = rules.findings(st, started, last, "the hub", None, at(300), None, None)
    idle = next(f for f in found if f.rule == "idle")
    lifetime = next(f for f in found if f.rule == "lifetime")
    assert "(last: 2026-01-01 12:00:05 UTC, the hub)" in idle.reason, idle.reason
    assert "running since 2026-01-01 12:00:00 UTC," in lifetime.reason, lifetime.reason
    for f in (idle, lifetime):
        assert "+00:00" not in f.reason and ".123456" not in f.reason and "T12:" not in f.reason
    assert idle.numbers["last_activity"] == last.isoformat()
    other = dt.datetime(2026, 1, 1, 13, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert rules.utc_text(other) == "2026-01-01 12:00:00 UTC"


def test_the_final_record_has_the_numbers_and_time_of_the_stop_not_the_warnings():
    """Warned half way through a 120 s idle_timeout (idle 60 s), stopped
    7 s after the deadline: the final reason says idle 127 s at the real
    stop time, of the 120 s timeout; the warning's notice keeps its own."""
    st = rules.Settings(idle_timeout=120, warning=60)
    warned = run(st, at(60), slack=1.0)
    assert warned.action == "warn" and warned.notice.numbers["idle_seconds"] == 60
    reason, numbers = rules.final(warned.notice, at(127))
    assert numbers["idle_seconds"] == 127 and numbers["idle_timeout"] == 120
    assert numbers["stopped_at"] == at(127).isoformat() and numbers["late_seconds"] == 7
    assert reason == ("no activity for 127 s when it was stopped at 2026-01-01 12:02:07 UTC "
                      "(last: 2026-01-01 12:00:00 UTC, the start); the policy's idle_timeout "
                      "is 120 s"), reason
    assert warned.notice.numbers["idle_seconds"] == 60  # the warning's numbers stay
    life = rules.Notice("lifetime", at(3600), "running since ...",
                        {"started_at": T0.isoformat(), "max_session_lifetime": 3600}, at(3000))
    reason, numbers = rules.final(life, at(3602))
    assert numbers["ran_seconds"] == 3602 and "stopped at 2026-01-01 13:00:02 UTC" in reason
    assert "max_session_lifetime is 3600 s" in reason
