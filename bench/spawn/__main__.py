"""Spawn latency: hubgrid's Docker spawner against stock DockerSpawner.

    python -m bench.spawn [--users 10] [--concurrency 5] [--image hubgrid/base:latest]
                          [--docker-url unix:///var/run/docker.sock] [--rounds 1]
                          [--kinds hubgrid,hubgrid-host,stock] [--settle 0]

Kinds: ``hubgrid``, isolated sessions (a network of their own, reached on
a Unix socket, the default); ``hubgrid-host``, the same spawner with
``isolated = False`` (host networking, sessions not isolated); ``stock``.

For each spawner, in the same run and on the same image, starts a real hub
(jupyterhub_config.py with HUBGRID_SPAWNER=docker), logs ``--users`` users
in, waits ``--settle`` seconds (0: none), then starts their servers through
the hub's REST API at ``--concurrency`` and times each from the start
request to ``ready``. Both spawners give a
session the same limits (2 cpu, 1 GiB; hubgrid's through an allocation on a
declared node big enough that nothing waits). The stock spawner is
DockerSpawner with the settings host networking needs here
(ENVIRONMENT.md). Rounds alternate the order. Prints the medians and p90 of
both and the ratio hubgrid/stock (target <= 1.05), and each spawn split in
two from the hub's log: until the container is started (the hub's steps,
hubgrid's admission, the Docker calls) and from there to ready (the image's
start and the hub finding the server up). Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from bench.hubproc import Hub, launch_hub, stop_hub
from bench.spawn import cpu

STOCK_CONFIG = """
from dockerspawner import DockerSpawner
from jupyterhub.utils import random_port


class StockHostNetworkDockerSpawner(DockerSpawner):
    # the two changes host networking needs (ENVIRONMENT.md)
    async def start(self):
        self.port = random_port()
        return await super().start()

    async def get_ip_and_port(self):
        return "127.0.0.1", self.port


c.JupyterHub.spawner_class = StockHostNetworkDockerSpawner
c.DockerSpawner.image = {image!r}
c.DockerSpawner.network_name = "host"
c.DockerSpawner.use_internal_ip = True
c.DockerSpawner.ip = "127.0.0.1"
c.DockerSpawner.pull_policy = "never"
c.DockerSpawner.remove = True
c.DockerSpawner.cpu_limit = 2.0
c.DockerSpawner.mem_limit = "1G"
c.DockerSpawner.client_kwargs = {{"base_url": {url!r}}}
"""

HUBGRID_OPTIONS = {"resource_group": "bench", "cpu": "2", "mem": "1G"}


def _ok(r: requests.Response, *codes: int) -> dict:
    if r.status_code not in codes:
        raise RuntimeError(f"{r.request.method} {r.url}: {r.status_code} {r.text[:300]}")
    return r.json() if r.content else {}


def _prepare(hub: Hub, kind: str, users: list[str], image: str, url: str) -> None:
    for u in users:
        if hub.login(u).status_code != 302:
            raise RuntimeError(f"login of {u} failed")
    if kind != "stock":
        _ok(hub.call("POST", "resource-groups", "admin", json={"name": "bench"}), 201)
        _ok(hub.call("PUT", "resource-groups/bench/grants", "admin", json={"domain": "default"}), 201)
        _ok(hub.call("POST", "nodes", "admin", json={
            "name": "bench-node", "resource_group": "bench", "backend_url": url,
            "capacity": {"cpu": "1000", "mem": "4096G"}}), 201)
        _ok(hub.call("POST", "images/scan", "admin"), 200)


def _spawn_and_wait(hub: Hub, user: str, options: dict, timeout: float,
                    docker_url: str | None = None) -> tuple[float, float | None]:
    """(seconds until ready, CPU seconds its container used until then:
    read from the engine at ``docker_url``, None without one)."""
    t0 = time.perf_counter()
    r = hub.hub_call("POST", f"users/{user}/server", json={"user_options": options})
    if r.status_code not in (201, 202):
        raise RuntimeError(f"spawn of {user}: {r.status_code} {r.text[:300]}")
    while time.perf_counter() - t0 < timeout:
        server = hub.hub_call("GET", f"users/{user}").json()["servers"].get("")
        if server and server["ready"]:
            took = time.perf_counter() - t0
            container = cpu.container_id(docker_url, "-" + user) if docker_url else None
            return took, cpu.container_seconds(container) if container else None
        time.sleep(0.1)
    raise RuntimeError(f"{user}'s server was not ready after {timeout}s")


def _stop_all(hub: Hub, users: list[str]) -> None:
    for u in users:
        hub.hub_call("DELETE", f"users/{u}/server")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(not hub.hub_call("GET", f"users/{u}").json()["servers"] for u in users):
            return
        time.sleep(0.5)
    raise RuntimeError("servers did not stop")


#: INFO lines of the hub's log: a container started, a server ready
STARTING = re.compile(r"^\[I (\S+ \S+) .*Starting container (\S+) ")
TOOK = re.compile(r"^\[I (\S+ \S+) .*User (\S+) took ([0-9.]+) seconds to start")


def phases(log: str, users: list[str]) -> list[tuple[float, float]]:
    """Per ready spawn in the hub's ``log``: (seconds until its container was
    started, seconds from there to ready)."""
    def when(stamp: str) -> dt.datetime:
        return dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f")

    started: dict[str, dt.datetime] = {}
    out = []
    for line in log.splitlines():
        if m := STARTING.match(line):
            user = next((u for u in users if m.group(2).endswith("-" + u)), None)
            if user:
                started[user] = when(m.group(1))
        elif (m := TOOK.match(line)) and m.group(2) in started:
            ready, took = when(m.group(1)), float(m.group(3))
            before = took - (ready - started.pop(m.group(2))).total_seconds()
            out.append((before, took - before))
    return out


def run_one(kind: str, args, workdir: Path) -> tuple[list[float], list[tuple[float, float]], dict]:
    state = workdir / f"{kind}-{uuid.uuid4().hex[:6]}"
    state.mkdir()
    config = STOCK_CONFIG.format(image=args.image, url=args.docker_url) if kind == "stock" else (
        f"c.HubgridDockerSpawner.image = {args.image!r}\n"
        f"c.HubgridDockerSpawner.isolated = {kind == 'hubgrid'}\n")
    if args.sandbox_pool is not None and kind != "stock":
        config += f"c.HubgridDockerSpawner.sandbox_pool_size = {args.sandbox_pool}\n"
    config += "c.Spawner.start_timeout = 300\nc.Spawner.http_timeout = 300\n"
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "docker", "HUBGRID_DOCKER_URL": args.docker_url},
                     config=config)
    users = [f"b{kind[0]}{uuid.uuid4().hex[:6]}{i}" for i in range(args.users)]
    try:
        _prepare(hub, kind, users, args.image, args.docker_url)
        time.sleep(args.settle)  # (a person between logging in and the spawn form)
        options = {"image": args.image, **HUBGRID_OPTIONS} if kind != "stock" else {}
        hub0, engines0 = cpu.group_seconds(hub.process.pid), cpu.daemons_seconds()
        with ThreadPoolExecutor(args.concurrency) as pool:
            done = list(pool.map(lambda u: _spawn_and_wait(hub, u, options, 300, args.docker_url),
                                 users))
        usage = {"container": [c for _, c in done if c is not None],
                 "hub": cpu.group_seconds(hub.process.pid) - hub0,
                 "engines": cpu.daemons_seconds() - engines0}
        _stop_all(hub, users)
        return ([t for t, _ in done], phases((state / "hub.log").read_text(errors="replace"), users),
                usage)
    finally:
        stop_hub(hub)


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.spawn", description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--image", default="hubgrid/base:latest")
    ap.add_argument("--docker-url", default="unix:///var/run/docker.sock")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds between the users' logins and the burst of starts "
                         "(isolated sessions' network sandbox pool fills at login)")
    ap.add_argument("--sandbox-pool", type=int, default=None,
                    help="isolated sessions' network sandbox pool size (default: the spawner's)")
    ap.add_argument("--kinds", default="hubgrid,hubgrid-host,stock",
                    help="comma-separated: hubgrid (isolated), hubgrid-host, stock")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - {"hubgrid", "hubgrid-host", "stock"}
    if unknown or not kinds:
        ap.error(f"--kinds: unknown {', '.join(sorted(unknown)) or '(none given)'}")
    results: dict[str, list[float]] = {k: [] for k in kinds}
    split: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    usage: dict[str, dict] = {k: {"container": [], "hub": 0.0, "engines": 0.0} for k in kinds}
    with tempfile.TemporaryDirectory(prefix="hubgrid-bench-spawn-") as tmp:
        for r in range(args.rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            for kind in order:
                times, parts, used = run_one(kind, args, Path(tmp))
                results[kind] += times
                split[kind] += parts
                usage[kind]["container"] += used["container"]
                usage[kind]["hub"] += used["hub"]
                usage[kind]["engines"] += used["engines"]
    out = {k: {"median": statistics.median(v), "p90": _p(v, 0.9), "n": len(v)}
           for k, v in results.items()}
    for k, parts in split.items():
        if parts:
            out[k]["to_container"] = statistics.median(b for b, _ in parts)
            out[k]["container_to_ready"] = statistics.median(a for _, a in parts)
    print(f"spawn to ready, {args.users} users at concurrency {args.concurrency}, "
          f"{args.rounds} round(s), image {args.image}, {args.settle:g} s after the logins")
    for k in kinds:
        print(f"  {k:12s} median {out[k]['median']:6.2f} s   p90 {out[k]['p90']:6.2f} s   "
              f"n={out[k]['n']}")
    for k in kinds:
        if "to_container" in out[k]:
            print(f"  {k:12s} (hub's log, medians) until the container starts "
                  f"{out[k]['to_container']:5.2f} s, from there to ready "
                  f"{out[k]['container_to_ready']:6.2f} s")
    for k in kinds:
        n, used = len(results[k]), usage[k]
        out[k]["cpu"] = {
            "container_median": statistics.median(used["container"]) if used["container"] else None,
            "hub_per_spawn": used["hub"] / n, "engines_per_spawn": used["engines"] / n}
        c = out[k]["cpu"]["container_median"]
        print(f"  {k:12s} CPU s: container until ready "
              f"{'-' if c is None else f'{c:5.2f}'} (median), hub's processes "
              f"{out[k]['cpu']['hub_per_spawn']:5.2f} and Docker's daemons "
              f"{out[k]['cpu']['engines_per_spawn']:5.2f} per spawn (the burst, while it ran)")
    for a, b, target in (("hubgrid", "stock", "1.05"), ("hubgrid", "hubgrid-host", "1.05"),
                         ("hubgrid-host", "stock", "1.05")):
        if a in out and b in out:
            out[f"ratio {a}/{b}"] = out[a]["median"] / out[b]["median"]
            print(f"  ratio {a}/{b} (median): {out[f'ratio {a}/{b}']:.3f}  (target <= {target})")
    return out


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
