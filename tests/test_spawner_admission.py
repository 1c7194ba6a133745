"""How a hubgrid spawner waits for admission (no hub needed).

``follow`` runs against test doubles of the service and a fake clock (a sleep
advances it at once); the client's long-polls against a loopback tornado
server; the mixin's start budget against a double of the service.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
import tornado.web
from jupyterhub.spawner import SpawnException, Spawner
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from hub_ext.client import HubgridClient, Refused, ServiceUnavailable
from spawner.admission import REASONS, UNAVAILABLE, Waiting, follow, pending_text, user_refused
from spawner.mixin import HubgridSpawnerMixin

DOWN = ServiceUnavailable("hubgrid service unreachable: [Errno 111] Connection refused")


def model(state="pending", *reasons, alloc_id="a-1", **fields) -> dict:
    return {"id": alloc_id, "state": state, "reasons": [{"text": r} for r in reasons],
            "release_reason": None, **fields}


class FakeClock:
    """Time that passes only when someone sleeps."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class ScriptedService:
    """Answers ``allocation`` from a script: a model, an exception, or a
    callable of ``wait``. ``long_polls``: an unchanged pending answer takes
    the whole ``wait`` (the clock advances), as a long-poll does."""

    def __init__(self, clock: FakeClock, *answers, long_polls: bool = False):
        self.clock, self.answers, self.long_polls = clock, list(answers), long_polls
        self.calls: list[tuple[float, float | None]] = []

    async def allocation(self, alloc_id, wait=None):
        self.calls.append((self.clock.now, wait))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if self.long_polls and wait and answer["state"] == "pending":
            self.clock.now += wait
        return answer


WAITING = Waiting(wait=30, interval=1, outage_limit=60)


async def run(service, first=None, waiting=WAITING):
    shown: list[str] = []
    result = await follow(service, first or model("pending", "queue full"), waiting,
                          shown.append, service.clock)
    return result, shown


# ------------------------------------------------------------------ restarts

async def test_a_pending_spawn_rides_through_a_service_restart():
    clock = FakeClock()
    service = ScriptedService(clock, DOWN, DOWN, DOWN, model("pending", "queue full"),
                              model("allocated"))
    result, shown = await run(service)
    assert result["state"] == "allocated"
    assert shown[0] == "pending: queue full"
    assert shown[1].startswith(f"{UNAVAILABLE}, retrying (")
    assert shown[-1] == "pending: queue full"  # back to the reasons once it answers


async def test_retries_back_off_but_come_back_within_a_few_seconds():
    clock = FakeClock()
    service = ScriptedService(clock, *[DOWN] * 8, model("allocated"))
    await run(service)
    times = [t for t, _ in service.calls]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps == [1, 1, 2, 3, 3, 3, 3, 3]  # never closer than the interval, capped at 3 s


async def test_a_service_down_longer_than_the_outage_limit_fails_the_spawn_with_503():
    clock = FakeClock()
    service = ScriptedService(clock, *[DOWN] * 100)
    with pytest.raises(SpawnException) as e:
        await run(service, waiting=Waiting(wait=30, interval=1, outage_limit=20))
    assert (e.value.reason, e.value.status_code) == ("unavailable", 503)
    assert e.value.log_message.startswith(f"{UNAVAILABLE} for 2")
    assert "service_outage_limit" in e.value.log_message
    assert len(service.answers) > 0  # it gave up, it did not run out of script


async def test_the_outage_clock_starts_again_after_each_answer():
    clock = FakeClock()
    # two outages of ~15 s each, 60 s of answers between: limit 20 s never hit
    outage = [DOWN] * 7
    service = ScriptedService(clock, *outage, *[model("pending")] * 2, *outage,
                              model("allocated"), long_polls=True)
    result, _ = await run(service, waiting=Waiting(wait=30, interval=1, outage_limit=20))
    assert result["state"] == "allocated"


async def test_an_allocation_the_service_no_longer_knows_ends_the_wait_as_cancelled():
    clock = FakeClock()
    service = ScriptedService(clock, Refused("unknown allocation 'a-1'", 404))
    with pytest.raises(SpawnException) as e:
        await run(service)
    assert (e.value.reason, e.value.status_code) == ("cancelled", 409)
    assert "unknown allocation" in e.value.log_message


# ------------------------------------------------------------------ long-polls

async def test_a_pending_spawn_keeps_a_long_poll_open_until_the_service_decides():
    clock = FakeClock()
    pending = [model("pending", "queue full")] * 5
    service = ScriptedService(clock, *pending, model("allocated"), long_polls=True)
    result, shown = await run(service)
    assert result["state"] == "allocated"
    assert [wait for _, wait in service.calls] == [30] * 6
    assert set(shown) == {"pending: queue full"}
    assert clock.sleeps == [1]  # only before the first poll: the long-polls did the waiting


async def test_a_service_that_answers_at_once_is_asked_at_most_once_per_interval():
    clock = FakeClock()
    start = clock.now
    service = ScriptedService(clock, *[model("pending")] * 40, model("allocated"))
    await run(service, waiting=Waiting(wait=30, interval=2, outage_limit=60))
    times = [start] + [t for t, _ in service.calls]
    assert min(b - a for a, b in zip(times, times[1:])) >= 2


async def test_a_service_without_long_polls_is_polled_without_the_query():
    clock = FakeClock()
    refusal = Refused("unknown query parameter(s): wait", 422)
    service = ScriptedService(clock, refusal, model("pending"), model("allocated"))
    result, _ = await run(service)
    assert result["state"] == "allocated"
    assert [wait for _, wait in service.calls] == [30, None, None]


async def test_the_reasons_are_shown_whenever_they_change():
    clock = FakeClock()
    service = ScriptedService(clock, model("pending", "queue full"), model("pending", "2nd"),
                              model("pending", "2nd"), model("cancelled"), long_polls=True)
    result, shown = await run(service)
    assert result["state"] == "cancelled"
    # the caller drops repeats; follow reports each answer's reasons
    assert list(dict.fromkeys(shown)) == ["pending: queue full", "pending: 2nd"]


# ------------------------------------------------------------------ the client

class LongPollHandler(tornado.web.RequestHandler):
    """GET internal/allocations/{id}: held until ``release`` is set."""

    def initialize(self, state):
        self.state = state

    async def get(self, alloc_id):
        self.state["queries"].append(self.request.query)
        if self.get_query_argument("wait", None):
            self.state["open"] += 1
            await self.state["release"].wait()
        self.finish({"id": alloc_id, "state": "pending", "reasons": []})


class IdentityHandler(tornado.web.RequestHandler):
    def get(self, name):
        self.finish({"name": name, "projects": []})


async def until(check, timeout=10.0):
    """Wait (bounded) until ``check()`` holds; assert that it did."""
    async def poll():
        while not check():
            await asyncio.sleep(0.05)
    await asyncio.wait_for(poll(), timeout)


@pytest.fixture
async def loopback():
    state = {"queries": [], "open": 0, "release": asyncio.Event()}
    app = tornado.web.Application([
        (r"/api/internal/allocations/([^/]+)", LongPollHandler, {"state": state}),
        (r"/api/internal/identity/([^/]+)", IdentityHandler),
    ])
    [sock] = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(app)
    server.add_sockets([sock])
    state["url"] = f"http://127.0.0.1:{sock.getsockname()[1]}/api/"
    yield state
    state["release"].set()
    server.stop()
    await server.close_all_connections()


async def test_a_long_poll_may_outlast_the_clients_timeout(loopback):
    client = HubgridClient(loopback["url"], "token", timeout=0.5)
    poll = asyncio.ensure_future(client.allocation("a-1", wait=1.5))
    await until(lambda: loopback["open"] == 1)
    await asyncio.sleep(1)  # longer than the client's timeout: the poll is still open
    assert not poll.done()
    loopback["release"].set()
    assert (await poll)["state"] == "pending"
    assert loopback["queries"] == ["wait=1.5"]


async def test_many_long_polls_do_not_hold_up_the_hubs_other_calls(loopback):
    client = HubgridClient(loopback["url"], "token", timeout=10)
    polls = [asyncio.ensure_future(client.allocation(f"a-{i}", wait=30)) for i in range(15)]
    await until(lambda: loopback["open"] == 15)  # all open at once
    # and a login's lookup still gets through
    assert (await client.identity("alice"))["name"] == "alice"
    loopback["release"].set()
    assert len(await asyncio.gather(*polls)) == 15


async def test_a_lookup_without_wait_sends_no_query(loopback):
    client = HubgridClient(loopback["url"], "token", timeout=5)
    assert (await client.allocation("a-1"))["state"] == "pending"
    assert loopback["queries"] == [""]


# ------------------------------------------------------------------ the mixin

class QuickBackend(Spawner):
    """A backend whose start returns at once, noting the timeout it saw."""

    async def start(self):
        self.seen_start_timeout = self.start_timeout
        return "http://127.0.0.1:1"

    async def poll(self):
        return None

    async def stop(self, now=False):
        pass


class FakeService:
    """The internal API for one spawn: allocate answers ``first``; each
    lookup answers the next of ``then`` (the last one repeats)."""

    def __init__(self, first: dict, *then: dict):
        self.first, self.then = first, list(then)
        self.released: list[tuple[str, str]] = []

    async def identity(self, name):
        raise Refused(f"user {name!r} is not registered in hubgrid", 403)

    async def spawn_choices(self, name):
        # a request without a size gets the default resource preset
        return {"presets": [{"name": "small", "default": True,
                             "slots": {"cpu": "0.5", "mem": str(2**30)}}]}

    async def allocate(self, body):
        return self.first

    async def allocation(self, alloc_id, wait=None):
        await asyncio.sleep(0.05)
        return self.then.pop(0) if len(self.then) > 1 else self.then[0]

    async def release(self, alloc_id, reason, exit_code=None):
        self.released.append((alloc_id, reason))


class Probe(HubgridSpawnerMixin, QuickBackend):
    service: FakeService | None = None

    @property
    def hubgrid(self):
        return self.service


def probe(service=None, **traits) -> Probe:
    traits.setdefault("user_options", {"project": "ml"})
    p = Probe(user=SimpleNamespace(name="alice", url="/user/alice/"),
              authenticator=SimpleNamespace(service_timeout=20), **traits)
    p.service = service
    return p


ALLOCATED = model("allocated", slots={"cpu": "1"}, gpus=[], domain="acme", project="ml",
                  resource_group="default", node="n-1")


async def test_the_hub_gets_the_queues_time_and_the_backend_gets_the_configured_budget():
    p = probe(FakeService(model("pending", "queue full"), model("pending"), ALLOCATED),
              start_timeout=3, max_queue_wait=100)
    p.run_pre_spawn_hook()
    assert p.start_timeout == 3 + 100 + 3 * 20
    p.run_pre_spawn_hook()  # a second call (e.g. a retried spawn) does not add it twice
    assert p.start_timeout == 163
    assert await asyncio.wait_for(p.start(), p.start_timeout) == "http://127.0.0.1:1"
    assert p.seen_start_timeout == 3
    assert p.start_timeout == 3  # restored for later starts and the hub's messages
    p.start_timeout = 5  # an admin's change (apply_user_options) is the new budget
    p.run_pre_spawn_hook()
    assert p.start_timeout == 5 + 100 + 60


async def test_a_request_that_waits_longer_than_max_queue_wait_fails_and_is_released():
    service = FakeService(model("pending", "queue full"), model("pending", "queue full"))
    p = probe(service, max_queue_wait=0.3)
    p.run_pre_spawn_hook()
    with pytest.raises(SpawnException) as e:
        await p.start()
    assert (e.value.reason, e.value.status_code) == ("queue-timeout", 409)
    assert "max_queue_wait" in e.value.log_message
    assert service.released == [("a-1", "cancelled before it started")]
    assert p.start_timeout == 60


async def test_a_user_hubgrid_does_not_know_gets_a_4xx_that_says_so():
    p = probe(FakeService(ALLOCATED, ALLOCATED), user_options={})
    with pytest.raises(SpawnException) as e:
        await p.start()
    assert (e.value.reason, e.value.status_code) == ("user-refused", 403)
    assert e.value.log_message == "user 'alice' is not registered in hubgrid; ask an admin"


async def test_a_service_down_at_the_start_fails_at_once_with_503():
    class Down(FakeService):
        async def allocate(self, body):
            raise DOWN

    p = probe(Down(ALLOCATED, ALLOCATED))
    with pytest.raises(SpawnException) as e:
        await p.start()
    assert (e.value.reason, e.value.status_code) == ("unavailable", 503)
    assert e.value.log_message.startswith("hubgrid service unavailable: ")


async def test_progress_reports_each_change_once_and_sleeps_in_between():
    # one event per change: the page's reader sleeps in between (no polling loop)
    p = probe()
    events = p.progress()
    p._set_pending("pending: queue full")
    assert await events.__anext__() == {"message": "pending: queue full"}
    nxt = asyncio.ensure_future(events.__anext__())
    p._set_pending("pending: queue full")  # no change: no event
    await asyncio.sleep(0.1)
    assert not nxt.done()
    p._set_pending(f"{UNAVAILABLE}, retrying (x)")
    assert await nxt == {"message": f"{UNAVAILABLE}, retrying (x)"}
    await events.aclose()


def queued(position: int, of: int) -> dict:
    return model("pending", queue={"resource_group": "default", "position": position,
                                   "pending": of, "waits_for": "capacity"})


async def test_a_reloaded_page_starts_on_the_current_place_in_the_queue():
    # the start's own long-poll last said "2 of 2"; the one ahead has started since
    p = probe(FakeService(queued(2, 2), queued(1, 1)))
    p.allocation_id = "a-1"
    p._set_pending(pending_text(queued(2, 2)))
    events = p.progress()
    first = await events.__anext__()
    assert first["message"].startswith("pending: in the queue of resource group default, "
                                       "number 1 of 1 in line"), first
    await events.aclose()


async def test_a_page_whose_service_cannot_answer_shows_the_last_place():
    class Down(FakeService):
        async def allocation(self, alloc_id, wait=None):
            raise DOWN

    p = probe(Down(queued(2, 2), queued(2, 2)))
    p.allocation_id = "a-1"
    p._set_pending(pending_text(queued(2, 2)))
    events = p.progress()
    assert "number 2 of 2" in (await events.__anext__())["message"]
    await events.aclose()


async def test_a_start_cancelled_in_the_queue_ends_the_page_with_a_failed_event_not_ready():
    service = FakeService(queued(1, 1), queued(1, 1))
    p = probe(service, pending_wait=0)
    ready = {"progress": 100, "ready": True, "message": "Server ready at /user/alice/"}
    assert p.progress_ready_hook(p, dict(ready)) == ready  # nothing cancelled yet
    start = asyncio.ensure_future(p.start())
    await asyncio.sleep(0.2)
    start.cancel()  # what the hub does to a pending spawn on DELETE .../server
    with pytest.raises(asyncio.CancelledError):
        await start
    assert service.released == [("a-1", "cancelled before it started")]
    event = p.progress_ready_hook(p, dict(ready))
    assert event == {"progress": 100, "failed": True,
                     "message": "Your queued start was cancelled: nothing was started."}
    p.service = FakeService(ALLOCATED, ALLOCATED)
    await p.start()  # the next start is not taken for a cancelled one
    assert p.progress_ready_hook(p, dict(ready)) == ready


def test_every_reason_is_a_short_metric_label():
    assert all(r.isascii() and r.islower() and " " not in r for r in REASONS)


async def test_an_allocation_a_failed_release_left_behind_is_released_by_the_next_start():
    service = FakeService(ALLOCATED, ALLOCATED)
    p = probe(service)
    p.allocation_id = "left-over"  # its release failed while the service was down
    await p.start()
    assert service.released == [("left-over", "a new start replaces it")]
    assert p.allocation_id == "a-1"


def test_a_waiting_start_says_its_place_in_the_queue_and_what_it_waits_for():
    reasons = [{"text": "resource group default: cpu short by 1", "level": "resource-group"}]
    queue = {"resource_group": "default", "position": 2, "pending": 3, "waits_for": "capacity"}
    assert pending_text({"reasons": reasons, "queue": queue}) == (
        "pending: in the queue of resource group default, number 2 of 3 in line, "
        "waiting for free capacity: resource group default: cpu short by 1")
    limits = {**queue, "position": 1, "pending": 1, "waits_for": "limits"}
    assert pending_text({"reasons": [{"text": "project ml: sessions 2 of 2"}],
                         "queue": limits}) == (
        "pending: in the queue of resource group default, number 1 of 1 in line, "
        "waiting until your limits allow it: project ml: sessions 2 of 2")
    # not judged yet; a service that does not tell the place
    assert pending_text({"reasons": [], "queue": {**queue, "waits_for": None}}) == (
        "pending: in the queue of resource group default, number 2 of 3 in line, waiting")
    assert pending_text({"reasons": reasons}) == (
        "pending: resource group default: cpu short by 1")


@pytest.mark.parametrize("message, said", [
    ("user 'x' is deactivated", "user 'x' is deactivated; ask an admin"),
    ("user 'x' is not registered in hubgrid: log in to the hub once, or ask an admin to add you",
     "user 'x' is not registered in hubgrid: log in to the hub once, or ask an admin to add you"),
], ids=["told whom to ask", "already says whom to ask"])
def test_a_refused_user_is_told_once_whom_to_ask(message, said):
    e = user_refused(Refused(message, 403))
    assert (e.message, e.reason, e.status_code) == (said, "user-refused", 403)
