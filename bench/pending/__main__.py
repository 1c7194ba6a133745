"""The hubgrid service's CPU per pending session, and how fast a burst of
new requests is told its place in line, through its real HTTP API.

    python -m bench.pending [--sizes 50,200,1000] [--wait 30] [--window 30]
                            [--mode long-poll|poll] [--burst N]
                            [--db sqlite|postgres]

Starts the hubgrid service (the real ``python -m quota_service``, no hub) on
a loopback port against a fresh SQLite database, with one node whose single
CPU a first session takes. Then, for each size N, it queues requests (the
hub's ``POST internal/allocations``) until N are pending, each with a client
that waits for it the way a pending spawner does: ``--mode long-poll`` (the
default) keeps ``GET internal/allocations/{id}?wait=--wait`` open and asks
again at once when answered; ``--mode poll`` asks every second without
``wait`` (how spawners waited before). After a settling pause it measures
the service process's CPU time over ``--window`` seconds and prints, per N:
the answers the clients got, the service's CPU as a percentage of one core,
and that per pending session.

``--burst N``: after each size's window, N more requests join the queue at
once (all N POSTs sent together, as when a class presses Start on a full
cluster); it prints the p50, p99 and slowest time to each one's answer
(202 with its place in line) and the service's CPU seconds over the burst
(steadier than times on a shared machine), then their waiters join the
others and the next size grows from there. ``--db postgres`` runs the service on a fresh
database of the PostgreSQL server of ``--postgres-url`` (default
$HUBGRID_TEST_POSTGRES_URL), dropped afterwards. Figures only: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import psutil
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from bench.hubproc import free_port, wait_for_service

TOKEN = "bench-pending-internal-token"


def prepare(db_url: str) -> None:
    """Schema, the user ``bench`` (in the default project) and a one-CPU node."""
    os.environ.pop("JUPYTERHUB_API_TOKEN", None)
    from quota_service.app import HubgridService

    svc = HubgridService(db_url=db_url, bootstrap_superadmin="bench", register_local_node=False,
                         log_level="WARN",
                         nodes=[{"name": "bench-node", "resource_group": "default",
                                 "capacity": {"cpu": "1", "mem": "1T"}}])
    svc.initialize([])
    svc.engine.dispose()


class Clients:
    """N clients waiting for their pending requests, as spawners do."""

    def __init__(self, api: str, mode: str, wait: float):
        self.api, self.mode, self.wait = api, mode, wait
        self.http = AsyncHTTPClient(force_instance=True, max_clients=100_000)
        self.headers = {"Authorization": f"hubgrid-internal {TOKEN}"}
        self.answers = 0
        self.errors = 0
        self.tasks: list[asyncio.Task] = []
        self.stopping = False

    async def request(self) -> str:
        r = await self.http.fetch(self.api + "internal/allocations", method="POST",
                                  headers=self.headers, raise_error=False, body=(
            '{"user": "bench", "project": "default", "resource_group": "default", '
            '"slots": {"cpu": "1"}}'))
        if r.code not in (201, 202):
            raise SystemExit(f"POST internal/allocations: {r.code} {r.body[:300]!r}")
        model = json.loads(r.body)
        if model["state"] == "pending" and not (model.get("queue") or {}).get("position"):
            raise SystemExit(f"POST internal/allocations: pending without a place: {model}")
        return model["id"]

    async def burst(self, n: int) -> list[float]:
        """N requests sent at once; the seconds each took to be answered.
        Their waiters then join the others."""

        async def one() -> tuple[str, float]:
            t0 = time.monotonic()
            alloc_id = await self.request()
            return alloc_id, time.monotonic() - t0

        done = await asyncio.gather(*(one() for _ in range(n)))
        self.tasks.extend(asyncio.ensure_future(self.waiter(i)) for i, _ in done)
        return sorted(t for _, t in done)

    async def waiter(self, alloc_id: str) -> None:
        url = self.api + "internal/allocations/" + alloc_id
        if self.mode == "long-poll":
            url += f"?wait={self.wait:g}"
        while not self.stopping:
            try:
                await self.http.fetch(url, headers=self.headers,
                                      request_timeout=self.wait + 30)
                self.answers += 1
            except (HTTPClientError, OSError):
                self.errors += 1
                await asyncio.sleep(1)
            if self.mode == "poll":
                await asyncio.sleep(1)

    async def grow_to(self, n: int) -> None:
        sem = asyncio.Semaphore(16)

        async def one():
            async with sem:
                alloc_id = await self.request()
            self.tasks.append(asyncio.ensure_future(self.waiter(alloc_id)))

        await asyncio.gather(*(one() for _ in range(n - len(self.tasks))))

    async def close(self) -> None:
        """Let every long-poll end (within ``wait``) before closing: a fetch
        cancelled in flight leaves its connection open (tornado's simple
        client does not close it)."""
        self.stopping = True
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=self.wait + 5)
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.http.close()


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def quantile(sorted_times: list[float], q: float) -> float:
    """The ``q`` quantile of sorted times (nearest rank)."""
    return sorted_times[min(len(sorted_times) - 1, max(0, round(q * len(sorted_times)) - 1))]


async def measure(api: str, pid: int, sizes: list[int], mode: str, wait: float,
                  window: float, settle: float, burst: int = 0) -> list[dict]:
    proc = psutil.Process(pid)
    clients = Clients(api, mode, wait)
    rows = []
    try:
        await clients.request()  # the session that fills the node
        for n in sizes:
            await clients.grow_to(n)
            await asyncio.sleep(settle)
            answers, errors = clients.answers, clients.errors
            cpu0, t0 = cpu_seconds(proc), time.monotonic()
            await asyncio.sleep(window)
            cpu, elapsed = cpu_seconds(proc) - cpu0, time.monotonic() - t0
            percent = 100 * cpu / elapsed
            row = {"pending": len(clients.tasks), "answers": clients.answers - answers,
                   "errors": clients.errors - errors, "window_s": elapsed,
                   "cpu_percent": percent, "per_session": percent / len(clients.tasks)}
            if burst:
                cpu0 = cpu_seconds(proc)
                times = await clients.burst(burst)
                row.update(burst=burst, p50=quantile(times, 0.5), p99=quantile(times, 0.99),
                           slowest=times[-1], burst_cpu=cpu_seconds(proc) - cpu0)
            rows.append(row)
    finally:
        await clients.close()
    return rows


@contextmanager
def database(kind: str, tmp: Path, postgres_url: str | None) -> Iterator[str]:
    """A fresh database: SQLite in ``tmp``, or a new PostgreSQL database
    (dropped afterwards)."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'bench.sqlite'}"
        return
    if not postgres_url:
        raise SystemExit("--db postgres needs --postgres-url or $HUBGRID_TEST_POSTGRES_URL "
                         "(bash scripts/start-postgres.sh prints it)")
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    base = sa.engine.make_url(postgres_url)
    name = f"hubgrid_bench_pending_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def run(sizes: list[int], mode: str, wait: float, window: float, settle: float,
        burst: int = 0, db: str = "sqlite", postgres_url: str | None = None) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="hubgrid-bench-pending-"))
    with database(db, tmp, postgres_url) as db_url:
        return serve_and_measure(tmp, db_url, sizes, mode, wait, window, settle, burst)


def serve_and_measure(tmp: Path, db_url: str, sizes: list[int], mode: str, wait: float,
                      window: float, settle: float, burst: int) -> list[dict]:
    prepare(db_url)
    port = free_port()
    env = dict(os.environ, HUBGRID_DB_URL=db_url, HUBGRID_INTERNAL_TOKEN=TOKEN,
               PYTHONUNBUFFERED="1")
    env.pop("JUPYTERHUB_API_TOKEN", None)
    log = open(tmp / "service.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "quota_service",
         f"--HubgridService.service_url=http://127.0.0.1:{port}",
         "--HubgridService.register_local_node=False",
         "--HubgridService.scan_images_at_start=False",
         "--HubgridService.follow_docker_events=False",
         "--HubgridService.log_level=WARN"],
        env=env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    api = f"http://127.0.0.1:{port}/services/hubgrid/api/v1/"
    try:
        wait_for_service(api, proc, log=tmp / "service.log")
        return asyncio.run(measure(api, proc.pid, sizes, mode, wait, window, settle, burst))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pending",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="50,200,1000",
                    help="pending sessions to measure at, in increasing order")
    ap.add_argument("--wait", type=float, default=30.0, help="the long-poll's wait (s)")
    ap.add_argument("--window", type=float, default=30.0, help="seconds measured per size")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds between reaching a size and measuring")
    ap.add_argument("--mode", choices=["long-poll", "poll"], default="long-poll")
    ap.add_argument("--burst", type=int, default=0,
                    help="after each size's window, this many requests join at once "
                         "(0: none); prints the times to their answers")
    ap.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--postgres-url", default=os.environ.get("HUBGRID_TEST_POSTGRES_URL"))
    args = ap.parse_args(argv)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    rows = run(sizes, args.mode, args.wait, args.window, args.settle, args.burst, args.db,
               args.postgres_url)
    how = f"long-poll wait={args.wait:g} s" if args.mode == "long-poll" else "poll every 1 s"
    print(f"service CPU with N pending sessions, each waited for by a client ({how}); "
          f"{args.window:g} s windows; {args.db}")
    print(f"{'pending':>8} {'answers':>8} {'errors':>7} {'cpu % core':>11} "
          f"{'% per session':>14}")
    for r in rows:
        print(f"{r['pending']:8d} {r['answers']:8d} {r['errors']:7d} "
              f"{r['cpu_percent']:11.2f} {r['per_session']:14.4f}")
    if args.burst:
        print(f"{args.burst} requests joining N pending at once: seconds to each one's "
              f"answer (202 with its place in line)")
        print(f"{'pending':>8} {'joining':>8} {'p50 s':>8} {'p99 s':>8} {'slowest s':>10} "
              f"{'service CPU s':>14}")
        for r in rows:
            print(f"{r['pending']:8d} {r['burst']:8d} {r['p50']:8.3f} {r['p99']:8.3f} "
                  f"{r['slowest']:10.3f} {r['burst_cpu']:14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
