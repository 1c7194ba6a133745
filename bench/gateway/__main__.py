"""What the serving path adds to a call: direct to a replica, through the
balancer, through the gateway, and through the hub's proxy in front of it.

    python -m bench.gateway [--calls 500] [--replicas 2] [--stream]

Real parts: ``--replicas`` chat stand-in servers (images/inference, the
replica's own server, on Unix sockets as replicas listen), haproxy as the
gateway configures it, the gateway's tornado app (a child process, with a
fixed route table: bench/gateway/serve.py) and configurable-http-proxy
routing ``/services/hubgrid-gateway/`` to it, as the hub's proxy does. One
client (httpx, keep-alive) makes ``--calls`` chat completions one after
the other on each path and times each to the end of its answer
(``--stream``: streamed answers). Prints p50/p99 per path and what each
hop adds to the direct call's p50. Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
PATHS = ("direct", "balancer", "gateway", "hub proxy")
EP = "b" * 32
SECRET = "bench-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up")
        time.sleep(0.02)


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def time_calls(client: httpx.Client, url: str, model: str, calls: int, stream: bool
               ) -> list[float]:
    body = {"model": model, "messages": [{"role": "user", "content": "how long is a call"}],
            "stream": stream}
    out = []
    for i in range(calls + 5):
        t = time.perf_counter()
        with client.stream("POST", url, json=body) as r:
            for _ in r.iter_raw():
                pass
            if r.status_code != 200:
                raise RuntimeError(f"{url}: {r.status_code}")
        if i >= 5:  # the first calls warm connections up
            out.append(time.perf_counter() - t)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.gateway", description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--stream", action="store_true")
    args = ap.parse_args(argv)
    if shutil.which("configurable-http-proxy") is None:
        ap.error("configurable-http-proxy is not on PATH (node_modules/.bin)")
    procs: list[subprocess.Popen] = []
    tmp = Path(tempfile.mkdtemp(prefix="hg-bgw-", dir="/tmp"))
    try:
        env = {**os.environ, "PYTHONPATH": f"{REPO / 'images' / 'inference'}:{REPO}"}
        socks = []
        for i in range(args.replicas):
            sock = tmp / f"r{i}.sock"
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "hubgrid_inference.echochat", "--model-name", "echo",
                 "--port", str(free_port()), "--unix", str(sock)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            socks.append(sock)
        for sock in socks:
            wait_for(sock.exists, "a replica")
        expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).isoformat()
        table = {"endpoints": [{
            "id": EP, "name": "chat", "domain": "d", "project": "p", "public": False,
            "models": ["echo"], "health": {"path": "/health", "interval": 10},
            "replicas": [{"name": f"r{i}", "target": f"unix:{s}"} for i, s in enumerate(socks)],
            "tokens": [{"id": "t", "sha256": hashlib.sha256(SECRET.encode()).hexdigest(),
                        "expires_at": expires}]}]}
        (tmp / "table.json").write_text(json.dumps(table))
        gw_port, chp_port, chp_api = free_port(), free_port(), free_port()
        gw = subprocess.Popen([sys.executable, "-m", "bench.gateway.serve", str(gw_port),
                               str(tmp / "run"), str(tmp / "table.json")],
                              env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                              text=True)
        procs.append(gw)
        if gw.stdout.readline().strip() != "ready":
            raise RuntimeError("the gateway did not start")
        chp = subprocess.Popen(
            ["configurable-http-proxy", "--ip", "127.0.0.1", "--port", str(chp_port),
             "--api-ip", "127.0.0.1", "--api-port", str(chp_api),
             "--default-target", f"http://127.0.0.1:{gw_port}", "--log-level", "error"],
            env={**os.environ, "CONFIGPROXY_AUTH_TOKEN": "bench"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(chp)

        def chp_up():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", chp_port)) == 0
        wait_for(chp_up, "configurable-http-proxy")

        auth = {"Authorization": f"Bearer {SECRET}"}
        prefix = "/services/hubgrid-gateway/v1/chat/completions"
        clients = {
            # the replica's own model name; through the gateway, the endpoint's
            "direct": (httpx.Client(transport=httpx.HTTPTransport(uds=str(socks[0]))),
                       "http://replica/v1/chat/completions", "echo"),
            "balancer": (httpx.Client(transport=httpx.HTTPTransport(
                uds=str(tmp / "run" / f"ep-{EP}.sock"))), "http://replica/v1/chat/completions",
                "echo"),
            "gateway": (httpx.Client(headers=auth), f"http://127.0.0.1:{gw_port}{prefix}", "chat"),
            "hub proxy": (httpx.Client(headers=auth), f"http://127.0.0.1:{chp_port}{prefix}",
                          "chat"),
        }
        out: dict = {}
        for name in PATHS:
            client, url, model = clients[name]
            with client:
                times = time_calls(client, url, model, args.calls, args.stream)
            out[name] = {"n": len(times), "p50": statistics.median(times),
                         "p99": percentile(times, 0.99)}
        base = out["direct"]["p50"]
        print(f"bench.gateway: {args.calls} chat completions per path, one after the other, "
              f"{args.replicas} replicas{', streamed' if args.stream else ''}")
        print(f"{'path':<10} {'p50 ms':>8} {'p99 ms':>8} {'added p50 ms':>13}")
        for name in PATHS:
            r = out[name]
            r["added_p50"] = r["p50"] - base
            print(f"{name:<10} {r['p50'] * 1e3:8.2f} {r['p99'] * 1e3:8.2f} "
                  f"{r['added_p50'] * 1e3:13.2f}")
        return out
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
