"""A node whose GPU shares cannot be enforced now (its MPS daemon is down,
the library is absent) takes no share, and the user is told why, unless an
admin marks it "shares not enforced", which its node model then shows.
Whole GPUs are not shares: such a node still takes them."""

from __future__ import annotations

import pytest

from quota_service.core.models import Node as DBNode
from quota_service.core.schemas import NodeCreate, NodeUpdate
from quota_service.scheduling import inventory
from quota_service.scheduling.placement import ClusterState, Node, Request, fits
from test_ledger import ask, shares, solo

DOWN = "MPS daemon not running"


def test_placement_gives_a_share_only_to_a_node_that_takes_shares():
    share, whole = Request(cpu=0, mem=0, num_gpu=1, gpu_milli=500), Request(cpu=0, mem=0,
                                                                           num_gpu=1, gpu_milli=1000)
    blocked = Node("n", 1000, 2**30, 1000, 2**30, "A100", (1000,), takes_shares=False)
    assert not fits(share, blocked) and fits(whole, blocked)
    assert fits(share, Node("m", 1000, 2**30, 1000, 2**30, "A100", (1000,)))
    state = ClusterState([blocked])
    assert not state.fits(0, share) and state.fits(0, whole)
    assert state.node("n").takes_shares is False


@pytest.fixture
def down(cluster):
    solo(cluster, gpus=2)
    cluster.set_node("solo-1", share_check=DOWN)
    return cluster


def test_a_share_waits_with_the_reason_when_no_node_can_enforce_it(down):
    a = ask(down, group="solo", gpu_shares="0.5")
    assert a["state"] == "pending" and a["gpus"] == [] and a["shares"] is None
    [reason] = a["reasons"]
    assert reason["code"] == "capacity"
    assert reason["text"] == (
        "resource group solo: no node has room now for gpu.shares 0.5: "
        f"GPU shares cannot be enforced now on solo-1: {DOWN}, waiting for a node that "
        "enforces them"), reason


def test_whole_gpus_still_go_to_such_a_node(down):
    a = ask(down, group="solo", gpu=1)
    assert a["state"] == "allocated" and shares(a) == [{"index": 0, "share": "1"}]


def test_an_admin_mark_lets_it_take_shares_not_enforced(down):
    down.set_node("solo-1", shares_unenforced=True)
    a = ask(down, group="solo", gpu_shares="0.5")
    assert a["state"] == "allocated" and a["node"] == "solo-1"
    # the session's model says so, for its detail view
    assert a["shares"] == {"mode": "", "enforced": False, "reason": DOWN,
                           "not_enforced_allowed": True, "taken": True, "declared": True}


def test_the_node_model_says_whether_shares_are_enforced():
    assert NodeCreate(name="n1", resource_group="default", capacity={"cpu": "8"},
                      share_check=DOWN).share_check == DOWN
    db = DBNode(name="n1", share_check=DOWN, shares_unenforced=False)
    assert inventory.shares_model(db) == {"mode": "", "enforced": False, "reason": DOWN,
                                          "not_enforced_allowed": False, "taken": False,
                                          "declared": False}
    db.shares_unenforced = True
    assert inventory.shares_model(db)["taken"] is True
    assert inventory.shares_model(DBNode(name="n2", share_check="", shares_unenforced=False,
                                         sharing_mode="mps")) == {
        "mode": "mps", "enforced": True, "reason": "", "not_enforced_allowed": False, "taken": True,
        "declared": False}


def test_gpus_declared_without_a_driver_uuid_are_said_to_be_declared():
    from quota_service.core.models import Device

    declared = DBNode(name="d", share_check="", shares_unenforced=False, sharing_mode="mps",
                      devices=[Device(index=0, model="A100", uuid="")])
    assert inventory.shares_model(declared)["declared"] is True
    found = DBNode(name="f", share_check="", shares_unenforced=False, sharing_mode="mps",
                   devices=[Device(index=0, model="A100", uuid="GPU-1"),
                            Device(index=1, model="A100", uuid="")])
    assert inventory.shares_model(found)["declared"] is False


def test_the_api_takes_the_check_and_the_mark():
    assert NodeUpdate(share_check=DOWN, shares_unenforced=True).shares_unenforced is True
    with pytest.raises(ValueError):
        NodeUpdate(share_check="x" * 201)
    with pytest.raises(ValueError):
        NodeUpdate(shares_unenforced="yes")
    assert NodeUpdate(sharing_mode="mps").sharing_mode == "mps"
    with pytest.raises(ValueError):
        NodeUpdate(sharing_mode="slices")
