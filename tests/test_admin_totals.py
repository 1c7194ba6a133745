"""The Domains and projects page's totals: a domain's and its
projects' use per slot, running and pending, against their limits."""

from __future__ import annotations

from ledger_world import Cluster
from service_app import served  # noqa: F401


async def test_totals_count_running_and_pending_against_the_limits(served):  # noqa: F811
    c = Cluster(served.world)
    c.add_group("gpu", {"n1": ()}, cpu="2", domains=("acme", "globex"))
    c.set_project("acme", "ml", slots={"cpu": "8"}, max_vfolder_count=3)
    c.submit("alice", "ml", "gpu", slots={"cpu": "2"})
    c.submit("alice", "ml", "gpu", slots={"cpu": "1.5"})  # waits: the node is full
    resp, body = await served.call("GET", "domains/acme/totals", "ada")
    assert resp.code == 200, body
    assert (body["used"], body["sessions"], body["pending"]) == ({"cpu": "2"}, 1, {"cpu": "1.5"})
    ml = next(x for x in body["projects"] if x["name"] == "ml")
    assert ml["limits"] == {"cpu": "8"} and ml["used"] == {"cpu": "2"}
    assert ml["members"] == 1 and ml["max_vfolder_count"] == 3
    web = next(x for x in body["projects"] if x["name"] == "web")
    assert web["used"] == {} and web["sessions"] == 0
    for who, code in (("alice", 403), ("gus", 404), ("gina", 404)):
        resp, body = await served.call("GET", "domains/acme/totals", who)
        assert resp.code == code, (who, body)
    resp, body = await served.call("GET", "domains/acme/totals", "root")
    assert resp.code == 200 and body["users"] == 4  # root, ada, alice, bob
