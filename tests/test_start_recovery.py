"""A start a killed hub never saw finish (spawner/dockerrecover.py): what a
container's inspect output claims, and when the service's record makes it
this server's. The real hub and engine: tests/test_docker_crash.py."""

from __future__ import annotations

import asyncio
import logging

import pytest

from hub_ext.client import Refused, ServiceUnavailable
from spawner import dockerrecover
from spawner.dockerrecover import StartRecoveryMixin, claim_of, refusal
from spawner.isolation import SessionNetwork

ROOT, LIVE_ROOT, ENGINE = "/run/hubgrid/sessions", "/run/hubgrid/live", "unix:///e.sock"
ALLOC = "0123abcd-aaaa"
NET = SessionNetwork.of(ROOT, ALLOC, 8081)


def inspect(alloc=ALLOC, user="bob", mounts=(NET.session_dir, NET.relay_dir,
                                              f"{LIVE_ROOT}/{ALLOC}"), mode="container:h1"):
    return {"Id": "c1", "Config": {"Labels": {"hubgrid.allocation": alloc, "hubgrid.user": user}},
            "Mounts": [{"Source": m} for m in mounts], "HostConfig": {"NetworkMode": mode}}


def record(**kw):
    return {"id": ALLOC, "user": "bob", "server_name": "midway", "state": "allocated",
            "backend_url": ENGINE, **kw}


def test_a_container_claims_its_allocation_directory_holder_and_live_directory():
    c = claim_of(inspect(), ENGINE, ROOT, LIVE_ROOT, 8081)
    assert (c.container, c.allocation, c.user, c.engine) == ("c1", ALLOC, "bob", ENGINE)
    assert c.network == NET and c.sandbox == "h1" and c.live


def test_a_container_that_does_not_mount_the_directory_claims_none():
    c = claim_of(inspect(mounts=(), mode="none"), ENGINE, ROOT, LIVE_ROOT, 8081)
    assert c.network is None and c.sandbox == "" and not c.live
    assert not claim_of(inspect(), ENGINE, ROOT, "", 8081).live


def test_a_label_that_cannot_name_a_directory_claims_nothing():
    for alloc in ("", "../../etc", "A/B", "x" * 65):
        assert claim_of(inspect(alloc=alloc), ENGINE, ROOT, LIVE_ROOT, 8081) is None
    assert claim_of({"Id": "c1", "Config": {}}, ENGINE, ROOT, LIVE_ROOT, 8081) is None


def test_the_service_record_must_agree_on_id_user_server_and_engine():
    c = claim_of(inspect(), ENGINE, ROOT, LIVE_ROOT, 8081)
    assert refusal(c, record(), "bob", "midway", ENGINE) == ""
    # a node with no backend_url: the hub's default engine
    assert refusal(c, record(backend_url=None), "bob", "midway", ENGINE) == ""
    assert "knows no allocation" in refusal(c, None, "bob", "midway", ENGINE)
    assert "not 0123" in refusal(c, record(id="other"), "bob", "midway", ENGINE)
    assert "not alice's" in refusal(c, record(), "alice", "midway", ENGINE)
    assert "not bob's" in refusal(c, record(user="alice"), "bob", "midway", ENGINE)
    assert "server 'midway'" in refusal(c, record(server_name="other"), "bob", "midway", ENGINE)
    # the default server: "" in the hub, None or "" in the service
    assert refusal(c, record(server_name=None), "bob", "", ENGINE) == ""
    assert "server ''" in refusal(c, record(), "bob", "", ENGINE)
    assert "engine" in refusal(c, record(backend_url="unix:///other.sock"), "bob", "midway",
                               ENGINE)


def test_a_label_naming_another_user_is_refused_even_when_the_record_is_the_users():
    c = claim_of(inspect(user="mallory"), ENGINE, ROOT, LIVE_ROOT, 8081)
    assert "not bob's" in refusal(c, record(), "bob", "midway", ENGINE)


# -- the spawner's side, with the engine, the service and the socket faked ----

class Unavailable:
    """The service before it runs (the hub checks its servers first)."""

    def __init__(self, records):
        self.records, self.up, self.released = records, False, []

    async def allocation(self, alloc):
        if not self.up:
            raise ServiceUnavailable("refused")
        if alloc not in self.records:
            raise Refused("no such allocation", 404)
        return self.records[alloc]

    async def release(self, alloc, reason, exit_code=None):
        self.released.append(alloc)


class Engine:
    def __init__(self):
        self.killed, self.removed = [], []

    def kill(self, cid):
        self.killed.append(cid)

    def remove_container(self, cid, force=False):
        self.removed.append(cid)


class Base:
    async def stop(self, now=False):
        pass

    def get_state(self):
        return {"hubgrid_allocation": self.allocation_id} if self.allocation_id else {}


class Spawner(StartRecoveryMixin, Base):
    default_docker_url = docker_url = ENGINE
    session_socket_root, live_mount_root, relay_port = ROOT, LIVE_ROOT, 8081
    service_outage_limit = 30.0
    object_id, allocation_id, _sandbox, _live_alloc, _net = "c1", None, "", "", None
    orm_spawner = db = None
    _log_name = "bob:midway"
    log = logging.getLogger("test_start_recovery")

    def __init__(self, service, container):
        super().__init__()
        self.hubgrid, self.container, self.engine = service, container, Engine()
        self.user = type("U", (), {"name": "bob"})()
        self.name = "midway"
        self.server = type("S", (), {"base_url": "/user/bob/midway/"})()
        self.live_announced = False

    async def docker(self, method, *args):
        return self.container

    def _client_for(self, url):
        return self.engine

    def _use_socket(self):
        pass

    async def _live_started(self):
        self.live_announced = True


@pytest.fixture
def faked(monkeypatch):
    seen = {"closed": [], "holders": [], "up": True}
    monkeypatch.setattr(dockerrecover.sockpin, "pin", lambda *a: seen["up"])

    async def answers(url, timeout):
        return seen["up"]

    async def close_network(net):
        seen["closed"].append(net)

    async def remove(client, holder):
        seen["holders"].append(holder)

    async def nothing(path):
        pass
    monkeypatch.setattr(dockerrecover.readiness, "answers_once", answers)
    monkeypatch.setattr(dockerrecover, "close_network", close_network)
    monkeypatch.setattr(dockerrecover.SANDBOXES, "remove", remove)
    monkeypatch.setattr(dockerrecover.RELAYS, "close", nothing)
    monkeypatch.setattr(dockerrecover, "CONFIRM_RETRY", 0.01)
    return seen


def run(coro):
    return asyncio.run(coro)


def test_an_up_server_is_kept_holding_its_claim_until_the_service_confirms_it(faked):
    service = Unavailable({ALLOC: record()})

    async def go():
        s = Spawner(service, inspect())
        assert await s.recover_start(None) is True
        # not yet its allocation, but named in its state: the service must not release it
        assert s.allocation_id is None and s.get_state() == {"hubgrid_allocation": ALLOC}
        assert s._net == NET and s._sandbox == ""
        assert await s.recover_start(None) is True  # the hub's next poll, still unconfirmed
        service.up = True
        await s._confirming
        return s
    s = run(go())
    assert s.allocation_id == ALLOC and s._sandbox == "h1" and s._live_alloc == ALLOC
    assert s.live_announced and not service.released and not faked["closed"]


def test_a_server_not_up_is_stopped_and_what_it_left_goes_once_confirmed_as_its_own(faked):
    faked["up"] = False
    service = Unavailable({ALLOC: record()})

    async def go():
        s = Spawner(service, inspect())
        assert await s.recover_start(None) is False
        assert s.allocation_id is None and s._net is None  # nothing removed unconfirmed
        assert not faked["closed"]
        service.up = True
        await s._confirming
        return s
    s = run(go())
    assert faked["closed"] == [NET] and faked["holders"] == ["h1"]
    assert service.released == [ALLOC] and s.engine.removed == ["c1"]


def test_a_claim_the_service_refuses_touches_nothing_its_labels_name(faked):
    for records in ({}, {ALLOC: record(user="alice")}, {ALLOC: record(server_name="x")}):
        for up in (True, False):
            faked["up"] = up
            service = Unavailable(records)

            async def go():
                s = Spawner(service, inspect())
                assert await s.recover_start(None) is up
                service.up = True
                await s._confirming
                return s
            s = run(go())
            assert s.allocation_id is None and s._net is None and s._claim is None
            assert not faked["closed"] and not faked["holders"] and not service.released
            assert s.engine.killed == (["c1"] if up else [])  # the next poll removes it


def test_with_the_service_answering_an_up_server_is_recovered_at_once(faked):
    service = Unavailable({ALLOC: record()})
    service.up = True
    s = Spawner(service, inspect())
    assert run(s.recover_start(None)) is True
    assert s.allocation_id == ALLOC and s._claim is None and s.live_announced
    # not up: its allocation is the mixin's to release, its directory the spawner's to remove
    faked["up"] = False
    s = Spawner(service, inspect())
    assert run(s.recover_start(None)) is False
    assert s.allocation_id == ALLOC and s._net == NET and s._sandbox == "h1"
    # released already: nothing to release, but its directory still goes
    service.records[ALLOC] = record(state="released")
    s = Spawner(service, inspect())
    assert run(s.recover_start(None)) is False
    assert s.allocation_id is None and s._net == NET


def test_a_server_stopped_before_confirmation_is_cleaned_up_by_it(faked):
    service = Unavailable({ALLOC: record()})

    async def go():
        s = Spawner(service, inspect())
        assert await s.recover_start(None) is True
        await s.stop()
        assert s._claim is None and s._net is None
        service.up = True
        await s._confirming
        return s
    s = run(go())
    assert s.allocation_id is None and faked["closed"] == [NET] and service.released == [ALLOC]
