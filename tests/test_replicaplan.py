"""The serving controller's decision (quota_service/serving/replicaplan.py)
over plain data: every branch."""

from __future__ import annotations

import pytest

from quota_service.serving.replicaplan import (Action, Replica, number, plan,
                                               server_name)

EID = "0123456789abcdef0123456789abcdef"


def name(n: int) -> str:
    return server_name("emb", EID, n)


def test_server_names_carry_the_endpoint_and_a_number():
    assert name(3) == "ep-emb-01234567-3"
    assert number(name(3)) == 3
    assert number("ep-emb-3") is None
    assert number("my-server") is None


@pytest.mark.parametrize("endpoint", ["a", "store-echo-a858e9", "my_model__v2-", "x" * 64,
                                      "a-" * 32])
def test_server_names_are_valid_for_jupyterhub_whatever_the_endpoint_name(endpoint):
    from jupyterhub.slugs import is_valid_safe_slug

    for n in (0, 63, 9999):
        got = server_name(endpoint, EID, n)
        assert is_valid_safe_slug(got), got
        assert number(got) == n and got.endswith(f"-01234567-{n}")
    assert server_name("store-echo-a858e9", EID, 0) == "ep-store-echo-a8-01234567-0"
    assert server_name("my_model__v2-", EID, 1) == "ep-my-model-v2-01234567-1"


def test_a_new_endpoint_starts_its_replicas_with_the_lowest_numbers():
    p = plan("emb", EID, 2, [])
    assert p.actions == (Action("start", name(0)), Action("start", name(1)))
    assert (p.state, p.reason, p.serving) == ("provisioning", "0 of 2 replica(s) serve", 0)
    assert not p.remove


def test_replicas_that_start_are_not_started_again():
    p = plan("emb", EID, 2, [Replica(name(0), "starting"), Replica(name(1), "starting")])
    assert p.actions == ()
    assert p.state == "provisioning"


def test_all_serving_is_running():
    p = plan("emb", EID, 2, [Replica(name(0), "serving"), Replica(name(1), "serving")])
    assert (p.actions, p.state, p.serving) == ((), "running", 2)
    assert p.reason == "2 of 2 replica(s) serve"


def test_some_serving_is_degraded_and_a_stopped_replica_is_replaced_under_its_name():
    p = plan("emb", EID, 2, [Replica(name(0), "serving"), Replica(name(1), "stopped")])
    assert p.actions == (Action("replace", name(1)),)
    assert (p.state, p.reason) == ("degraded", "1 of 2 replica(s) serve")


def test_a_missing_replica_takes_the_lowest_free_number():
    p = plan("emb", EID, 3, [Replica(name(1), "serving"), Replica(name(2), "serving")])
    assert p.actions == (Action("start", name(0)),)
    assert p.state == "degraded"


def test_replacing_comes_before_new_numbers():
    p = plan("emb", EID, 3, [Replica(name(4), "stopped")])
    assert p.actions == (Action("replace", name(4)), Action("start", name(0)),
                         Action("start", name(1)))


def test_scaling_down_stops_starting_replicas_first_then_the_highest_numbers():
    reps = [Replica(name(0), "serving"), Replica(name(1), "serving"),
            Replica(name(2), "starting"), Replica(name(3), "serving")]
    p = plan("emb", EID, 2, reps)
    assert p.actions == (Action("stop", name(2)), Action("stop", name(3)))
    assert (p.state, p.serving) == ("running", 3)


def test_stopped_replicas_not_needed_are_removed():
    p = plan("emb", EID, 1, [Replica(name(0), "serving"), Replica(name(1), "stopped")])
    assert p.actions == (Action("stop", name(1)),)
    assert p.state == "running"


def test_zero_desired_is_running_with_nothing():
    p = plan("emb", EID, 0, [Replica(name(0), "serving")])
    assert p.actions == (Action("stop", name(0)),)
    assert p.state == "running"


def test_a_failure_keeps_the_endpoint_failed_and_starts_nothing():
    p = plan("emb", EID, 2, [Replica(name(0), "serving")],
             failure="image x is not on node n")
    assert p.actions == ()
    assert (p.state, p.reason, p.serving) == ("failed", "image x is not on node n", 1)


def test_a_failed_endpoint_still_stops_what_is_too_many():
    p = plan("emb", EID, 1, [Replica(name(0), "serving"), Replica(name(1), "starting")],
             failure="exited")
    assert p.actions == (Action("stop", name(1)),)
    assert p.state == "failed"


def test_terminating_stops_every_replica_then_says_remove():
    reps = [Replica(name(1), "stopped"), Replica(name(0), "serving")]
    p = plan("emb", EID, 2, reps, terminating=True, failure="ignored")
    assert p.actions == (Action("stop", name(0)), Action("stop", name(1)))
    assert (p.state, p.reason, p.remove) == ("terminating", "stopping 2 replica(s)", False)
    done = plan("emb", EID, 2, [], terminating=True)
    assert (done.actions, done.state, done.remove) == ((), "terminating", True)
    assert done.reason == "every replica is gone"


def test_an_unknown_state_is_refused():
    with pytest.raises(ValueError, match="unknown state 'zombie'"):
        plan("emb", EID, 1, [Replica(name(0), "zombie")])


def test_a_stopping_replica_is_waited_for_and_keeps_its_number():
    p = plan("emb", EID, 2, [Replica(name(0), "stopping"), Replica(name(1), "serving")])
    assert p.actions == (Action("start", name(2)),)
    t = plan("emb", EID, 2, [Replica(name(0), "stopping")], terminating=True)
    assert (t.actions, t.remove, t.reason) == ((), False, "stopping 1 replica(s)")
