"""The gateway's cold start (gateway/coldstart.py): what a call to an
endpoint with no replica routed finds, with plain data; then the real thing:
real haproxy and a real chat stand-in, a call that wakes an endpoint at zero
and is held until its replica serves, through the gateway's tornado app (the
service's side of the wake, ``internal/serving/wake``, is tested with the
service in test_serving_routes.py)."""

from __future__ import annotations

import asyncio
import time

import httpx
import openai
import pytest

from gateway import table as tablelib
from gateway.coldstart import Hold, Unavailable, verdict
from test_gateway import EP1, EP3, gateway, needs_haproxy, real_doc, serve  # noqa: F401


def table(wanted=0, wake=True, state="running", reason="", replicas=()):
    d = real_doc()
    d["endpoints"][0].update({"replicas_wanted": wanted, "wake": wake, "state": state,
                              "state_reason": reason,
                              "replicas": [{"name": n, "target": t} for n, t in replicas]})
    return tablelib.read(d)


def test_what_a_call_finds():
    assert verdict(table(1, replicas=[("r", "unix:/x")]).endpoints[EP1]) == "route"
    assert verdict(table(0, wake=True).endpoints[EP1]) == "wake"
    assert verdict(table(0, wake=False).endpoints[EP1]) == "zero"
    assert verdict(table(2).endpoints[EP1]) == "wait"
    assert verdict(table(1, state="failed").endpoints[EP1]) == "failed"
    # a table of an older service (no such fields): wants its replicas
    assert verdict(tablelib.read(real_doc()).endpoints[EP3]) == "wait"


class Service:
    """Stands in for the service's wake and the gateway's sync: a wake
    answers (or refuses) and the next table is the one given."""

    def __init__(self, t):
        self.t, self.changed, self.asked = t, asyncio.Event(), []
        self.refuse: Unavailable | None = None
        self.nudged = 0

    def set(self, t):
        self.t = t
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    async def wake(self, endpoint_id):
        self.asked.append(endpoint_id)
        await asyncio.sleep(0.05)
        if self.refuse:
            raise self.refuse

    def nudge(self):
        self.nudged += 1

    def hold(self, timeout=5.0) -> Hold:
        return Hold(lambda: self.t, lambda: self.changed, self.wake, self.nudge, timeout)


async def test_held_calls_wake_an_endpoint_once_and_go_on_when_a_replica_is_routed():
    svc = Service(table(0, wake=True))
    hold = svc.hold()
    calls = [asyncio.ensure_future(hold.ready(EP1, hold.deadline())) for _ in range(3)]
    await asyncio.sleep(0.2)
    assert svc.asked == [EP1] and svc.nudged >= 1  # one wake for the three calls
    assert hold.waiting == 3 and not any(c.done() for c in calls)
    svc.set(table(1))  # the service wants one: still starting
    await asyncio.sleep(0.1)
    assert not any(c.done() for c in calls) and svc.asked == [EP1]
    svc.set(table(1, replicas=[("r", "unix:/x")]))
    got = await asyncio.wait_for(asyncio.gather(*calls), 2)
    assert {e.route.replicas[0].name for e in got} == {"r"} and hold.waiting == 0


async def test_a_call_that_waits_too_long_is_told_why():
    svc = Service(table(1))
    hold = svc.hold(timeout=0.3)
    started = time.monotonic()
    with pytest.raises(Unavailable) as u:
        await hold.ready(EP1, hold.deadline())
    assert time.monotonic() - started >= 0.3
    assert u.value.code == "no_replica" and "within 0.3 s" in u.value.message
    assert svc.asked == []  # it wanted a replica already: no wake


async def test_failed_zero_by_hand_and_refused_wakes_answer_at_once():
    for t, code, words in [
        (table(1, state="failed", reason="image gone"), "failed", "failed: image gone"),
        (table(0, wake=False), "scaled_to_zero", "no autoscaling rule"),
    ]:
        svc = Service(t)
        with pytest.raises(Unavailable) as u:
            await svc.hold().ready(EP1, time.monotonic() + 5)
        assert (u.value.code, words in u.value.message) == (code, True)
        assert svc.asked == []
    svc = Service(table(0, wake=True))
    svc.refuse = Unavailable("quota: cpu 4 of 4 in use", "unavailable")
    with pytest.raises(Unavailable) as u:
        await svc.hold().ready(EP1, time.monotonic() + 5)
    assert u.value.message == "quota: cpu 4 of 4 in use"
    svc.t = tablelib.read({"endpoints": []})  # deleted meanwhile
    with pytest.raises(Unavailable) as u:
        await svc.hold().ready(EP1, time.monotonic() + 5)
    assert u.value.code == "gone"


@needs_haproxy
async def test_a_call_to_an_endpoint_at_zero_starts_a_replica_and_gets_its_answer(gateway):  # noqa: F811
    state, balancer, replicas, base = gateway
    await serve(state, balancer, {"endpoints": [{**real_doc()["endpoints"][0],
                                                 "replicas_wanted": 0, "wake": True}]})
    woken = []

    async def wake(endpoint_id):  # the service starts a replica; the sync brings its route
        woken.append(endpoint_id)
        await asyncio.sleep(0.3)
        await serve(state, balancer, {"endpoints": [{**real_doc()["endpoints"][0],
                                                     "replicas_wanted": 1}]})
        await asyncio.sleep(0.5)
        sock = await asyncio.to_thread(replicas.start, "cold")
        await serve(state, balancer, {"endpoints": [{
            **real_doc([("cold", sock)])["endpoints"][0], "replicas_wanted": 1}]})

    state.hold = Hold(lambda: state.table, lambda: state.changed, wake, lambda: None, 30)
    client = openai.AsyncOpenAI(base_url=base + "v1", api_key="secret-one", max_retries=0)
    try:
        started = time.monotonic()
        answers = await asyncio.gather(*[client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": f"cold {i}"}]) for i in range(3)])
        assert [a.choices[0].message.content for a in answers] == [
            f"echo: cold {i}" for i in range(3)]
        assert answers[0].model == "echo"  # the name the replica serves, known once routed
        assert time.monotonic() - started >= 0.8  # they were held through the start
    finally:
        await client.close()
    assert woken == [EP1]
    calls = state.counts.take()
    assert [(c["code"], c["calls"]) for c in calls] == [("2xx", 3)]  # held tries not counted
    assert calls[0]["seconds"] >= 3 * 0.8  # the time held is the calls' time
    # the token is checked before anything is woken: a stranger starts nothing
    state.hold = Hold(lambda: state.table, lambda: state.changed, wake, lambda: None, 30)
    await serve(state, balancer, {"endpoints": [{**real_doc()["endpoints"][0],
                                                 "replicas_wanted": 0, "wake": True}]})
    async with httpx.AsyncClient(base_url=base) as h:
        r = await h.post("v1/chat/completions", json={"model": "chat", "messages": []})
        assert r.status_code == 401
        r = await h.get(f"e/{EP1}/health", headers={"Authorization": "Bearer nonsense"})
        assert r.status_code == 401
    assert woken == [EP1]


@needs_haproxy
async def test_calls_go_on_while_the_balancer_reloads(gateway):  # noqa: F811
    """A change of the routes reloads haproxy (its old worker closes its idle
    connections): calls made meanwhile all answer (a scale-up once cost a
    502 'cannot be reached' to a call on a closed kept-alive connection)."""
    state, balancer, replicas, base = gateway
    r1, r2 = replicas.start("r1"), replicas.start("r2")
    await serve(state, balancer, real_doc([("r1", r1)]))
    stop = asyncio.Event()
    failures, answered = [], [0]

    async def calls():
        async with httpx.AsyncClient(base_url=base, timeout=30) as h:
            while not stop.is_set():
                r = await h.post("v1/chat/completions",
                                 headers={"Authorization": "Bearer secret-one"},
                                 json={"model": "chat", "messages": [
                                     {"role": "user", "content": "x"}]})
                if r.status_code != 200:
                    failures.append((r.status_code, r.text[:200]))
                answered[0] += 1

    tasks = [asyncio.ensure_future(calls()) for _ in range(4)]
    try:
        for i in range(12):  # 12 reloads, calls flowing all along
            await asyncio.sleep(0.15)
            pair = [("r1", r1), ("r2", r2)] if i % 2 == 0 else [("r1", r1)]
            await serve(state, balancer, real_doc(pair))
    finally:
        await asyncio.sleep(0.3)
        stop.set()
        await asyncio.gather(*tasks)
    assert answered[0] > 40 and failures == []
