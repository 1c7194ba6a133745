"""The Prometheus endpoint's answer time with N running sessions.

    python -m bench.metrics [--sessions 1000] [--ended 10000] [--pending 200]
                            [--scrapes 50] [--db sqlite|postgres|both]
                            [--postgres-url URL]

Fills a fresh database (SQLite, and PostgreSQL from ``--postgres-url`` or
$HUBGRID_TEST_POSTGRES_URL) with a cluster of 4 resource groups of 8 nodes
of 8 GPUs, 20 projects of 200 users, ``--sessions`` running sessions (whole
GPUs and shares), ``--ended`` sessions that ran and ended, ``--pending``
waiting ones with reasons and some reclaim events; starts the real service
(``python -m quota_service``, no hub) and scrapes ``GET api/v1/metrics`` as
a superadmin's keypair ``--scrapes`` times, one after the other. Prints,
per database, the answer time (p50, p95, max) and the size of the answer.
Figures only; the target is under 100 ms with 1,000 running sessions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests
import sqlalchemy as sa

from bench.admission.harness import postgres_database
from bench.hubproc import free_port, wait_for_service

GROUPS, NODES, GPUS, PROJECTS, USERS = 4, 8, 8, 20, 200
NOW = dt.datetime.now(dt.timezone.utc)


def prepare(db_url: str, sessions: int, ended: int, pending: int) -> str:
    """The ledger and a superadmin's keypair header."""
    os.environ.pop("JUPYTERHUB_API_TOKEN", None)
    from quota_service.app import HubgridService
    from quota_service.core import db
    from quota_service.core.models import (
        Allocation, Device, Domain, Membership, Node, Project, ReclaimEvent, ResourceGroup, User,
    )
    from quota_service.core.schemas import KeypairCreate
    from quota_service.tenancy import accounts

    svc = HubgridService(db_url=db_url, bootstrap_superadmin="bench", register_local_node=False,
                         log_level="WARN")
    svc.initialize([])
    rnd = random.Random(7)
    try:
        with db.transaction(svc.session_factory) as s:
            domain = Domain(name="bench", total_resource_slots={"gpu": "200", "cpu": "4000"})
            s.add(domain)
            s.flush()
            projects = [Project(domain_id=domain.id, name=f"p{i}",
                                total_resource_slots={"gpu": "16"}) for i in range(PROJECTS)]
            users = [User(name=f"u{i}", domain_id=domain.id) for i in range(USERS)]
            groups = [ResourceGroup(name=f"rg{i}") for i in range(GROUPS)]
            s.add_all(projects + users + groups)
            s.flush()
            s.add_all(Membership(user_id=u.id, project_id=projects[i % PROJECTS].id)
                      for i, u in enumerate(users))
            for g in groups:
                for n in range(NODES):
                    s.add(Node(name=f"{g.name}-n{n}", resource_group_id=g.id,
                               capacity={"cpu": "64", "mem": str(512 * 2**30)},
                               devices=[Device(index=i, model="A100") for i in range(GPUS)]))
            s.flush()

            def row(state: str, i: int) -> dict:
                u = users[i % USERS]
                slots = {"cpu": str(rnd.choice((1, 2, 4))), "mem": str(rnd.choice((4, 8)) * 2**30)}
                if i % 3 == 0:
                    slots["gpu"] = str(rnd.choice((1, 2)))
                elif i % 3 == 1:
                    slots["gpu.shares"] = rnd.choice(("0.25", "0.5", "0.75"))
                start = NOW - dt.timedelta(seconds=rnd.randrange(60, 30 * 86400),
                                           microseconds=rnd.randrange(10**6))
                a = {"id": str(uuid.uuid4()), "user_id": u.id, "project_id": projects[i % PROJECTS].id,
                     "domain_id": domain.id, "resource_group_id": groups[i % GROUPS].id,
                     "slots": slots, "state": state, "created_at": start, "reasons": [],
                     "gpus": [], "gpu_models": [], "mounts": []}
                if state in ("allocated", "released"):
                    a["admitted_at"] = start
                if state == "released":
                    a["ended_at"] = a["released_at"] = start + dt.timedelta(
                        seconds=rnd.randrange(60, 86400))
                if state == "pending":
                    a["reasons"] = [{"code": rnd.choice(("slot-limit", "capacity", "queue")),
                                     "kind": "wait", "level": "project", "name": "p", "text": "x"}]
                return a

            rows = ([row("allocated", i) for i in range(sessions)]
                    + [row("released", i) for i in range(ended)]
                    + [row("pending", i) for i in range(pending)])
            s.execute(sa.insert(Allocation), rows)
            running = [r for r in rows if r["state"] == "allocated"][:200]
            s.execute(sa.insert(ReclaimEvent), [
                {"allocation_id": r["id"], "kind": rnd.choice(("warning", "reclaimed", "shadow")),
                 "rule": rnd.choice(("idle", "lifetime", "utilization")), "at": NOW,
                 "resource_group_id": r["resource_group_id"], "project_id": r["project_id"],
                 "domain_id": r["domain_id"], "user_id": r["user_id"], "details": {}}
                for r in running])
        with db.transaction(svc.session_factory) as s:
            root = accounts.principal_for_hub_user(s, "bench")
            kp = accounts.create_keypair(s, root, KeypairCreate(), svc.clock())
        return f"Keypair {kp['access_key']}:{kp['secret_key']}"
    finally:
        svc.engine.dispose()


def run(db_url: str, sessions: int, ended: int, pending: int, scrapes: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hubgrid-bench-metrics-"))
    t0 = time.monotonic()
    auth = prepare(db_url, sessions, ended, pending)
    filled = time.monotonic() - t0
    port = free_port()
    env = dict(os.environ, HUBGRID_DB_URL=db_url, PYTHONUNBUFFERED="1")
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
        http = requests.Session()
        times, size, series = [], 0, 0
        for i in range(scrapes + 1):
            t = time.perf_counter()
            r = http.get(api + "metrics", headers={"Authorization": auth}, timeout=60)
            elapsed = time.perf_counter() - t
            if r.status_code != 200:
                raise SystemExit(f"GET metrics: {r.status_code} {r.text[:300]}")
            if i:  # the first scrape warms the connection pool and caches
                times.append(elapsed)
            size = len(r.content)
            series = sum(1 for line in r.text.splitlines() if line and not line.startswith("#"))
        times.sort()
        return {"p50_ms": 1000 * statistics.median(times),
                "p95_ms": 1000 * times[min(len(times) - 1, int(0.95 * len(times)))],
                "max_ms": 1000 * times[-1], "kib": size / 1024, "series": series,
                "fill_s": filled}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.metrics",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=1000, help="running sessions")
    ap.add_argument("--ended", type=int, default=10000, help="sessions that ran and ended")
    ap.add_argument("--pending", type=int, default=200, help="pending requests")
    ap.add_argument("--scrapes", type=int, default=50, help="scrapes measured")
    ap.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--postgres-url", default=os.environ.get("HUBGRID_TEST_POSTGRES_URL"))
    args = ap.parse_args(argv)
    rows = []
    for kind in (["sqlite", "postgres"] if args.db == "both" else [args.db]):
        drop = None
        if kind == "sqlite":
            url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='hubgrid-bench-')) / 'bench.sqlite'}"
        else:
            if not args.postgres_url:
                print("postgres: no --postgres-url / $HUBGRID_TEST_POSTGRES_URL; skipped")
                continue
            url, drop = postgres_database(args.postgres_url)
        try:
            rows.append((kind, run(url, args.sessions, args.ended, args.pending, args.scrapes)))
        finally:
            if drop:
                drop()
    print(f"GET metrics: {args.sessions} running, {args.ended} ended, {args.pending} pending "
          f"sessions; {args.scrapes} scrapes one after the other (target: p95 under 100 ms)")
    print(f"{'db':10} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'series':>7} {'KiB':>7}")
    for kind, r in rows:
        print(f"{kind:10} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['max_ms']:8.1f} "
              f"{r['series']:7d} {r['kib']:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
