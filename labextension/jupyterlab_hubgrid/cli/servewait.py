"""``--wait`` of ``hubgrid serve create``, ``scale`` and ``store deploy``:
follow the endpoint until as many replicas serve as it asks for (running;
none left for 0) (exit 0), it failed (exit 1, with the reason), or
``--timeout`` passed (exit 1)."""

from __future__ import annotations

import argparse
import time

from .base import EXIT_OK, EXIT_REFUSED
from .output import safe

#: how often the endpoint is read again
INTERVAL = 1.0
TIMEOUT = 600.0


def add_wait_options(p) -> None:
    p.add_argument("--wait", action="store_true",
                   help="wait until every replica serves (exit 0), or it fails (exit 1)")
    p.add_argument("--timeout", type=float, default=TIMEOUT,
                   help="seconds --wait waits at most (default: %(default)g; exit 1 after)")
    p.add_argument("--interval", type=float, default=INTERVAL, help=argparse.SUPPRESS)


def progress(e: dict) -> str:
    return (f"endpoint {safe(e.get('name'))}: {safe(e.get('state'))}, "
            f"{e.get('running_replicas', 0)} of {e.get('replicas')} replica(s) serving")


def follow(ctx, endpoint_id: str, args) -> tuple[dict, int, str]:
    """(the endpoint as last read, the exit code, a line saying how it ended)."""
    deadline = time.monotonic() + args.timeout
    said = None
    while True:
        e = ctx.client.endpoint(endpoint_id)
        state = e.get("state")
        if state == "failed":
            return e, EXIT_REFUSED, (f"endpoint {safe(e['name'])} failed: "
                                     f"{safe(e.get('state_reason'))}")
        serving, wanted = e.get("running_replicas", 0), e.get("replicas", 0)
        if serving == wanted and (state == "running" or wanted == 0):
            return e, EXIT_OK, progress(e)
        if state == "terminating":
            return e, EXIT_REFUSED, f"endpoint {safe(e['name'])} is being deleted"
        line = progress(e)
        if line != said and not ctx.json:
            ctx.note(line)
            said = line
        if time.monotonic() >= deadline:
            return e, EXIT_REFUSED, (f"{line} after {args.timeout:g} s: still waiting "
                                     "('hubgrid serve show' says why)")
        time.sleep(args.interval)


def wait_then_emit(ctx, e: dict, args, emit) -> int:
    """``emit(endpoint)`` now, or with --wait: as it is once it serves or
    failed (--json: the endpoint then; else a line more)."""
    if not args.wait:
        emit(e)
        return EXIT_OK
    if not ctx.json:
        emit(e)
    final, status, line = follow(ctx, e["id"], args)
    if ctx.json:
        emit({**final, "gateway": e.get("gateway")} if "gateway" in e else final)
    else:
        ctx.print(line)
    return status
