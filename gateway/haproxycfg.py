"""The balancer's configuration, from the route table: pure.

One haproxy frontend per endpoint, bound to a Unix socket the gateway
alone uses (``ep-<endpoint id>.sock`` in the run directory, mode 0600), and
one backend of the endpoint's replicas:

- ``balance leastconn``: a replica busy with a long (streamed) answer gets
  the next call last;
- active health checks as the model definition says (``health_check``:
  path, interval, max_retries, expected status), so a replica that stops
  answering its probe leaves the rotation after ``max_retries`` probes and
  comes back after one good one;
- passive checks (``observe layer4``, ``on-error mark-down``): a replica
  whose socket refuses a connection is out at once, and the call is
  dispatched again to another replica (``retries`` with ``redispatch``), so
  a killed replica costs no call, not even within one probe interval.

A replica is reached at its Unix socket (``unix:/path``) or at
``host:port``; an endpoint with no replica keeps its frontend (haproxy
answers 503, which the gateway turns into a clear message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: what haproxy accepts in a proxy or server name
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
_ID = re.compile(r"^[0-9a-f]{32}$")


class RouteError(ValueError):
    """A route the balancer cannot be configured with (a bug upstream)."""


@dataclass(frozen=True)
class Health:
    """An endpoint's probe, from its model definition's ``health_check``."""

    path: str = "/health"
    interval_s: int = 10
    max_retries: int = 3
    expected_status: int = 200


@dataclass(frozen=True)
class Replica:
    """One replica: its name (unique within its endpoint) and where it listens."""

    name: str
    target: str  # "unix:/abs/path.sock" or "host:port"


@dataclass(frozen=True)
class Route:
    endpoint_id: str
    replicas: tuple[Replica, ...] = ()
    health: Health = field(default_factory=Health)


def _address(target: str) -> str:
    if target.startswith("unix:"):
        path = target[len("unix:"):]
        if not path.startswith("/") or any(c.isspace() or c in "#'\"\\" for c in path):
            raise RouteError(f"bad socket path {path!r}")
        return "unix@" + path
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or not re.match(
            r"^[A-Za-z0-9.\-\[\]:]+$", host):
        raise RouteError(f"bad replica address {target!r}")
    return f"{host}:{port}"


def _path(p: str) -> str:
    if not p.startswith("/") or any(c.isspace() or c in "#'\"\\" for c in p):
        raise RouteError(f"bad health check path {p!r}")
    return p


def socket_name(endpoint_id: str) -> str:
    """The file name of an endpoint's frontend socket in the run directory."""
    if not _ID.match(endpoint_id):
        raise RouteError(f"bad endpoint id {endpoint_id!r}")
    return f"ep-{endpoint_id}.sock"


def render(routes: list[Route], run_dir: str) -> str:
    """haproxy's configuration for ``routes``; frontends' sockets and the
    admin socket live in ``run_dir``."""
    lines = [
        "# written by hubgrid's gateway (gateway/haproxycfg.py); do not edit",
        "global",
        # the listeners pass from the old worker to the new at a reload
        # (seamless): no connection queued on a frontend socket is dropped
        f"    stats socket {run_dir}/admin.sock mode 600 level admin expose-fd listeners",
        "    stats timeout 10s",
        "",
        "defaults",
        "    mode http",
        "    timeout connect 2s",
        "    timeout client 10m",
        "    timeout server 10m",
        "    timeout http-request 30s",
        "    timeout queue 30s",
        "    retries 2",
        "    option redispatch 1",
        # an endpoint with no replica in rotation: a JSON answer the gateway knows
        "    http-error status 503 content-type application/json hdr x-hubgrid-no-replica 1"
        " string '{\"error\": {\"message\": \"no replica of this endpoint is ready\","
        " \"type\": \"unavailable\", \"code\": \"no_replica\"}}'",
        "",
    ]
    seen = set()
    for r in sorted(routes, key=lambda r: r.endpoint_id):
        sock = socket_name(r.endpoint_id)
        if r.endpoint_id in seen:
            raise RouteError(f"endpoint {r.endpoint_id} twice")
        seen.add(r.endpoint_id)
        h = r.health
        if not (1 <= h.interval_s <= 3600 and 1 <= h.max_retries <= 100
                and 100 <= h.expected_status <= 599):
            raise RouteError(f"bad health check {h!r}")
        lines += [
            f"frontend fe_{r.endpoint_id}",
            f"    bind unix@{run_dir}/{sock} mode 600",
            f"    default_backend be_{r.endpoint_id}",
            "",
            f"backend be_{r.endpoint_id}",
            "    balance leastconn",
            "    option httpchk",
            f"    http-check send meth GET uri {_path(h.path)} ver HTTP/1.1 hdr Host replica",
            f"    http-check expect status {h.expected_status}",
            f"    default-server inter {h.interval_s}s fall {h.max_retries} rise 1"
            " observe layer4 error-limit 1 on-error mark-down",
        ]
        names = set()
        for rep in r.replicas:
            if not _NAME.match(rep.name) or rep.name in names:
                raise RouteError(f"bad or repeated replica name {rep.name!r}")
            names.add(rep.name)
            lines.append(f"    server {rep.name} {_address(rep.target)} check")
        lines.append("")
    return "\n".join(lines)
