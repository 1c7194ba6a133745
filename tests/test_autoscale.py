"""The autoscaling decision (quota_service/serving/autoscale.py) with plain
data: every outcome, bounds clamped and said, cooldown, scale to zero and
the wake-up, the rate, and rules refused with the field."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D

import pytest

from quota_service.serving.autoscale import Rule, RuleError, decide, rate, wake, within_limits

T = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
OUT = Rule("requests_per_second", "gt", D("10"), 2, 60, 1, 5)
IN = Rule("requests_per_second", "lt", D("1"), -1, 60, 0, 5)


def test_a_metric_past_its_threshold_scales_by_the_step():
    d = decide(OUT, D("12.5"), 2, None, T)
    assert (d.replicas, d.outcome) == (4, "scaled")
    assert d.reason == "requests_per_second 12.5 > 10: 2 -> 4 replicas (step +2)"
    d = decide(IN, D("0.2"), 3, None, T)
    assert (d.replicas, d.outcome) == (2, "scaled")


def test_a_metric_within_its_threshold_changes_nothing():
    for value in (D("10"), D("3")):
        d = decide(OUT, value, 2, None, T)
        assert (d.replicas, d.outcome) == (None, "idle") and "is not > 10" in d.reason
    assert decide(Rule("in_flight", "ge", D("10"), 1, 0, 1, 3), D("10"), 1, None,
                  T).outcome == "scaled"
    assert decide(OUT, None, 2, None, T).outcome == "idle"


def test_a_step_across_a_bound_is_clamped_and_says_so():
    d = decide(OUT, D("50"), 4, None, T)
    assert (d.replicas, d.outcome) == (5, "clamped")
    assert "clamped to max_replicas 5" in d.reason
    d = decide(Rule("in_flight", "lt", D("1"), -3, 0, 1, 5), D("0"), 2, None, T)
    assert (d.replicas, d.outcome) == (1, "clamped") and "min_replicas 1" in d.reason


def test_a_step_at_its_bound_is_refused_with_the_reason():
    d = decide(OUT, D("50"), 5, None, T)
    assert (d.replicas, d.outcome) == (None, "at-bound")
    assert d.reason.endswith("already at max_replicas 5")
    d = decide(IN, D("0"), 0, None, T)
    assert (d.replicas, d.outcome) == (None, "at-bound") and "min_replicas 0" in d.reason


def test_a_step_up_is_held_to_what_the_creators_limits_leave():
    d = decide(OUT, D("50"), 2, None, T)  # 2 -> 4
    assert within_limits(d, 2, 2, "") is d and within_limits(d, 2, 5, "") is d
    held = within_limits(d, 2, 1, "cpu: 4 asked, 1 left")
    assert (held.replicas, held.outcome) == (3, "clamped")
    assert held.reason == ("requests_per_second 50 > 10: 2 -> 4 replicas (step +2): clamped to 3 "
                           "by the creator's limits (cpu: 4 asked, 1 left)")
    refused = within_limits(d, 2, 0, "cpu: 2 asked, none left")
    assert (refused.replicas, refused.outcome) == (None, "quota")
    assert "refused, the creator's limits leave room for no more replica (cpu: 2 asked" in \
        refused.reason
    # steps down, refusals and waits are not the limits' business
    down = decide(IN, D("0.2"), 3, None, T)
    assert within_limits(down, 3, 0, "x") is down
    at = decide(OUT, D("50"), 5, None, T)
    assert within_limits(at, 5, 0, "x") is at


def test_the_cooldown_holds_a_step_and_says_until_when():
    d = decide(OUT, D("50"), 2, T, T + dt.timedelta(seconds=59))
    assert (d.replicas, d.outcome) == (None, "cooldown")
    assert "until 2030-01-01T00:01:00+00:00" in d.reason
    assert decide(OUT, D("50"), 2, T, T + dt.timedelta(seconds=60)).outcome == "scaled"
    # at a bound the bound is said, not the cooldown
    assert decide(OUT, D("50"), 5, T, T).outcome == "at-bound"


def test_scale_to_zero_and_a_cold_start_on_the_next_call():
    assert decide(IN, D("0"), 1, None, T).replicas == 0
    d = wake(0, 0)
    assert (d.replicas, d.outcome) == (1, "wake") and "cold start" in d.reason
    assert wake(0, 2).replicas == 2
    assert wake(3, 0).replicas is None


def test_the_rate_between_two_readings():
    assert rate(100, 160, D("30")) == D("2.000")
    assert rate(None, 160, D("30")) is None
    assert rate(100, 160, D("0")) is None
    assert rate(200, 10, D("5")) is None  # the counter started again (a restart)


@pytest.mark.parametrize("rule,field", [
    (Rule("cpu", "gt", D(1), 1, 0, 0, 1), "metric"),
    (Rule("in_flight", "eq", D(1), 1, 0, 0, 1), "comparator"),
    (Rule("in_flight", "gt", D(-1), 1, 0, 0, 1), "threshold"),
    (Rule("in_flight", "gt", D("NaN"), 1, 0, 0, 1), "threshold"),
    (Rule("in_flight", "gt", D(1), 0, 0, 0, 1), "step"),
    (Rule("in_flight", "gt", D(1), 65, 0, 0, 1), "step"),
    (Rule("in_flight", "gt", D(1), 1, -1, 0, 1), "cooldown"),
    (Rule("in_flight", "gt", D(1), 1, 0, 3, 2), "min_replicas"),
    (Rule("in_flight", "gt", D(1), 1, 0, 0, 65), "min_replicas"),
])
def test_a_rule_that_cannot_work_is_refused_with_its_field(rule, field):
    with pytest.raises(RuleError) as e:
        rule.check()
    assert str(e.value).startswith(field)


def test_a_sound_rule_passes_its_check():
    assert OUT.check() is OUT and IN.check() is IN
