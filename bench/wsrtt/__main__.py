"""Websocket round trip to a kernel through the proxy: isolated against host.

    python -m bench.wsrtt [--messages 300] [--image hubgrid/base:latest]
                          [--docker-url unix:///var/run/docker.sock] [--rounds 1]
                          [--kinds hubgrid,hubgrid-host]

For each kind, in the same run: a real hub with hubgrid's Docker spawner
(``hubgrid``: isolated, the proxy reaches the server on its Unix socket;
``hubgrid-host``: ``isolated = False``, host networking), one user's server,
one kernel. Through the hub's proxy, a websocket to the kernel's channels
sends ``--messages`` execute requests one after the other (``pass``) and
times each until its ``execute_reply``; an HTTP GET of the server's
``api/status`` is timed as many times. Prints p50/p99 of both per kind and
the ratio isolated/host of the medians (target <= 1.1). Figures:
docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

from bench.hubproc import launch_hub, stop_hub
from bench.spawn.__main__ import HUBGRID_OPTIONS, _prepare, _spawn_and_wait, _stop_all

KINDS = ("hubgrid", "hubgrid-host")


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def _execute(session: str, code: str) -> tuple[str, str]:
    msg_id = uuid.uuid4().hex
    return msg_id, json.dumps({
        "header": {"msg_id": msg_id, "username": "bench", "session": session,
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}})


async def measure(base: str, token: str, messages: int) -> tuple[list[float], list[float]]:
    """(websocket execute round trips, HTTP GET round trips) in ms, against
    the server at ``base`` (``http://proxy/user/<name>/``)."""
    auth = {"Authorization": f"token {token}"}
    http = AsyncHTTPClient(force_instance=True)
    try:
        r = await http.fetch(HTTPRequest(base + "api/kernels", method="POST", body="{}",
                                         headers=auth, request_timeout=120))
        kernel = json.loads(r.body)["id"]
        ws = await websocket_connect(HTTPRequest(
            base.replace("http://", "ws://") + f"api/kernels/{kernel}/channels",
            headers=auth, request_timeout=120))
        session = uuid.uuid4().hex
        rtts = []
        for i in range(messages + 20):  # the first 20 warm the kernel up
            msg_id, body = _execute(session, "pass")
            t0 = time.perf_counter()
            await ws.write_message(body)
            while True:
                raw = await asyncio.wait_for(ws.read_message(), 60)
                if raw is None:
                    raise RuntimeError("the kernel's websocket closed")
                m = json.loads(raw)
                if m.get("msg_type") == "execute_reply" and \
                        m.get("parent_header", {}).get("msg_id") == msg_id:
                    break
            if i >= 20:
                rtts.append((time.perf_counter() - t0) * 1000)
        ws.close()
        gets = []
        for i in range(messages + 20):
            t0 = time.perf_counter()
            await http.fetch(HTTPRequest(base + "api/status", headers=auth))
            if i >= 20:
                gets.append((time.perf_counter() - t0) * 1000)
        await http.fetch(HTTPRequest(base + f"api/kernels/{kernel}", method="DELETE",
                                     headers=auth))
        return rtts, gets
    finally:
        http.close()


def run_one(kind: str, args, workdir: Path) -> tuple[list[float], list[float]]:
    state = workdir / f"{kind}-{uuid.uuid4().hex[:6]}"
    state.mkdir()
    config = (f"c.HubgridDockerSpawner.image = {args.image!r}\n"
              f"c.HubgridDockerSpawner.isolated = {kind == 'hubgrid'}\n"
              "c.Spawner.start_timeout = 300\nc.Spawner.http_timeout = 300\n")
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "docker", "HUBGRID_DOCKER_URL": args.docker_url},
                     config=config)
    user = f"w{kind[-1]}{uuid.uuid4().hex[:6]}"
    try:
        _prepare(hub, kind, [user], args.image, args.docker_url)
        _spawn_and_wait(hub, user, {"image": args.image, **HUBGRID_OPTIONS}, 300)
        try:
            return asyncio.run(measure(f"{hub.url}/user/{user}/", hub.token(user), args.messages))
        finally:
            _stop_all(hub, [user])
    finally:
        stop_hub(hub)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.wsrtt", description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--image", default="hubgrid/base:latest")
    ap.add_argument("--docker-url", default="unix:///var/run/docker.sock")
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or set(kinds) - set(KINDS):
        ap.error(f"--kinds: choose among {', '.join(KINDS)}")
    ws: dict[str, list[float]] = {k: [] for k in kinds}
    get: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="hubgrid-bench-wsrtt-") as tmp:
        for r in range(args.rounds):
            for kind in (kinds if r % 2 == 0 else kinds[::-1]):
                a, b = run_one(kind, args, Path(tmp))
                ws[kind] += a
                get[kind] += b
    out = {k: {"ws_p50": statistics.median(ws[k]), "ws_p99": _p(ws[k], 0.99),
               "get_p50": statistics.median(get[k]), "get_p99": _p(get[k], 0.99), "n": len(ws[k])}
           for k in kinds}
    print(f"through the proxy, {args.messages} messages x {args.rounds} round(s), "
          f"image {args.image}")
    for k in kinds:
        o = out[k]
        print(f"  {k:12s} kernel execute round trip p50 {o['ws_p50']:6.2f} ms  p99 "
              f"{o['ws_p99']:6.2f} ms   GET api/status p50 {o['get_p50']:6.2f} ms  p99 "
              f"{o['get_p99']:6.2f} ms   n={o['n']}")
    if set(KINDS) <= set(kinds):
        out["ratio ws"] = out["hubgrid"]["ws_p50"] / out["hubgrid-host"]["ws_p50"]
        out["ratio get"] = out["hubgrid"]["get_p50"] / out["hubgrid-host"]["get_p50"]
        print(f"  ratio isolated/host (p50): websocket {out['ratio ws']:.3f} (target <= 1.1), "
              f"HTTP {out['ratio get']:.3f}")
    return out


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
