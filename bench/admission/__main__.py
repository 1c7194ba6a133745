"""Admission throughput under concurrency, through the service's real HTTP API.

    python -m bench.admission [--requests 500] [--concurrency 50] [--admit 37]
                              [--db sqlite|postgres|both] [--postgres-url URL]

Starts the hubgrid service (the real ``python -m quota_service``, keypair
authentication, no hub) on a loopback port against a fresh database, with a
resource policy that admits exactly ``--admit`` concurrent sessions and
allows no pending ones. Then fires ``--requests`` POST /allocations at
``--concurrency`` and prints: admitted (must equal --admit), refused,
decisions per second, and latency p50/p99. PostgreSQL comes from
``--postgres-url`` or $HUBGRID_TEST_POSTGRES_URL (``make test`` starts one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
import sqlalchemy as sa

from bench.hubproc import free_port, wait_for_service


def prepare(db_url: str, admit: int) -> str:
    """Schema, a domain/project/user with a policy admitting ``admit``; a keypair."""
    os.environ.pop("JUPYTERHUB_API_TOKEN", None)
    from quota_service.core import db, keys
    from quota_service.app import HubgridService
    from quota_service.core.models import Keypair, ResourcePolicy, User

    svc = HubgridService(db_url=db_url, bootstrap_superadmin="bench", register_local_node=False,
                         nodes=[{"name": "bench-node", "resource_group": "default",
                                 "capacity": {"cpu": "100000", "mem": "1024T"},
                                 "devices": [{"index": i, "model": "A100"} for i in range(8)]}])
    svc.initialize([])
    with db.transaction(svc.session_factory) as s:
        s.add(ResourcePolicy(name="bench", max_concurrent_sessions=admit, max_pending_sessions=0))
        user = s.scalar(sa.select(User).where(User.name == "bench"))
        user.resource_policy = "bench"
        # the bootstrap superadmin is a member of the default project already
        access, secret = keys.new_keypair()
        s.add(Keypair(access_key=access, secret_hash=keys.hash_secret(secret), user=user,
                      resource_policy="bench"))
    svc.engine.dispose()
    return f"Keypair {access}:{secret}"


def run(db_url: str, n: int, concurrency: int, admit: int) -> dict:
    auth = prepare(db_url, admit)
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="hubgrid-bench-admission-")  # the service's pid file
    env = dict(os.environ, HUBGRID_DB_URL=db_url, PYTHONUNBUFFERED="1")
    env.pop("JUPYTERHUB_API_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "quota_service",
         f"--HubgridService.service_url=http://127.0.0.1:{port}",
         "--HubgridService.register_local_node=False", "--HubgridService.bootstrap_superadmin=bench"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=workdir,
    )
    api = f"http://127.0.0.1:{port}/services/hubgrid/api/v1/"
    try:
        wait_for_service(api, proc)
        body = {"project": "default", "resource_group": "default",
                "slots": {"cpu": "1", "mem": "1G", "gpu.shares": "0.1"}}
        session = requests.Session()

        def one(_):
            t = time.perf_counter()
            r = session.post(api + "allocations", json=body, headers={"Authorization": auth},
                             timeout=120)
            return r.status_code, time.perf_counter() - t

        start = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(one, range(n)))
        total = time.perf_counter() - start
        codes = [c for c, _ in results]
        lat = sorted(t for _, t in results)
        held = requests.get(api + "allocations?state=allocated", headers={"Authorization": auth},
                            timeout=60).json()
        return {
            "admitted": codes.count(201),
            "refused": codes.count(422),
            "other": len([c for c in codes if c not in (201, 422)]),
            "allocated_in_ledger": len(held),
            "decisions_per_s": n / total,
            "p50_ms": 1000 * statistics.median(lat),
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))],
            "total_s": total,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def postgres_database(base: str):
    name = "hubgrid_bench_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop():
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return sa.engine.make_url(base).set(database=name).render_as_string(hide_password=False), drop


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.admission", description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--admit", type=int, default=37)
    ap.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--postgres-url", default=os.environ.get("HUBGRID_TEST_POSTGRES_URL"))
    args = ap.parse_args(argv)
    rows = []
    ok = True
    for kind in (["sqlite", "postgres"] if args.db == "both" else [args.db]):
        drop = None
        if kind == "sqlite":
            tmp = tempfile.mkdtemp(prefix="hubgrid-bench-")
            url = f"sqlite:///{Path(tmp) / 'bench.sqlite'}"
        else:
            if not args.postgres_url:
                print("postgres: no --postgres-url / $HUBGRID_TEST_POSTGRES_URL; skipped")
                continue
            url, drop = postgres_database(args.postgres_url)
        try:
            r = run(url, args.requests, args.concurrency, args.admit)
        finally:
            if drop:
                drop()
        ok &= r["admitted"] == args.admit == r["allocated_in_ledger"] and r["other"] == 0
        rows.append((kind, r))
    print(f"{args.requests} requests at concurrency {args.concurrency}, policy admits {args.admit}")
    print(f"{'db':10} {'admitted':>8} {'refused':>8} {'other':>6} {'ledger':>7} "
          f"{'dec/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'total s':>8}")
    for kind, r in rows:
        print(f"{kind:10} {r['admitted']:8d} {r['refused']:8d} {r['other']:6d} "
              f"{r['allocated_in_ledger']:7d} {r['decisions_per_s']:8.1f} {r['p50_ms']:8.1f} "
              f"{r['p99_ms']:8.1f} {r['total_s']:8.2f}")
    print("admitted == K on every database:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
