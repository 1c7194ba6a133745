"""The route table the service hands the gateway, read into plain data: pure.

The service's ``GET serving/routes`` (internal token) answers::

    {"endpoints": [{"id", "name", "domain", "project", "public",
                    "disabled",           # why no call may reach it, or ""
                    "methods": ["GET", "POST"],   # what e/<id>/ passes on
                    "paths": ["/v1/models", "/v2/*"],   # and where (core/urlpaths.py)
                    "state", "state_reason", "replicas_wanted", "wake",
                    "models": ["served model name", ...],
                    "health": {"path", "interval", "max_retries", "expected_status"},
                    "replicas": [{"name", "target"}],   # "unix:/path" or "host:port"
                    "tokens": [{"id", "sha256", "expires_at"}]}]}

Tokens are listed while active only (a revoked one is gone); ``sha256`` is
the hex digest of the secret, as the service stores it. ``disabled`` says
why an endpoint takes no call at all (its domain, project or creator is
deactivated); ``methods`` are the HTTP methods its own URL passes on
(``GET`` and ``POST`` where the service says nothing), ``paths`` the
paths (the OpenAI routes and the probe's path where it says nothing).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from quota_service.core import urlpaths

from .haproxycfg import Health, Replica, Route


#: what an endpoint's own URL passes on when its definition declares nothing
DEFAULT_METHODS = frozenset({"GET", "POST"})


@dataclass(frozen=True)
class Token:
    id: str
    endpoint_id: str
    expires_at: dt.datetime


@dataclass(frozen=True)
class Endpoint:
    id: str
    name: str
    domain: str
    project: str
    public: bool
    models: tuple[str, ...]
    route: Route
    state: str = "running"
    state_reason: str = ""
    wanted: int = 1  # the replicas it asks for
    wake: bool = False  # a call may start it from zero (gateway/coldstart.py)
    disabled: str = ""  # why it takes no call (a deactivated domain, project or creator)
    methods: frozenset[str] = DEFAULT_METHODS  # what ``e/<id>/`` passes on
    paths: tuple[str, ...] = urlpaths.DEFAULT_PATHS  # and where (urlpaths.allows)


@dataclass(frozen=True)
class Table:
    endpoints: dict[str, Endpoint]
    tokens: dict[str, Token]  # sha256 hex -> token

    @property
    def routes(self) -> list[Route]:
        return [e.route for e in self.endpoints.values()]


EMPTY = Table({}, {})


def _time(text: str) -> dt.datetime:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def read(doc: dict) -> Table:
    """The table in ``doc``; ValueError (KeyError, TypeError) when malformed."""
    endpoints, tokens = {}, {}
    for e in doc["endpoints"]:
        h = e.get("health") or {}
        health = Health(path=str(h.get("path") or "/health"),
                        interval_s=max(1, int(h.get("interval") or 10)),
                        max_retries=max(1, int(h.get("max_retries") or 3)),
                        expected_status=int(h.get("expected_status") or 200))
        route = Route(str(e["id"]), tuple(Replica(str(r["name"]), str(r["target"]))
                                          for r in e.get("replicas") or ()), health)
        endpoints[route.endpoint_id] = Endpoint(
            id=route.endpoint_id, name=str(e["name"]), domain=str(e["domain"]),
            project=str(e["project"]), public=bool(e.get("public")),
            models=tuple(str(m) for m in e.get("models") or ()), route=route,
            state=str(e.get("state") or "running"), state_reason=str(e.get("state_reason") or ""),
            wanted=int(e.get("replicas_wanted", 1)), wake=bool(e.get("wake")),
            disabled=str(e.get("disabled") or ""),
            methods=frozenset(str(m).upper() for m in e["methods"]) if e.get("methods")
            else DEFAULT_METHODS,
            paths=tuple(str(p) for p in e["paths"]) if e.get("paths")
            else urlpaths.declared(None, health.path))
        for t in e.get("tokens") or ():
            tokens[str(t["sha256"])] = Token(str(t["id"]), route.endpoint_id,
                                            _time(str(t["expires_at"])))
    return Table(endpoints, tokens)
