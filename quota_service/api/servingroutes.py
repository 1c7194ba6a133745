"""The gateway's side of the service (internal token only): the route table
it serves and the reports it sends back (serving/routes.py, serving/health.py)."""

from __future__ import annotations

from pydantic import Field, StrictBool, StrictInt, StrictStr

from ..core.schemas import Body, parse
from ..serving import routes, scaling
from .base import APIHandler


class ReplicaReport(Body):
    endpoint: StrictStr = Field(max_length=32)
    name: StrictStr = Field(max_length=255)
    up: StrictBool
    status: StrictStr = Field(max_length=64)
    check: StrictStr = Field(default="", max_length=64)
    detail: StrictStr = Field(default="", max_length=1024)
    down_transitions: StrictInt = Field(default=0, ge=0)
    calls: StrictInt = Field(default=0, ge=0)
    #: calls it is answering now
    in_flight: StrictInt = Field(default=0, ge=0)


class CallsReport(Body):
    endpoint: StrictStr = Field(max_length=32)
    code: StrictStr = Field(pattern=r"^[1-5]xx$")
    calls: StrictInt = Field(ge=0)
    seconds: float = Field(ge=0)


class GatewayReport(Body):
    """What the gateway saw since its last report."""

    replicas: list[ReplicaReport] = Field(default_factory=list, max_length=100_000)
    calls: list[CallsReport] = Field(default_factory=list, max_length=100_000)


class WakeBody(Body):
    endpoint: StrictStr = Field(max_length=32)


class RoutesHandler(APIHandler):
    """The endpoints the gateway serves, their routed replicas and tokens' hashes."""

    caller_kind = "internal"

    async def get(self):
        """The route table (serving/routes.py)."""
        now = self.now()
        self.finish_json(await self.db(lambda s: routes.table(s, now)))


class ReportHandler(APIHandler):
    """The gateway's view of each replica's health, and the calls it passed on."""

    caller_kind = "internal"
    bodies = {"post": GatewayReport}
    success = {"post": "204"}

    async def post(self):
        """Record a report (kept in memory: serving/health.py)."""
        report = parse(GatewayReport, self.json_body())
        now, reports = self.now(), self.serving_reports
        reports.record(report.model_dump(), now)
        # autoscaling judges what was just measured (serving/scaling.py)
        measures = reports.measures()
        if await self.db(lambda s: scaling.apply(s, measures, now)):
            self.serve_soon()
        self.no_content()


class WakeHandler(APIHandler):
    """A call came to an endpoint scaled to zero: start one replica (a cold start)."""

    caller_kind = "internal"
    bodies = {"post": WakeBody}
    success = {"post": "200"}

    async def post(self):
        """Start one replica of an endpoint its rules scaled to zero (scaling.wake)."""
        body = parse(WakeBody, self.json_body())
        now = self.now()
        out = await self.db(lambda s: scaling.wake(s, body.endpoint, now))
        if out["woken"]:
            self.serve_soon()
        self.finish_json(out)
