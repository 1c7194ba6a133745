"""POST allocations/{id}/stop, the Sessions (all) page's stop:
an API session is released at once; a hub server's session is stopped
through the hub (its spawner releases it), or refused 503 when the service
has no hub API. Through the real tornado app; the hub is a recording double."""

from __future__ import annotations

import datetime as dt

import pytest

from ledger_world import Cluster
from quota_service.core.models import Allocation
from service_app import served  # noqa: F401


class RecordingHub:
    """The hub API as the stop uses it: records each call, answers 204."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []

    async def call(self, method: str, path: str, *args, **kwargs):
        self.calls.append((method, path))
        return None


@pytest.fixture
def sessions(served):  # noqa: F811
    """alice's API session and her hub server "lab1" (both running in acme)."""
    c = Cluster(served.world)
    c.add_group("gpu", {"n1": ()}, cpu="8", domains=("acme", "globex"))
    api = c.submit("alice", "ml", "gpu", slots={"cpu": "1"})
    hub = c.submit("alice", "ml", "gpu", slots={"cpu": "1"})
    with served.world.tx() as s:
        a = s.get(Allocation, hub["id"])
        a.origin, a.server_name = "hub", "lab1"
    served.svc.clock = lambda: c.now + dt.timedelta(seconds=1)
    served.ids = {"api": api["id"], "hub": hub["id"]}
    return served


async def test_an_admin_of_the_domain_releases_an_api_session_others_do_not_find_it(sessions):
    for who in ("gus", "gina"):
        resp, body = await sessions.call("POST", f"allocations/{sessions.ids['api']}/stop", who)
        assert resp.code == 404 and body["message"], body
    resp, body = await sessions.call("POST", f"allocations/{sessions.ids['api']}/stop", "ada")
    assert resp.code == 200, body
    assert body["state"] == "released" and body["release_reason"] == "stopped by ada"


async def test_a_hub_servers_session_is_stopped_through_the_hub(sessions):
    hub_id = sessions.ids["hub"]
    sessions.svc.mirror.hub = None
    resp, body = await sessions.call("POST", f"allocations/{hub_id}/stop", "ada")
    assert resp.code == 503 and "no hub API" in body["message"], body
    recording = RecordingHub()
    sessions.svc.mirror.hub = recording
    resp, body = await sessions.call("POST", f"allocations/{hub_id}/stop", "ada")
    assert resp.code == 202, body
    assert recording.calls == [("DELETE", "users/alice/servers/lab1")]
    # the allocation stays until the spawner releases it
    assert body["state"] == "allocated"
    resp, body = await sessions.call("POST", f"allocations/{hub_id}/stop", "gus")
    assert resp.code == 404, body
