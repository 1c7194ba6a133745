"""The pure admission core as rules, over hand-built snapshots.

Levels are a user's resource policy, the project and the domain. A request
alone above a limit is refused; one that fits once others release waits
(pending). Every reason carries its numbers and a sentence for the user.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from quota_service.scheduling.admission import (
    Group,
    Limits,
    Request,
    Snapshot,
    Usage,
    decide,
    remaining,
    sessions_left,
    waiting_for_capacity,
    waiting_in_line,
)

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
GiB = 2**30


def D(x) -> Decimal:
    return Decimal(str(x))


def slots(**amounts) -> dict[str, Decimal]:
    """slots(gpu=1, gpu_shares=0.5) -> {"gpu": 1, "gpu.shares": 0.5}."""
    return {k.replace("_", "."): D(v) for k, v in amounts.items()}


NODE = {"cpu": D(32), "mem": D(128 * GiB), "gpu": D(4)}
GROUP = Group(
    name="gpu", accessible=True, session_types=frozenset({"interactive", "batch"}),
    largest_node=NODE, capacity=slots(cpu=64, mem=256 * GiB, gpu=8),
)


def request(queued=False, session_type="interactive", **amounts) -> Request:
    return Request(user="alice", keypair=None, project="ml-team", domain="acme",
                   resource_group="gpu", slots=slots(**amounts), session_type=session_type,
                   queued=queued)


def user(limit=None, used=None, **kw) -> tuple[Limits, Usage]:
    return _level("user", "alice", limit, used, kw)


def project(limit=None, used=None, **kw) -> tuple[Limits, Usage]:
    return _level("project", "ml-team", limit, used, kw)


def domain(limit=None, used=None, **kw) -> tuple[Limits, Usage]:
    return _level("domain", "acme", limit, used, kw)


def _level(level, name, limit, used, kw) -> tuple[Limits, Usage]:
    usage = {k: kw.pop(k) for k in ("sessions", "pending_slots", "pending_sessions") if k in kw}
    limits = Limits(level, name, slots=dict(limit or {}), **kw)
    return limits, Usage(slots=dict(used or {}), **usage)


def snapshot(*levels, group=GROUP) -> Snapshot:
    return Snapshot(now=NOW, levels=tuple(levels), group=group)


def verdict(req, *levels, group=GROUP) -> tuple[str, list[str]]:
    d = decide(req, snapshot(*levels, group=group))
    return d.verdict, [r.text for r in d.reasons]


# ---------------------------------------------------------------- slot limits

SLOT_LIMITS = [
    # (rule, level, request, verdict, texts)
    ("under a user policy limit: admit",
     user(slots(gpu=2), slots(gpu=1)), request(gpu=1), "admit", []),
    ("used + requested exactly at the limit: admit",
     project(slots(gpu_shares=4), slots(gpu_shares=3)), request(gpu_shares=1), "admit", []),
    ("user policy: used + requested above: wait",
     user(slots(gpu=2), slots(gpu=2)), request(gpu=1), "pending",
     ["user alice gpu: used 2 + requested 1 > limit 2 (over by 1)"]),
    ("user policy: requested alone above: refuse",
     user(slots(gpu=2)), request(gpu=3), "refuse",
     ["user alice gpu: used 0 + requested 3 > limit 2 (over by 1)"]),
    ("project fractional GPUs: used + requested above: wait",
     project(slots(gpu_shares=4), slots(gpu_shares=3.5)), request(gpu_shares=1), "pending",
     ["project ml-team gpu.shares: used 3.5 + requested 1 > limit 4 (over by 0.5)"]),
    ("project fractional GPUs: requested alone above: refuse",
     project(slots(gpu_shares=0.5)), request(gpu_shares=0.75), "refuse",
     ["project ml-team gpu.shares: used 0 + requested 0.75 > limit 0.5 (over by 0.25)"]),
    ("project whole GPUs: used + requested above: wait",
     project(slots(gpu=4), slots(gpu=3)), request(gpu=2), "pending",
     ["project ml-team gpu: used 3 + requested 2 > limit 4 (over by 1)"]),
    ("domain cpu: used + requested above: wait",
     domain(slots(cpu=16), slots(cpu=15.5)), request(cpu=1), "pending",
     ["domain acme cpu: used 15.5 + requested 1 > limit 16 (over by 0.5)"]),
    ("domain memory: requested alone above: refuse",
     domain(slots(mem=8 * GiB)), request(mem=16 * GiB), "refuse",
     ["domain acme mem: used 0 B + requested 16 GiB > limit 8 GiB (over by 8 GiB)"]),
    ("a slot the policy does not name is unlimited",
     user(slots(cpu=4), slots(cpu=4)), request(gpu=4), "admit", []),
    ("a slot not named is limited to zero when unspecified_limited: refuse",
     user(slots(cpu=4), unspecified_limited=True), request(cpu=1, gpu=1), "refuse",
     ["user alice gpu: used 0 + requested 1 > limit 0 (over by 1)"]),
    ("a named slot keeps its limit when unspecified_limited",
     user(slots(cpu=4), slots(cpu=3), unspecified_limited=True), request(cpu=2), "pending",
     ["user alice cpu: used 3 + requested 2 > limit 4 (over by 1)"]),
    ("an explicit zero limit allows none: refuse",
     project(slots(gpu=0)), request(gpu=1), "refuse",
     ["project ml-team gpu: used 0 + requested 1 > limit 0 (over by 1)"]),
    ("a gpu limit counts shared devices too: shares wait when whole GPUs fill it",
     project(slots(gpu=2), slots(gpu=2)), request(gpu_shares="0.5"), "pending",
     ["project ml-team gpu: used 2 + requested 0.5 > limit 2 (over by 0.5)"]),
    ("a gpu limit counts shares in use against whole GPUs asked for",
     project(slots(gpu=2), slots(gpu_shares="1.5")), request(gpu=1), "pending",
     ["project ml-team gpu: used 1.5 + requested 1 > limit 2 (over by 0.5)"]),
    ("a gpu.shares limit caps shares alone, not whole GPUs",
     project(slots(gpu_shares=1), slots(gpu=3)), request(gpu_shares="0.5"), "admit", []),
    ("what others hold of another slot does not count",
     project(slots(gpu=2), slots(cpu=100)), request(cpu=1, gpu=2), "admit", []),
]


@pytest.mark.parametrize("level, req, expected, texts", [c[1:] for c in SLOT_LIMITS],
                         ids=[c[0] for c in SLOT_LIMITS])
def test_slot_limits_at_each_level(level, req, expected, texts):
    assert verdict(req, level) == (expected, texts)


def test_every_level_over_its_limit_is_reported_in_order():
    got = verdict(
        request(gpu=1, cpu=2),
        user(slots(gpu=1), slots(gpu=1)),
        project(slots(cpu=4), slots(cpu=3)),
        domain(slots(gpu=8, cpu=100), slots(gpu=8, cpu=1)),
    )
    assert got == ("pending", [
        "user alice gpu: used 1 + requested 1 > limit 1 (over by 1)",
        "project ml-team cpu: used 3 + requested 2 > limit 4 (over by 1)",
        "domain acme gpu: used 8 + requested 1 > limit 8 (over by 1)",
    ])


def test_a_refusal_at_one_level_wins_over_waits_at_others():
    got = verdict(
        request(gpu=3),
        user(slots(gpu=4), slots(gpu=4)),
        project(slots(gpu=2)),
    )
    assert got == ("refuse", ["project ml-team gpu: used 0 + requested 3 > limit 2 (over by 1)"])


def test_no_limits_at_all_admit():
    assert verdict(request(cpu=32, gpu=4), user(), project(), domain()) == ("admit", [])


# ---------------------------------------------------------------- sessions

SESSIONS = [
    ("below the concurrent sessions: admit", user(max_sessions=2, sessions=1), "admit", []),
    ("at the concurrent sessions: wait", user(max_sessions=2, sessions=2), "pending",
     ["user alice: 2 of 2 concurrent sessions running"]),
    ("project concurrent sessions: wait", project(max_sessions=1, sessions=1), "pending",
     ["project ml-team: 1 of 1 concurrent sessions running"]),
    ("zero sessions allowed: refuse", project(max_sessions=0), "refuse",
     ["project ml-team: no sessions allowed"]),
    ("zero sessions refuse even with nothing running", user(max_sessions=0, sessions=0), "refuse",
     ["user alice: no sessions allowed"]),
]


@pytest.mark.parametrize("level, expected, texts", [c[1:] for c in SESSIONS],
                         ids=[c[0] for c in SESSIONS])
def test_concurrent_sessions(level, expected, texts):
    assert verdict(request(cpu=1), level) == (expected, texts)


# ---------------------------------------------------------------- pending allowances

FULL = slots(gpu=4)  # the user's GPU limit is used up: a new GPU request waits

PENDING = [
    # (rule, request, level, verdict, texts)
    ("a new request that would wait past max pending sessions: refuse",
     request(gpu=1), user(FULL, FULL, max_pending_sessions=1, pending_sessions=1), "refuse",
     ["user alice: already 1 of 1 pending sessions"]),
    ("a new request that would wait within max pending sessions: wait",
     request(gpu=1), user(FULL, FULL, max_pending_sessions=2, pending_sessions=1), "pending",
     ["user alice gpu: used 4 + requested 1 > limit 4 (over by 1)"]),
    ("zero pending sessions: a request that would wait is refused",
     request(gpu=1), user(FULL, FULL, max_pending_sessions=0), "refuse",
     ["user alice: already 0 of 0 pending sessions"]),
    ("a queued request is not refused by the allowance it already uses",
     request(gpu=1, queued=True), user(FULL, FULL, max_pending_sessions=1, pending_sessions=1),
     "pending", ["user alice gpu: used 4 + requested 1 > limit 4 (over by 1)"]),
    ("a request that fits now ignores the pending allowance",
     request(cpu=1), user(FULL, FULL, max_pending_sessions=0), "admit", []),
    ("a new request that would wait past max pending slots: refuse",
     request(gpu=2), user(FULL, FULL, max_pending_slots=slots(gpu=3), pending_slots=slots(gpu=2)),
     "refuse", ["user alice pending gpu: 2 + requested 2 > limit 3"]),
    ("pending slots exactly at the allowance: wait",
     request(gpu=1), user(FULL, FULL, max_pending_slots=slots(gpu=3), pending_slots=slots(gpu=2)),
     "pending", ["user alice gpu: used 4 + requested 1 > limit 4 (over by 1)"]),
    ("a pending slot allowance the request does not use: wait",
     request(gpu=1), user(FULL, FULL, max_pending_slots=slots(cpu=0)), "pending",
     ["user alice gpu: used 4 + requested 1 > limit 4 (over by 1)"]),
    ("a queued request is not refused by the pending slots it already holds",
     request(gpu=2, queued=True),
     user(FULL, FULL, max_pending_slots=slots(gpu=3), pending_slots=slots(gpu=2)),
     "pending", ["user alice gpu: used 4 + requested 2 > limit 4 (over by 2)"]),
    ("the project's pending count does not limit the user's",
     request(gpu=1), project(FULL, FULL, pending_sessions=99), "pending",
     ["project ml-team gpu: used 4 + requested 1 > limit 4 (over by 1)"]),
]


@pytest.mark.parametrize("req, level, expected, texts", [c[1:] for c in PENDING],
                         ids=[c[0] for c in PENDING])
def test_pending_allowances_refuse_only_new_requests_that_would_wait(req, level, expected, texts):
    assert verdict(req, level) == (expected, texts)


# ---------------------------------------------------------------- GPUs per session

PER_SESSION = [
    ("whole GPUs above the per-session cap: refuse", request(gpu=3), "2", "refuse",
     ["user alice: at most 2 GPUs per session, requested 3"]),
    ("whole GPUs at the per-session cap: admit", request(gpu=2), "2", "admit", []),
    ("shares count as GPUs: refuse", request(gpu_shares=0.5), "0.25", "refuse",
     ["user alice: at most 0.25 GPUs per session, requested 0.5"]),
    ("a zero cap still allows CPU-only sessions", request(cpu=4), "0", "admit", []),
]


@pytest.mark.parametrize("req, cap, expected, texts", [c[1:] for c in PER_SESSION],
                         ids=[c[0] for c in PER_SESSION])
def test_max_gpus_per_session(req, cap, expected, texts):
    assert verdict(req, user(max_gpus_per_session=D(cap))) == (expected, texts)


def test_the_per_session_cap_refuses_even_when_limits_would_only_wait():
    got = verdict(request(gpu=2), user(slots(gpu=2), slots(gpu=2), max_gpus_per_session=D(1)))
    assert got == ("refuse", ["user alice: at most 1 GPUs per session, requested 2"])


# ---------------------------------------------------------------- the resource group


def group(**changes) -> Group:
    fields = dict(GROUP.__dict__)
    fields.update(changes)
    return Group(**fields)


GROUP_RULES = [
    ("a group without access: refuse", request(gpu=1), group(accessible=False),
     ["resource group gpu is not available to you"]),
    ("a session type the group does not run: refuse",
     request(gpu=1, session_type="batch"), group(session_types=frozenset({"interactive"})),
     ["resource group gpu does not run batch sessions (it runs: interactive)"]),
    ("more GPUs than the largest node: refuse", request(gpu=5), GROUP,
     ["resource group gpu gpu: requested 5 > largest node 4"]),
    ("more cpu than the largest node: refuse", request(cpu=33), GROUP,
     ["resource group gpu cpu: requested 33 > largest node 32"]),
    ("every slot above the largest node is named", request(cpu=64, gpu=8), GROUP,
     ["resource group gpu cpu: requested 64 > largest node 32",
      "resource group gpu gpu: requested 8 > largest node 4"]),
    ("a share in a group without GPUs: refuse", request(gpu_shares=0.5),
     group(largest_node={"cpu": D(32), "mem": D(GiB)}),
     ["resource group gpu gpu.shares: requested 0.5 > largest node 0"]),
    ("a slot no node has: refuse", request(mem=1), group(largest_node={"cpu": D(32)}),
     ["resource group gpu mem: requested 1 B > largest node 0 B"]),
]


@pytest.mark.parametrize("req, grp, texts", [c[1:] for c in GROUP_RULES],
                         ids=[c[0] for c in GROUP_RULES])
def test_the_resource_group_refuses_what_it_can_never_run(req, grp, texts):
    assert verdict(req, user(), group=grp) == ("refuse", texts)


def test_exactly_the_largest_node_is_admitted():
    assert verdict(request(cpu=32, mem=128 * GiB, gpu=4), user()) == ("admit", [])


def test_a_group_refusal_comes_before_any_limit():
    got = verdict(request(gpu=5), user(slots(gpu=1)), group=group(accessible=False))
    assert got == ("refuse", ["resource group gpu is not available to you"])


def test_a_request_no_single_node_can_hold_is_refused():
    """Each slot alone fits some node, but no node has all of them: the
    request could never start, so it must not wait forever."""
    cpu_node = {"cpu": D(64), "mem": D(256 * GiB)}
    gpu_node = {"cpu": D(8), "mem": D(32 * GiB), "gpu": D(4)}
    grp = group(largest_node={"cpu": D(64), "mem": D(256 * GiB), "gpu": D(4)},
                nodes=(cpu_node, gpu_node))
    assert verdict(request(cpu=32, gpu=1), user(), group=grp) == ("refuse", [
        "resource group gpu: no node has cpu 32, gpu 1 together",
    ])
    assert verdict(request(cpu=8, gpu_shares=0.5), user(), group=grp) == ("admit", [])
    assert verdict(request(cpu=64), user(), group=grp) == ("admit", [])


# ---------------------------------------------------------------- waiting for capacity


def test_waiting_for_capacity_says_what_it_waits_for():
    d = waiting_for_capacity(request(cpu=2, gpu=1), snapshot(user()))
    assert d.verdict == "pending"
    assert d.text == ("resource group gpu: no node has room now for cpu 2, gpu 1 "
                      "(waiting for running sessions to end)")
    assert [(r.code, r.kind, r.level) for r in d.reasons] == [("capacity", "wait", "resource-group")]


def room(cpu=0, mem=0, gpu=0, gpu_shares=0) -> dict[str, Decimal]:
    """What one node has free now, as the ledger's ``node_room`` counts it."""
    return slots(cpu=cpu, mem=mem, gpu=gpu, gpu_shares=gpu_shares)


SHORT = [
    ("the slot short on every node, with the most one node has free",
     request(cpu=1, mem=2 * GiB), (room(cpu=0.5, mem=8 * GiB), room(cpu=0.25, mem=4 * GiB)),
     "resource group gpu: no node has room now for cpu 1, mem 2 GiB: cpu short by 0.5 "
     "(at most 0.5 free on a node), waiting for running sessions to end"),
    ("memory reads in binary units, exactly",
     request(mem=2 * GiB), (room(mem=512 * 2**20), room(mem=1000)),
     "resource group gpu: no node has room now for mem 2 GiB: mem short by 1.5 GiB "
     "(at most 512 MiB free on a node), waiting for running sessions to end"),
    ("every short slot is named",
     request(cpu=4, gpu=2), (room(cpu=2, gpu=1),),
     "resource group gpu: no node has room now for cpu 4, gpu 2: cpu short by 2 (at most 2 "
     "free on a node) and gpu short by 1 (at most 1 free on a node), waiting for running "
     "sessions to end"),
    ("a share is short on one GPU",
     request(gpu_shares=0.5), (room(cpu=8, gpu_shares=0.3),),
     "resource group gpu: no node has room now for gpu.shares 0.5: gpu.shares short by 0.2 "
     "(at most 0.3 free on a GPU), waiting for running sessions to end"),
    ("each slot fits some node, none has both: what the closest node lacks",
     request(cpu=4, mem=8 * GiB), (room(cpu=8, mem=2 * GiB), room(cpu=2, mem=16 * GiB),
                                   room(cpu=3, mem=8 * GiB)),
     "resource group gpu: no node has room now for cpu 4, mem 8 GiB: cpu short by 1 on the "
     "closest node (3 free there), waiting for running sessions to end"),
    ("a slot no node has any of is said so, not as 'at most 0'",
     request(gpu=1), (room(cpu=8), room(cpu=4)),
     "resource group gpu: no node has room now for gpu 1: gpu short by 1 (no node has "
     "any free), waiting for running sessions to end"),
    ("a share where no GPU has any free",
     request(gpu_shares=0.5), (room(cpu=8),),
     "resource group gpu: no node has room now for gpu.shares 0.5: gpu.shares short by 0.5 "
     "(no GPU has any free), waiting for running sessions to end"),
    ("the closest node has none of a slot: said so, not as '0 free there'",
     request(cpu=2, mem=4 * GiB), (room(cpu=8, mem=0), room(cpu=0, mem=16 * GiB)),
     "resource group gpu: no node has room now for cpu 2, mem 4 GiB: mem short by 4 GiB on "
     "the closest node (none free there), waiting for running sessions to end"),
    ("every node that could hold it drained",
     request(cpu=1), (),
     "resource group gpu: no node has room now for cpu 1: every node that could hold it "
     "is drained, waiting for one to take sessions again"),
]


@pytest.mark.parametrize("req, free, text", [c[1:] for c in SHORT], ids=[c[0] for c in SHORT])
def test_waiting_for_capacity_says_which_slot_is_short_and_by_how_much(req, free, text):
    d = waiting_for_capacity(req, snapshot(user()), free)
    assert d.verdict == "pending"
    assert d.text == text
    assert [r.as_dict() for r in d.reasons] == [{
        "code": "capacity", "kind": "wait", "level": "resource-group", "name": "gpu",
        "text": text}]


WAITING = [
    ("a new request past the pending allowance: refuse", False, "refuse",
     "user alice: already 1 of 1 pending sessions"),
    ("a queued request past the pending allowance: still pending", True, "pending",
     "resource group gpu: no node has room now for gpu 1 (waiting for running sessions to end)"),
]


@pytest.mark.parametrize("queued, expected, text", [c[1:] for c in WAITING],
                         ids=[c[0] for c in WAITING])
def test_waiting_for_capacity_respects_the_pending_allowance(queued, expected, text):
    d = waiting_for_capacity(request(gpu=1, queued=queued),
                             snapshot(user(max_pending_sessions=1, pending_sessions=1)))
    assert (d.verdict, d.text) == (expected, text)


# ---------------------------------------------------------------- waiting in line

IN_LINE = [
    ("a new request behind the line: pending", user(), "pending",
     "resource group gpu: queued behind 2 earlier request(s) waiting for capacity"),
    ("a new request behind the line past the pending allowance: refuse",
     user(max_pending_sessions=1, pending_sessions=1), "refuse",
     "user alice: already 1 of 1 pending sessions"),
    ("a new request behind the line past the pending slots: refuse",
     user(max_pending_slots=slots(gpu=2), pending_slots=slots(gpu=2)), "refuse",
     "user alice pending gpu: 2 + requested 1 > limit 2"),
]


@pytest.mark.parametrize("level, expected, text", [c[1:] for c in IN_LINE],
                         ids=[c[0] for c in IN_LINE])
def test_waiting_in_line_is_waiting_and_respects_the_pending_allowance(level, expected, text):
    d = waiting_in_line(request(gpu=1), snapshot(level), ahead=2)
    assert (d.verdict, d.text) == (expected, text)


# ---------------------------------------------------------------- reasons as records


def test_a_reason_is_a_record_with_canonical_amounts():
    d = decide(request(gpu_shares=1), snapshot(project(slots(gpu_shares=4), slots(gpu_shares=3.5))))
    assert [r.as_dict() for r in d.reasons] == [{
        "code": "slot-limit", "kind": "wait", "level": "project", "name": "ml-team",
        "slot": "gpu.shares", "used": "3.5", "requested": "1", "limit": "4",
        "text": "project ml-team gpu.shares: used 3.5 + requested 1 > limit 4 (over by 0.5)",
    }]


def test_a_decision_text_joins_its_reasons():
    d = decide(request(gpu=1, cpu=1), snapshot(user(slots(gpu=1, cpu=1), slots(gpu=1, cpu=1))))
    assert d.text == ("user alice cpu: used 1 + requested 1 > limit 1 (over by 1); "
                      "user alice gpu: used 1 + requested 1 > limit 1 (over by 1)")


def test_the_same_snapshot_gives_the_same_decision():
    snap = snapshot(user(slots(gpu=2), slots(gpu=2)), project(max_sessions=3, sessions=3))
    assert decide(request(gpu=1), snap) == decide(request(gpu=1), snap)


def test_a_gpu_model_no_node_has_is_refused_not_queued():
    a100 = {"cpu": D(32), "mem": D(128 * GiB), "gpu": D(4)}
    t4 = {"cpu": D(16), "mem": D(64 * GiB), "gpu": D(2)}
    grp = group(nodes=(a100, t4), node_models=(frozenset({"A100"}), frozenset({"T4"})))
    req = Request(user="alice", keypair=None, project="ml-team", domain="acme",
                  resource_group="gpu", slots=slots(gpu=1), gpu_models=frozenset({"H100"}))
    assert verdict(req, user(), group=grp) == ("refuse", ["resource group gpu: no node has GPU model H100"])
    # the model narrows the nodes: 4 GPUs only on the A100 node
    t4_only = Request(user="alice", keypair=None, project="ml-team", domain="acme",
                      resource_group="gpu", slots=slots(gpu=4), gpu_models=frozenset({"T4"}))
    assert verdict(t4_only, user(), group=grp) == ("refuse", [
        "resource group gpu: no node has gpu 4 together"])
    cpu_only = Request(user="alice", keypair=None, project="ml-team", domain="acme",
                       resource_group="gpu", slots=slots(cpu=1), gpu_models=frozenset({"H100"}))
    assert verdict(cpu_only, user(), group=grp) == ("admit", [])


def test_a_refusal_above_a_limit_shows_what_is_in_use():
    assert verdict(request(gpu=3), project(slots(gpu=2), slots(gpu=1))) == ("refuse", [
        "project ml-team gpu: used 1 + requested 3 > limit 2 (over by 2)"])


# ---------------------------------------------------------------- what remains (the spawn form)

FORM = ("cpu", "mem", "gpu", "gpu.shares")


def test_remaining_is_the_tightest_level_and_none_where_nothing_limits():
    levels = (user(slots(cpu=8), slots(cpu=3)), project(slots(cpu=4, mem=GiB), slots(cpu=2)),
              domain())
    assert remaining(levels, FORM) == {"cpu": D(2), "mem": D(GiB), "gpu": None,
                                       "gpu.shares": None}


def test_remaining_never_goes_below_zero_when_a_limit_was_lowered():
    assert remaining((user(slots(cpu=2), slots(cpu=5)),), ("cpu",)) == {"cpu": D(0)}


def test_a_device_limit_caps_whole_devices_and_shares_together():
    # 2 GPUs allowed; one whole GPU and 0.5 of another are held
    levels = (user(slots(gpu=2), slots(gpu=1, gpu_shares=0.5)),)
    assert remaining(levels, FORM)["gpu"] == D("0.5")
    assert remaining(levels, FORM)["gpu.shares"] == D("0.5")


def test_a_share_limit_caps_shares_alone():
    levels = (user(slots(gpu_shares="1.5"), slots(gpu_shares="0.25", gpu=1)),)
    left = remaining(levels, FORM)
    assert (left["gpu"], left["gpu.shares"]) == (None, D("1.25"))


def test_unspecified_slots_of_a_limited_policy_leave_nothing():
    levels = (user(slots(cpu=4), unspecified_limited=True),)
    assert remaining(levels, FORM) == {"cpu": D(4), "mem": D(0), "gpu": D(0),
                                       "gpu.shares": D(0)}


@pytest.mark.parametrize("levels,left", [
    ((user(), project(), domain()), None),
    ((user(max_sessions=3, sessions=1), project(max_sessions=5, sessions=4)), 1),
    ((user(max_sessions=2, sessions=3),), 0),
])
def test_sessions_left(levels, left):
    assert sessions_left(levels) == left
