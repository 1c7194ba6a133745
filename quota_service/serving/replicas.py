"""The serving controller: keeps each endpoint's replicas as asked.

A replica is a JupyterHub named server of the endpoint's creator
(``replicaplan.server_name``) with user_options ``{session_type:
"inference", endpoint: <id>, project, resource_group, image, cpu, mem,
...}``: the hub's own spawner starts it, the ledger admits and places it like
any session (``replicaadmit`` checks it against the endpoint), and the hub
keeps it across restarts. One pass (:meth:`Controller.run`), every
``serving_interval`` seconds and at once after an endpoint's create, PATCH
or DELETE:

1. reads every endpoint with its replicas' allocations, and whether one
   failed to start since its replicas were last asked for (database, in a
   worker thread);
2. asks the hub for each creator's servers (``GET users/{name}``);
3. decides per endpoint with the pure ``replicaplan.plan``;
4. starts (``POST users/{creator}/servers/{name}``), replaces (stop, then
   start again) or stops (``DELETE`` with ``remove``) through the hub API,
   all endpoints' actions at once;
5. writes each endpoint's state and which replicas serve; an endpoint whose
   DELETE is done (no replica left) loses its row and tokens.

An allocation of a replica keeps its ``endpoint_id``, how it serves
(``service``: ``{"model", "argv", "port", "health_path"}``, read at
admission by ``replicaadmit``) and since when this pass sees it serve
(``serving_at``); an endpoint keeps when its replicas were last asked for
(``desired_at``, PATCH): a start that failed before then is forgotten.

Everything it needs is in the database and the hub: after a restart of the
service the next pass picks up a scale or a delete where it was.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import quote

from sqlalchemy import delete as sa_delete
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from tornado.httpclient import HTTPClientError

from . import replicaplan
from ..core import db
from ..core.models import Allocation, Project, ResourceGroup
from ..core.orm import aware
from ..core.servingmodels import Endpoint, EndpointToken

#: the release reason of a spawn that failed (the spawner adds ": <why>")
START_FAILED = "the server failed to start"
ACTIVE = ("pending", "allocated")


@dataclass
class View:
    """One endpoint as the pass reads it."""

    id: str
    name: str
    creator: str
    desired: int
    terminating: bool
    failure: str
    options: dict
    desired_at: dt.datetime | None = None
    #: server name -> allocation state of its active allocation
    active: dict[str, str] = field(default_factory=dict)


def start_failure(reason: str) -> str:
    """Why a replica failed to start, from its allocation's release reason
    ("" when it did not fail to start)."""
    if reason == START_FAILED:
        return "a replica failed to start"
    if reason.startswith(START_FAILED + ": "):
        return "a replica failed to start: " + reason[len(START_FAILED) + 2:]
    return ""


def user_options(e: Endpoint, project: str, group: str) -> dict:
    """A replica's user_options: the endpoint's project, group, image and slots."""
    slots = {k: Decimal(v) for k, v in (e.slots or {}).items()}
    out = {"session_type": "inference", "endpoint": e.id, "project": project,
           "resource_group": group, "image": e.image,
           "cpu": str(slots.get("cpu", 0)), "mem": str(int(slots.get("mem", 0)))}
    if slots.get("gpu"):
        out["gpu"] = int(slots["gpu"])
    if slots.get("gpu.shares"):
        out["gpu_shares"] = str(slots["gpu.shares"])
    return out


def read(s: Session) -> list[View]:
    views = []
    for e in s.scalars(select(Endpoint).order_by(Endpoint.id)):
        project = s.get(Project, e.project_id)
        group = s.get(ResourceGroup, e.resource_group_id)
        failure = e.state_reason if e.state == "failed" else ""
        since = aware(e.desired_at or e.created_at)
        active = {}
        for a in s.scalars(select(Allocation).where(Allocation.endpoint_id == e.id)
                           .order_by(Allocation.created_at)):
            if a.state in ACTIVE:
                active[a.server_name] = a.state
            elif not failure and a.released_at is not None and aware(a.released_at) >= since:
                failure = start_failure(a.release_reason or "")
        views.append(View(e.id, e.name, e.created_by, e.replicas, e.state == "terminating",
                          failure, user_options(e, project.name, group.name), e.desired_at,
                          active))
    return views


def replica_state(server: dict | None, allocation: str | None) -> str:
    """A replica as the plan sees it, from the hub's server model (None: the
    hub has none) and its active allocation's state (None: none)."""
    if server is not None and server.get("pending") == "stop":
        return "stopping"
    if server is not None and server.get("ready"):
        return "serving" if allocation == "allocated" else "stopped"
    if server is not None and server.get("pending") == "spawn":
        return "starting"
    if allocation is not None:
        return "starting"  # its start is on its way to the hub
    return "stopped"


def replicas_of(view: View, servers: dict[str, dict]) -> list[replicaplan.Replica]:
    prefix = replicaplan.server_name(view.name, view.id, 0)[:-1]
    names = {n for n in servers if n.startswith(prefix)} | set(view.active)
    return [replicaplan.Replica(n, replica_state(servers.get(n), view.active.get(n)))
            for n in sorted(names)]


def target_of(server: dict | None) -> str | None:
    """Where the gateway's balancer reaches a replica: its server's socket on
    the node, from the spawner's state in the hub (the service's token may
    read it: ``admin:server_state``); None when the hub does not say."""
    sock = ((server or {}).get("state") or {}).get("hubgrid_server_socket")
    return f"unix:{sock}" if isinstance(sock, str) and sock.startswith("/") else None


def write(s: Session, view: View, plan: replicaplan.Plan, serving: dict[str, str | None],
          failure: str, now: dt.datetime) -> None:
    """The endpoint's state, and since when each replica serves; the row
    goes once a DELETE is done."""
    e = s.get(Endpoint, view.id)
    if e is None:
        return
    if plan.remove and e.state == "terminating":
        s.execute(sa_delete(EndpointToken).where(EndpointToken.endpoint_id == e.id))
        s.execute(sa_delete(Endpoint).where(Endpoint.id == e.id))
        return
    if e.state == "terminating" or e.desired_at != view.desired_at:
        pass  # DELETE or PATCH came while the pass ran: the next pass acts on it
    elif failure:
        e.state, e.state_reason = "failed", failure[:2000]
    else:
        e.state, e.state_reason = plan.state, plan.reason
    for a in s.scalars(select(Allocation).where(Allocation.endpoint_id == e.id,
                                                Allocation.state.in_(ACTIVE))):
        if a.server_name in serving and a.serving_at is None:
            a.serving_at = now
        elif a.server_name not in serving and a.serving_at is not None:
            a.serving_at = None
        target = serving.get(a.server_name)
        if target and (a.service or {}).get("target") != target:
            a.service = {**(a.service or {}), "target": target}  # the gateway's route


def hub_message(e: HTTPClientError) -> str:
    """The hub's reason for a refused call (its JSON ``message``)."""
    try:
        return json.loads(e.response.body)["message"]
    except Exception:  # noqa: BLE001 - no JSON body: the status says it
        return str(e)


class Controller:
    """The serving pass of one service."""

    def __init__(self, factory: sessionmaker[Session], log: logging.Logger):
        self.factory = factory
        self.log = log
        self.wake = asyncio.Event()

    def soon(self) -> None:
        """Run a pass now (an endpoint changed)."""
        self.wake.set()

    async def loop(self, hub_of: Callable[[], object], clock: Callable[[], dt.datetime],
                   interval: Callable[[], float]) -> None:
        while True:
            self.wake.clear()
            hub = hub_of()
            if hub is not None:
                try:
                    await self.run(hub, clock)
                except Exception:
                    self.log.exception("serving pass failed; will retry")
            try:
                await asyncio.wait_for(self.wake.wait(), max(interval(), 0.1))
            except asyncio.TimeoutError:
                pass

    def _read(self) -> list[View]:
        with db.transaction(self.factory) as s:
            return read(s)

    def _write(self, results, now: dt.datetime) -> None:
        with db.transaction(self.factory) as s:
            for view, plan, serving, failure in results:
                write(s, view, plan, serving, failure, now)

    async def run(self, hub, clock: Callable[[], dt.datetime]) -> list[replicaplan.Plan]:
        """One pass over every endpoint; the plans made."""
        views = await asyncio.to_thread(self._read)
        servers: dict[str, dict] = {}
        for creator in sorted({v.creator for v in views}):
            try:
                model = await hub.call(
                    "GET", f"users/{quote(creator, safe='')}?include_stopped_servers=1")
                servers[creator] = (model or {}).get("servers") or {}
            except HTTPClientError as e:
                self.log.warning("serving: the hub's servers of %s: %s", creator, e)
        plans, work = [], []
        for v in views:
            if v.creator not in servers:
                continue
            replicas = replicas_of(v, servers[v.creator])
            plan = replicaplan.plan(v.name, v.id, v.desired, replicas, v.terminating, v.failure)
            serving = {r.name: target_of(servers[v.creator].get(r.name)) for r in replicas
                       if r.state == "serving"}
            plans.append(plan)
            work.append((v, plan, serving, self._act(hub, v, plan)))
        failures = await asyncio.gather(*(w[3] for w in work))
        await asyncio.to_thread(self._write, [(v, p, s, f) for (v, p, s, _), f
                                              in zip(work, failures)], clock())
        return plans

    async def _act(self, hub, view: View, plan: replicaplan.Plan) -> str:
        """Carry out the plan's actions; why a start failed ("" when none did)."""
        results = await asyncio.gather(*(self._one(hub, view, a) for a in plan.actions))
        return next((r for r in results if r), "")

    async def _one(self, hub, view: View, action: replicaplan.Action) -> str:
        path = f"users/{quote(view.creator, safe='')}/servers/{quote(action.name, safe='')}"
        if action.kind in ("stop", "replace"):
            try:
                await hub.call("DELETE", path, {"remove": action.kind == "stop"})
            except HTTPClientError as e:
                if e.code not in (400, 404):  # stopped or gone already
                    self.log.warning("serving: stopping %s of %s: %s", action.name,
                                     view.creator, hub_message(e))
                    return ""
            if action.kind == "stop":
                self.log.info("serving: endpoint %s: stopped replica %s", view.name, action.name)
                return ""
        try:
            await hub.call("POST", path, {"user_options": view.options})
        except HTTPClientError as e:
            message = hub_message(e)
            if e.code == 400 and ("already running" in message or "pending" in message):
                return ""  # the hub is not done with it: the next pass sees
            self.log.warning("serving: endpoint %s: replica %s did not start: %s",
                             view.name, action.name, message)
            return f"a replica failed to start: {message}"
        self.log.info("serving: endpoint %s: %s replica %s", view.name,
                      "replaced" if action.kind == "replace" else "started", action.name)
        return ""
