"""Admission throughput under concurrency, through the service's real HTTP API.

    python -m bench.admission [--requests 500] [--concurrency 50] [--admit 37]
                              [--db sqlite|postgres|both] [--postgres-url URL]
    python -m bench.admission --workload storm [--requests 1000] [--seed 1]
                              [--nodes 20] [--users 300] [--domains 3] [--projects 12]
    python -m bench.admission --workload scale [--requests 500] [--nodes 2000] [--users 10000]

Starts the hubgrid service (the real ``python -m quota_service``, keypair
authentication, no hub) on a loopback port against a fresh database.

``classic`` (the default): one user with a resource policy that admits
exactly ``--admit`` concurrent sessions and allows no pending ones fires
``--requests`` POST /allocations at ``--concurrency``; prints admitted (must
equal --admit), refused, decisions per second, and latency p50/p99.

``storm``: ``--users`` users in ``--domains`` domains and ``--projects``
projects on ``--nodes`` nodes of 8 GPUs, each user limited to 2 sessions
and 1 waiting; mixed requests (CPU only, GPU shares of 0.25 and 0.5, 1 and
2 whole GPUs) from seeded users (a few ask much more than most), each
admitted session released 0-0.5 s later (a waiting one cancelled then).
Prints decisions per second, p50/p99 of admitted, pending and refused
answers, and of the releases; checks that the ledger holds nothing at the end.
``scale``: the storm on 2,000 nodes and 10,000 users (by default), with the
service's resident memory (RSS, now and peak).

PostgreSQL comes from ``--postgres-url`` or $HUBGRID_TEST_POSTGRES_URL
(``make test`` starts one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import requests
import sqlalchemy as sa

from bench.admission import harness, storm, world

DEFAULTS = {  # workload: (requests, nodes, users)
    "classic": (500, 1, 1), "storm": (1000, 20, 300), "scale": (500, 2000, 10000)}


def prepare(db_url: str, admit: int) -> str:
    """Schema, a domain/project/user with a policy admitting ``admit``; a keypair."""
    from quota_service.core import db, keys
    from quota_service.core.models import Keypair, ResourcePolicy, User

    svc = harness.prepare_service(db_url, [
        {"name": "bench-node", "resource_group": "default",
         "capacity": {"cpu": "100000", "mem": "1024T"},
         "devices": [{"index": i, "model": "A100"} for i in range(8)]}])
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
    with harness.service(db_url) as svc:
        api = svc.api
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


def run_storm(db_url: str, args) -> dict:
    """The storm (or scale) workload on ``db_url``: its summary, the
    service's memory after it, and what the ledger still holds."""
    tenants = world.prepare(db_url, nodes=args.nodes, users=args.users,
                            domains=args.domains, projects=args.projects)
    asks = storm.plan(tenants, args.requests, args.seed)
    with harness.service(db_url) as svc:
        cpu, mine = svc.cpu_seconds(), time.process_time()
        out = storm.drive(svc.api, asks, args.concurrency)
        cpu, mine = svc.cpu_seconds() - cpu, time.process_time() - mine
        row = storm.summary(out, args.requests)
        row.update(svc.memory())
        # every request and every release is one call
        calls = args.requests + len(out.release) + len(out.release_failed) + len(out.cancels)
        row["cpu_ms_per_call"] = 1000 * cpu / calls if calls else 0.0
        row["client_ms_per_call"] = 1000 * mine / calls if calls else 0.0
    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        row["left_active"] = c.scalar(sa.text(
            "SELECT count(*) FROM allocations WHERE state IN ('allocated', 'pending')"))
    engine.dispose()
    return row


def print_classic(args, rows) -> bool:
    ok = all(r["admitted"] == args.admit == r["allocated_in_ledger"] and r["other"] == 0
             for _, r in rows)
    print(f"{args.requests} requests at concurrency {args.concurrency}, policy admits {args.admit}")
    print(f"{'db':10} {'admitted':>8} {'refused':>8} {'other':>6} {'ledger':>7} "
          f"{'dec/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'total s':>8}")
    for kind, r in rows:
        print(f"{kind:10} {r['admitted']:8d} {r['refused']:8d} {r['other']:6d} "
              f"{r['allocated_in_ledger']:7d} {r['decisions_per_s']:8.1f} {r['p50_ms']:8.1f} "
              f"{r['p99_ms']:8.1f} {r['total_s']:8.2f}")
    print("admitted == K on every database:", "yes" if ok else "NO")
    return ok


def print_storm(args, rows) -> bool:
    ok = all(r["other"] == 0 and r["release_failed"] == 0 and r["left_active"] == 0
             for _, r in rows)
    print(f"{args.workload}: {args.requests} requests at concurrency {args.concurrency}, "
          f"{args.users} users in {args.domains} domains and {args.projects} projects, "
          f"{args.nodes} nodes x {world.GPUS_PER_NODE} GPUs, seed {args.seed}")
    print(f"{'db':9} {'dec/s':>7} {'admitted':>8} {'p50/p99 ms':>15} {'pending':>7} "
          f"{'p50/p99 ms':>15} {'refused':>7} {'p50/p99 ms':>15} {'release p50/p99 ms':>19} "
          f"{'other':>5} {'RSS MiB':>8} {'peak MiB':>8} {'CPU ms/call':>11} {'client ms/call':>14}")
    for kind, r in rows:
        def pair(name):
            return f"{r[name + '_p50_ms']:.0f} / {r[name + '_p99_ms']:.0f}"
        print(f"{kind:9} {r['decisions_per_s']:7.1f} {r['admitted']:8d} {pair('admitted'):>15} "
              f"{r['pending']:7d} {pair('pending'):>15} {r['refused']:7d} {pair('refused'):>15} "
              f"{pair('release'):>19} {r['other'] + r['release_failed']:5d} "
              f"{r['rss'] / 2**20:8.0f} {r['peak_rss'] / 2**20:8.0f} "
              f"{r['cpu_ms_per_call']:11.2f} {r['client_ms_per_call']:14.2f}")
    print("every request answered, every session released, ledger empty after:",
          "yes" if ok else "NO")
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.admission", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", choices=sorted(DEFAULTS), default="classic")
    ap.add_argument("--requests", type=int)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--admit", type=int, default=37, help="classic: sessions the policy admits")
    ap.add_argument("--seed", type=int, default=1, help="storm, scale: the request stream's seed")
    ap.add_argument("--nodes", type=int, help="storm, scale: nodes of 8 GPUs")
    ap.add_argument("--users", type=int, help="storm, scale: users (each with a keypair)")
    ap.add_argument("--domains", type=int, default=3)
    ap.add_argument("--projects", type=int, default=12)
    ap.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--postgres-url", default=os.environ.get("HUBGRID_TEST_POSTGRES_URL"))
    args = ap.parse_args(argv)
    n, nodes, users = DEFAULTS[args.workload]
    args.requests = args.requests or n
    args.nodes = args.nodes or nodes
    args.users = args.users or users
    rows = []
    for kind in (["sqlite", "postgres"] if args.db == "both" else [args.db]):
        with harness.database(kind, args.postgres_url) as url:
            if url is None:
                print("postgres: no --postgres-url / $HUBGRID_TEST_POSTGRES_URL; skipped")
                continue
            if args.workload == "classic":
                rows.append((kind, run(url, args.requests, args.concurrency, args.admit)))
            else:
                rows.append((kind, run_storm(url, args)))
    ok = (print_classic if args.workload == "classic" else print_storm)(args, rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
