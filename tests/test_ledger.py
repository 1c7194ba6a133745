"""The allocation ledger as rules, on SQLite and PostgreSQL.

Each verb runs the way the service runs it: ``ledger.submit``/``release``/
``schedule`` inside ``db.ledger_transaction``, BestFit placement, an explicit
clock (see tests/ledger_world.py). The world: alice is in acme/ml, bob in no
project, gina in globex/lab; the "default" resource policy limits nothing.
"""

from __future__ import annotations

import datetime as dt

import pytest

from ledger_world import limit_text
from quota_service.core.errors import Denied, Hidden, Invalid

# the "gpu" group: two nodes of two GPUs each, granted to domain acme
GPU_NODES = {"a100-1": ("A100", "A100"), "t4-1": ("T4", "T4")}


@pytest.fixture
def gpu(cluster):
    cluster.add_group("gpu", GPU_NODES)
    return cluster


def solo(cluster, gpus=2, **fields):
    """A group "solo" of one node with ``gpus`` A100s, granted to acme."""
    cluster.add_group("solo", {"solo-1": ("A100",) * gpus}, **fields)
    return cluster


def shares(allocation: dict) -> list[dict]:
    """An allocation's GPUs by index and share (the device identity and
    memory are checked in test_ledger_devices.py)."""
    return [{"index": g["index"], "share": g["share"]} for g in allocation["gpus"]]


def ask(cluster, user="alice", project="ml", group="gpu", **slots_and_fields) -> dict:
    fields = {k: slots_and_fields.pop(k) for k in ("gpu_models", "priority", "session_type")
              if k in slots_and_fields}
    amounts = {k.replace("_", "."): v for k, v in slots_and_fields.items()}
    return cluster.submit(user, project, group, slots=amounts, **fields)


def refusal(cluster, **kw) -> Invalid:
    with pytest.raises(Invalid) as e:
        ask(cluster, **kw)
    return e.value


# ---------------------------------------------------------------- allocation


def test_a_request_that_fits_is_allocated_with_a_node_and_gpus(gpu):
    a = ask(gpu, cpu="2", mem="8G", gpu=1)
    assert a["state"] == "allocated"
    assert a["node"] in GPU_NODES
    assert shares(a) == [{"index": 0, "share": "1"}]
    assert a["slots"] == {"cpu": "2", "gpu": "1", "mem": str(8 * 2**30)}
    assert a["reasons"] == []
    assert a["admitted_at"] == a["created_at"] == gpu.now.isoformat()


@pytest.mark.parametrize("models, node", [
    (["T4"], "t4-1"),
    (["A100"], "a100-1"),
    (["V100", "T4"], "t4-1"),
])
def test_the_gpu_model_constraint_is_honoured(gpu, models, node):
    for _ in range(2):  # both GPUs of the node, one at a time
        a = ask(gpu, gpu=1, gpu_models=models)
        assert (a["state"], a["node"]) == ("allocated", node)
    assert ask(gpu, gpu=1, gpu_models=models)["state"] == "pending"


def test_a_multi_gpu_request_gets_whole_free_gpus_of_one_node(gpu):
    first = ask(gpu, gpu=1)
    both = ask(gpu, gpu=2)
    assert both["state"] == "allocated"
    assert both["node"] != first["node"]
    assert shares(both) == [{"index": 0, "share": "1"}, {"index": 1, "share": "1"}]
    # one GPU is left (on the first node): two whole GPUs wait
    assert ask(gpu, gpu=2)["state"] == "pending"


def test_whole_gpus_are_not_split_across_nodes(gpu):
    ask(gpu, gpu=1, gpu_models=["A100"])
    ask(gpu, gpu=1, gpu_models=["T4"])
    # one GPU free on each node: two GPUs in one session must wait
    assert ask(gpu, gpu=2)["state"] == "pending"


def test_fractional_requests_pack_on_one_gpu(gpu):
    a, b = ask(gpu, gpu_shares="0.5"), ask(gpu, gpu_shares="0.5")
    assert a["node"] == b["node"] and shares(a) == shares(b) == [{"index": 0, "share": "0.5"}]
    c = ask(gpu, gpu_shares="0.7")
    assert (c["node"], shares(c)) == (a["node"], [{"index": 1, "share": "0.7"}])
    d = ask(gpu, gpu_shares="0.3")  # the tightest GPU that still has room
    assert (d["node"], shares(d)) == (a["node"], [{"index": 1, "share": "0.3"}])
    # packed, not spread: the other node is still free for two whole GPUs
    assert ask(gpu, gpu=2)["state"] == "allocated"


def test_gpus_are_named_by_their_device_index(cluster):
    """A node may list only some of its GPUs (here devices 2 and 3): an
    allocation names the devices themselves, not their position in the list."""
    cluster.add_group("partial", {"part-1": ("A100", "A100")})
    cluster.set_device_indexes("part-1", [2, 3])
    first, second = (ask(cluster, group="partial", gpu_shares="0.6") for _ in range(2))
    assert shares(first) == [{"index": 2, "share": "0.6"}]
    assert shares(second) == [{"index": 3, "share": "0.6"}]
    assert shares(ask(cluster, group="partial", gpu_shares="0.4")) == [{"index": 2, "share": "0.4"}]
    whole = cluster.submit("alice", "ml", "partial", slots={"gpu": 1}, dry_run=True)
    assert whole["fits_now"] is False
    cluster.release("alice", first["id"])
    assert shares(ask(cluster, group="partial", gpu_shares="0.6")) == [{"index": 2, "share": "0.6"}]


def test_a_cpu_only_request_takes_no_gpu(gpu):
    a = ask(gpu, cpu="4")
    assert (a["state"], a["gpus"]) == ("allocated", [])


@pytest.mark.parametrize("slot, amount", [("cpu", "12"), ("mem", "40G")])
def test_node_cpu_and_memory_are_capacity_too(gpu, slot, amount):
    # 16 cpu and 64G per node: two such sessions need both nodes, a third waits
    assert {ask(gpu, **{slot: amount})["node"] for _ in range(2)} == set(GPU_NODES)
    third = ask(gpu, **{slot: amount})
    assert [r["code"] for r in third["reasons"]] == ["capacity"]


def test_a_node_shrunk_below_what_runs_on_it_takes_nothing_more(gpu):
    """An admin lowers a node's capacity while sessions run on it: the group
    keeps admitting elsewhere instead of failing on the impossible state."""
    running = ask(gpu, cpu="12", gpu=1, gpu_models=["T4"])
    gpu.set_node("t4-1", capacity=limit_text({"cpu": 8, "mem": "64G"}))
    assert ask(gpu, cpu="1", gpu=1, gpu_models=["A100"])["node"] == "a100-1"
    waiting = ask(gpu, cpu="1", gpu=1, gpu_models=["T4"])
    assert waiting["state"] == "pending"
    gpu.release("alice", running["id"])
    assert gpu.schedule("gpu") == [waiting["id"]]


# ---------------------------------------------------------------- pending with reasons


def test_over_a_project_limit_the_request_is_pending_with_reasons(gpu):
    gpu.set_project("acme", "ml", slots={"gpu.shares": "1"})
    ask(gpu, gpu_shares="0.5"), ask(gpu, gpu_shares="0.5")
    p = ask(gpu, gpu_shares="0.5")
    assert (p["state"], p["node"], p["gpus"], p["admitted_at"]) == ("pending", None, [], None)
    assert p["reasons"] == [{
        "code": "slot-limit", "kind": "wait", "level": "project", "name": "ml",
        "slot": "gpu.shares", "used": "1", "requested": "0.5", "limit": "1",
        "text": "project ml gpu.shares: used 1 + requested 0.5 > limit 1 (over by 0.5)",
    }]


LIMITED = [
    # (rule, how the limit is set, request, reason text)
    ("a user policy limit",
     lambda c: c.set_policy("default", total_resource_slots={"gpu": 1}), {"gpu": 1},
     "user alice gpu: used 1 + requested 1 > limit 1 (over by 1)"),
    ("a domain limit", lambda c: c.set_domain("acme", slots={"cpu": "3"}), {"cpu": "2"},
     "domain acme cpu: used 2 + requested 2 > limit 3 (over by 1)"),
    ("a user policy's concurrent sessions",
     lambda c: c.set_policy("default", max_concurrent_sessions=1), {"cpu": "1"},
     "user alice: 1 of 1 concurrent sessions running"),
    ("a project's concurrent sessions",
     lambda c: c.set_project("acme", "ml", max_concurrent_sessions=1), {"cpu": "1"},
     "project ml: 1 of 1 concurrent sessions running"),
]


@pytest.mark.parametrize("limit, amounts, text", [c[1:] for c in LIMITED],
                         ids=[c[0] for c in LIMITED])
def test_the_second_request_over_a_limit_waits(gpu, limit, amounts, text):
    limit(gpu)
    assert gpu.submit("alice", "ml", "gpu", slots=amounts)["state"] == "allocated"
    p = gpu.submit("alice", "ml", "gpu", slots=amounts)
    assert p["state"] == "pending"
    assert [r["text"] for r in p["reasons"]] == [text]


def test_over_capacity_now_the_request_waits_for_capacity(gpu):
    ask(gpu, gpu=2), ask(gpu, gpu=2)
    p = ask(gpu, gpu=1)
    assert p["state"] == "pending"
    assert [(r["code"], r["level"], r["text"]) for r in p["reasons"]] == [(
        "capacity", "resource-group",
        "resource group gpu: no node has room now for gpu 1: gpu short by 1 (no node has "
        "any free), waiting for running sessions to end",
    )]


def test_a_waiting_reason_counts_only_the_nodes_that_could_hold_it(gpu):
    """The T4 node's free GPUs do not count for a request of A100s; a
    share is short on the fullest-free GPU, not on the node's sum."""
    ask(gpu, gpu=2, gpu_models=["A100"])
    p = ask(gpu, gpu=1, gpu_models=["A100"])
    assert p["reasons"][0]["text"].endswith(
        ": gpu short by 1 (no node has any free), waiting for running sessions to end")
    solo(gpu, gpus=2)
    ask(gpu, group="solo", gpu_shares="0.7"), ask(gpu, group="solo", gpu_shares="0.6")
    q = ask(gpu, group="solo", gpu_shares="0.5")
    assert q["state"] == "pending"
    assert q["reasons"][0]["text"] == (
        "resource group solo: no node has room now for gpu.shares 0.5: gpu.shares short by "
        "0.1 (at most 0.4 free on a GPU), waiting for running sessions to end")


# ---------------------------------------------------------------- refusals


REFUSED = [
    # (rule, setup, request, text, codes)
    ("more GPUs than any node", None, dict(gpu=3),
     "resource group gpu gpu: requested 3 > largest node 2", ["capacity"]),
    ("more cpu than any node", None, dict(cpu="17"),
     "resource group gpu cpu: requested 17 > largest node 16", ["capacity"]),
    ("a user of a domain without a grant", None, dict(user="gina", project="lab", gpu=1),
     "resource group gpu is not available to you", ["access"]),
    ("a session type the group does not run",
     lambda c: c.set_group("gpu", session_types=["batch"]), dict(gpu=1),
     "resource group gpu does not run interactive sessions (it runs: batch)", ["session-type"]),
    ("an inactive group", lambda c: c.set_group("gpu", active=False), dict(gpu=1),
     "resource group gpu is not available to you", ["access"]),
    ("a policy that allows other groups only",
     lambda c: c.set_policy("default", allowed_resource_groups=["other"]), dict(gpu=1),
     "resource group gpu is not available to you", ["access"]),
    ("requested alone above the project limit",
     lambda c: c.set_project("acme", "ml", slots={"gpu": 1}), dict(gpu=2),
     "project ml gpu: used 0 + requested 2 > limit 1 (over by 1)", ["slot-limit"]),
    ("more GPUs per session than the policy allows",
     lambda c: c.set_policy("default", max_gpus_per_session="1"), dict(gpu=2),
     "user alice: at most 1 GPUs per session, requested 2", ["per-session-gpu"]),
    ("an unmatched GPU model never hides a capacity refusal", None,
     dict(gpu=3, gpu_models=["T4"]),
     "resource group gpu gpu: requested 3 > largest node 2", ["capacity"]),
]


@pytest.mark.parametrize("setup, request_, text, codes", [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_a_request_that_can_never_run_is_refused_and_nothing_is_written(
        gpu, setup, request_, text, codes):
    if setup:
        setup(gpu)
    e = refusal(gpu, **request_)
    assert e.message == text
    assert [r["code"] for r in e.detail] == codes
    assert all(r["kind"] == "refuse" for r in e.detail)
    assert gpu.count() == 0


def test_a_request_no_node_can_hold_together_is_refused_not_queued(cluster):
    """Each slot alone fits some node, no node has them all: it could never start."""
    cluster.add_group("mixed", {"cpu-1": (), "gpu-1": ("A100",)})
    cluster.set_node("cpu-1", capacity=limit_text({"cpu": 64, "mem": "256G"}))
    cluster.set_node("gpu-1", capacity=limit_text({"cpu": 8, "mem": "32G"}))
    e = refusal(cluster, group="mixed", cpu="32", gpu=1)
    assert e.message == "resource group mixed: no node has cpu 32, gpu 1 together"
    assert cluster.count() == 0
    assert ask(cluster, group="mixed", cpu="32")["node"] == "cpu-1"
    assert ask(cluster, group="mixed", cpu="8", gpu=1)["node"] == "gpu-1"


HIDDEN = [
    ("a project of the domain the user is not in", dict(project="web")),
    ("a user in no project", dict(user="bob", project="ml")),
    ("a project of another domain", dict(project="lab")),
]


@pytest.mark.parametrize("request_", [c[1] for c in HIDDEN], ids=[c[0] for c in HIDDEN])
def test_what_the_user_may_not_see_is_hidden(gpu, request_):
    with pytest.raises(Hidden):
        ask(gpu, gpu=1, **request_)
    assert gpu.count() == 0


def test_an_inactive_project_refuses_new_requests(gpu):
    gpu.set_project("acme", "ml", active=False)
    assert refusal(gpu, gpu=1).message == "project 'ml' is not active"


# ---------------------------------------------------------------- release


def test_release_is_idempotent_and_gives_capacity_back_once(gpu):
    a, b = ask(gpu, gpu=2), ask(gpu, gpu=2)
    gpu.now += dt.timedelta(minutes=5)
    first = gpu.release("alice", a["id"], "done")
    gpu.now += dt.timedelta(minutes=5)
    second = gpu.release("alice", a["id"], "again")
    assert first == second
    assert (first["state"], first["release_reason"]) == ("released", "done")
    assert first["released_at"] == (gpu.now - dt.timedelta(minutes=5)).isoformat()
    # two GPUs came back, not four
    assert ask(gpu, gpu=2)["state"] == "allocated"
    assert ask(gpu, gpu=1)["state"] == "pending"
    assert gpu.get(b["id"])["state"] == "allocated"


def test_releasing_a_pending_request_cancels_it(gpu):
    ask(gpu, gpu=2), ask(gpu, gpu=2)
    p = ask(gpu, gpu=1)
    assert gpu.release("alice", p["id"])["state"] == "cancelled"
    assert gpu.release("alice", p["id"])["state"] == "cancelled"


def test_another_user_cannot_release_your_allocation(gpu):
    gpu.join("bob", "acme", "web")
    a = ask(gpu, gpu=1)
    with pytest.raises(Hidden):
        gpu.release("bob", a["id"])
    assert gpu.release("ada", a["id"])["state"] == "released"  # acme's domain admin


# ---------------------------------------------------------------- the queue


def test_schedule_admits_a_pending_request_after_a_release(gpu):
    a, _ = ask(gpu, gpu=2), ask(gpu, gpu=2)
    p = ask(gpu, gpu=1)
    assert gpu.schedule("gpu") == []
    gpu.release("alice", a["id"])
    gpu.now += dt.timedelta(seconds=30)
    assert gpu.schedule("gpu") == [p["id"]]
    admitted = gpu.get(p["id"])
    assert (admitted["state"], admitted["node"], admitted["reasons"]) == ("allocated", a["node"], [])
    assert shares(admitted) == [{"index": 0, "share": "1"}]
    assert admitted["admitted_at"] == gpu.now.isoformat()


def test_schedule_admits_a_request_once_its_limit_has_room(gpu):
    gpu.set_project("acme", "ml", slots={"gpu": 1})
    a, p = ask(gpu, gpu=1), ask(gpu, gpu=1)
    assert gpu.schedule("gpu") == []
    gpu.release("alice", a["id"])
    assert gpu.schedule("gpu") == [p["id"]]


def test_the_queue_is_first_in_first_out(cluster):
    solo(cluster)
    a = ask(cluster, group="solo", gpu=2)
    first, second = ask(cluster, group="solo", gpu=2), ask(cluster, group="solo", gpu=2)
    cluster.release("alice", a["id"])
    assert cluster.schedule("solo") == [first["id"]]
    assert cluster.get(second["id"])["state"] == "pending"


def test_a_priority_queue_admits_the_highest_priority_first(cluster):
    solo(cluster, queue_order="priority")
    cluster.join("ada", "acme", "web")
    admin = dict(user="ada", project="web", group="solo")  # only admins set priorities
    a = ask(cluster, gpu=2, **admin)
    low = ask(cluster, gpu=2, priority=1, **admin)
    high = ask(cluster, gpu=2, priority=50, **admin)
    later_high = ask(cluster, gpu=2, priority=50, **admin)
    cluster.release("ada", a["id"])
    assert cluster.schedule("solo") == [high["id"]]
    cluster.release("ada", high["id"])
    assert cluster.schedule("solo") == [later_high["id"]]
    cluster.release("ada", later_high["id"])
    assert cluster.schedule("solo") == [low["id"]]


def test_only_admins_set_a_priority(cluster):
    solo(cluster, queue_order="priority")
    with pytest.raises(Denied, match="priority"):
        ask(cluster, group="solo", gpu=1, priority=5)


def head_of_line(cluster, hol_passes):
    """A node of 4 GPUs, 2 taken; a big request (4 GPUs) waits for capacity,
    a small one (1 GPU) that would fit is queued behind it."""
    solo(cluster, gpus=4, hol_passes=hol_passes)
    ask(cluster, group="solo", gpu=2)
    big = ask(cluster, group="solo", gpu=4)
    assert big["state"] == "pending"
    return big


def test_a_new_request_does_not_overtake_one_holding_the_head_of_line(cluster):
    head_of_line(cluster, hol_passes=3)
    small = ask(cluster, group="solo", gpu=1)
    assert small["state"] == "pending"
    assert [(r["code"], r["text"]) for r in small["reasons"]] == [(
        "queue", "resource group solo: queued behind 1 earlier request(s) waiting for capacity")]


@pytest.mark.parametrize("hol_passes", [1, 2, 5])
def test_a_big_request_blocks_smaller_ones_for_hol_passes_and_then_stops(cluster, hol_passes):
    big = head_of_line(cluster, hol_passes)
    small = ask(cluster, group="solo", gpu=1)
    for _ in range(hol_passes):
        assert cluster.schedule("solo") == []
    assert cluster.schedule("solo") == [small["id"]]
    # it no longer blocks: later requests go ahead of it as they fit
    assert ask(cluster, group="solo", gpu=1)["state"] == "allocated"
    assert cluster.get(big["id"])["state"] == "pending"


@pytest.mark.parametrize("hol_passes", [0, 1, 3])
def test_a_new_request_is_held_back_exactly_as_long_as_the_queue_holds_it(cluster, hol_passes):
    """Before each of its ``hol_passes`` passes the big request holds the line;
    after them schedule() skips it, so a new request that fits goes ahead."""
    head_of_line(cluster, hol_passes)
    for _ in range(hol_passes):
        dry = cluster.submit("alice", "ml", "solo", slots={"gpu": 1}, dry_run=True)
        assert [r["code"] for r in dry["reasons"]] == ["queue"]
        cluster.schedule("solo")
    assert ask(cluster, group="solo", gpu=1)["state"] == "allocated"


def test_an_incompatible_request_does_not_block_later_ones_forever(gpu):
    """Backend.AI #7592/#13706: a request for a GPU model that is always busy
    (here: every T4 taken for good) must not starve the rest of the queue."""
    gpu.set_group("gpu", hol_passes=2)
    ask(gpu, gpu=2, gpu_models=["T4"])
    a100 = ask(gpu, gpu=2, gpu_models=["A100"])
    t4 = ask(gpu, gpu=1, gpu_models=["T4"])
    later = ask(gpu, gpu=1)
    assert later["state"] == "pending"
    gpu.release("alice", a100["id"])
    passes = [gpu.schedule("gpu") for _ in range(4)]
    assert passes == [[], [], [later["id"]], []]
    assert gpu.get(later["id"])["node"] == "a100-1"
    assert gpu.get(t4["id"])["state"] == "pending"


def test_a_request_waiting_on_its_own_limits_never_holds_back_the_queue(cluster):
    solo(cluster)
    cluster.join("bob", "acme", "web")
    cluster.set_project("acme", "ml", slots={"gpu": 1})
    ask(cluster, group="solo", gpu=1)
    x = ask(cluster, user="bob", project="web", group="solo", gpu=1)
    limited = ask(cluster, group="solo", gpu=1)
    assert [r["level"] for r in limited["reasons"]] == ["project"]
    waiting = ask(cluster, user="bob", project="web", group="solo", gpu=1)
    assert [r["code"] for r in waiting["reasons"]] == ["capacity"]
    cluster.release("bob", x["id"])
    assert cluster.schedule("solo") == [waiting["id"]]
    assert cluster.get(limited["id"])["state"] == "pending"


def test_a_request_queued_behind_the_line_counts_against_the_pending_allowance(cluster):
    cluster.set_policy("default", max_pending_sessions=1)
    head_of_line(cluster, hol_passes=3)  # alice's big request is her one pending session
    e = refusal(cluster, group="solo", gpu=1)
    assert e.message == "user alice: already 1 of 1 pending sessions"
    assert cluster.count() == 2


def test_a_queued_request_is_not_cancelled_for_the_allowance_it_already_uses(gpu):
    gpu.set_policy("default", max_pending_sessions=1)
    ask(gpu, gpu=2), ask(gpu, gpu=2)
    p = ask(gpu, gpu=1)
    for _ in range(5):
        assert gpu.schedule("gpu") == []
    assert gpu.get(p["id"])["state"] == "pending"


@pytest.mark.parametrize("waited, state", [(59, "pending"), (60, "pending"), (61, "cancelled")])
def test_a_request_pending_longer_than_the_timeout_is_cancelled(cluster, waited, state):
    solo(cluster, pending_timeout=60)
    ask(cluster, group="solo", gpu=2)
    p = ask(cluster, group="solo", gpu=1)
    cluster.now += dt.timedelta(seconds=waited)
    assert cluster.schedule("solo") == []
    got = cluster.get(p["id"])
    assert got["state"] == state
    if state == "cancelled":
        assert got["release_reason"] == "pending longer than 60 s"
        assert got["released_at"] == cluster.now.isoformat()


def test_a_timed_out_request_is_cancelled_even_if_it_would_fit_now(cluster):
    solo(cluster, pending_timeout=60)
    a = ask(cluster, group="solo", gpu=2)
    p = ask(cluster, group="solo", gpu=1)
    cluster.release("alice", a["id"])
    cluster.now += dt.timedelta(seconds=61)
    assert cluster.schedule("solo") == []
    assert cluster.get(p["id"])["state"] == "cancelled"


REFUSED_IN_QUEUE = [
    ("its group access was revoked", lambda c: c.revoke_all("gpu"),
     "resource group gpu is not available to you"),
    ("its project limit was lowered below the request",
     lambda c: c.set_project("acme", "ml", slots={"gpu": 0}),
     "project ml gpu: used 2 + requested 1 > limit 0 (over by 3)"),  # 2 running
    ("its project was deactivated", lambda c: c.set_project("acme", "ml", active=False),
     "project ml is not active"),
    ("its user was deactivated", lambda c: c.set_user("alice", active=False),
     "user alice is not active"),
    ("its domain was deactivated", lambda c: c.set_domain("acme", active=False),
     "domain acme is not active"),
]


@pytest.mark.parametrize("change, text", [c[1:] for c in REFUSED_IN_QUEUE],
                         ids=[c[0] for c in REFUSED_IN_QUEUE])
def test_a_queued_request_that_can_no_longer_run_is_cancelled(gpu, change, text):
    a, _ = ask(gpu, gpu=2, gpu_models=["A100"]), ask(gpu, gpu=2)
    p = ask(gpu, gpu=1)
    gpu.release("alice", a["id"])  # capacity is back: only the change stops it
    change(gpu)
    assert gpu.schedule("gpu") == []
    got = gpu.get(p["id"])
    assert (got["state"], got["release_reason"]) == ("cancelled", text)


def test_schedule_of_an_unknown_group_does_nothing(gpu):
    assert gpu.schedule("nope") == []


# ---------------------------------------------------------------- dry run

DRY_RUNS = [
    # (case, setup, request, verdict, fits_now)
    ("fits now", None, dict(gpu=1), "admit", True),
    ("over capacity now", lambda c: [ask(c, gpu=2), ask(c, gpu=2)], dict(gpu=1), "pending", False),
    ("over a project limit", lambda c: c.set_project("acme", "ml", slots={"gpu": 0}),
     dict(gpu=1), "refuse", False),
    ("over a limit that others use", lambda c: [c.set_project("acme", "ml", slots={"gpu": 1}),
                                               ask(c, gpu=1)], dict(gpu=1), "pending", False),
    ("more than any node", None, dict(gpu=4), "refuse", False),
]


@pytest.mark.parametrize("setup, request_, expected, fits_now", [c[1:] for c in DRY_RUNS],
                         ids=[c[0] for c in DRY_RUNS])
def test_a_dry_run_judges_and_writes_nothing(gpu, setup, request_, expected, fits_now):
    if setup:
        setup(gpu)
    rows, before = gpu.count(), gpu.allocations()
    amounts = {k: str(v) for k, v in request_.items()}
    got = gpu.submit("alice", "ml", "gpu", slots=amounts, dry_run=True)
    assert (got["verdict"], got["fits_now"]) == (expected, fits_now)
    assert bool(got["node"]) == fits_now and bool(got["gpus"]) == fits_now
    assert (expected == "admit") == (got["reasons"] == [])
    assert (gpu.count(), gpu.allocations()) == (rows, before)


def test_a_dry_run_names_the_node_and_gpus_a_real_submit_would_get(gpu):
    ask(gpu, gpu_shares="0.5")
    dry = gpu.submit("alice", "ml", "gpu", slots={"gpu.shares": "0.25"}, dry_run=True)
    real = ask(gpu, gpu_shares="0.25")
    assert (dry["node"], dry["gpus"]) == (real["node"], real["gpus"])


def test_an_unknown_resource_group_is_refused_like_one_not_granted(cluster):
    with pytest.raises(Invalid, match="resource group nope is not available to you"):
        ask(cluster, group="nope", cpu=1)


def test_draining_the_only_big_node_keeps_big_requests_waiting(cluster):
    """A drained node comes back: requests only it can hold wait, not fail."""
    solo(cluster, gpus=4)
    with cluster.world.tx() as s:
        from quota_service.core.models import Node

        s.query(Node).filter(Node.name == "solo-1").one().schedulable = False
    a = ask(cluster, group="solo", gpu=4)
    assert a["state"] == "pending"
    assert cluster.schedule("solo") == []
    assert cluster.get(a["id"])["state"] == "pending"
