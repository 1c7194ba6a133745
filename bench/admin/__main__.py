"""How long the admin pages' listings take on a large cluster.

    python -m bench.admin [--db sqlite|postgres] [--users 1000] [--nodes 200]
                          [--pending 500] [--running 400] [--domains 4] [--repeat 3]

Builds a fresh database (SQLite in a temporary directory, or a new database
on the PostgreSQL server of $HUBGRID_TEST_POSTGRES_URL, dropped afterwards),
migrated to head: ``--domains`` domains with three projects each,
``--users`` users spread over them, one resource group ``gpu`` granted to
every domain with ``--nodes`` nodes of 4 GPUs, ``--running`` sessions on
them (whole GPUs and shares) and ``--pending`` requests in its queue. Then
it times the manager calls behind the admin pages (what the handlers run in
their worker thread, without HTTP), as a superadmin and as a domain admin:
the users listing and a search, the nodes listing, one node's sessions and
GPU map, the resource groups, the queue in order. Prints per listing the
best wall time and the best CPU time of this process over ``--repeat``
runs, and how many entries it answered. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
import uuid

import sqlalchemy as sa

from bench.usage.__main__ import database
from quota_service.core import db
from quota_service.core.authz import Principal
from quota_service.core.models import (
    Allocation, Device, Domain, Node, Project, ResourceGroup, ResourceGroupGrant, Role, User,
)
from quota_service.scheduling import inventory, nodedesk, queuedesk
from quota_service.tenancy import accounts, bulkusers

UTC = dt.timezone.utc
NOW = dt.datetime(2031, 6, 1, 12, 0, tzinfo=UTC)


def populate(engine, users: int, nodes: int, pending: int, running: int, domains: int,
             seed: int = 7) -> None:
    rng = random.Random(seed)
    factory = db.session_factory(engine)
    with db.transaction(factory) as s:
        doms = [Domain(name=f"dom{i}") for i in range(domains)]
        s.add_all(doms)
        s.flush()
        rg = ResourceGroup(name="gpu")
        rg.grants = [ResourceGroupGrant(domain_id=d.id) for d in doms]
        rg.nodes = [Node(name=f"node{i:04d}", capacity={"cpu": "64", "mem": str(512 * 2**30)},
                         devices=[Device(index=j, model="A100") for j in range(4)])
                    for i in range(nodes)]
        s.add(rg)
        projects = [Project(name=f"prj{j}", domain_id=d.id) for d in doms for j in range(3)]
        people = [User(name=f"user{k:05d}", domain_id=doms[k % domains].id,
                       active=rng.random() > 0.05) for k in range(users)]
        s.add_all(projects + people + [
            User(name="root", domain_id=doms[0].id, role=Role.superadmin),
            User(name="dom0-admin", domain_id=doms[0].id, role=Role.domain_admin)])
        s.flush()
        by_domain = {d.id: [p.id for p in projects if p.domain_id == d.id] for d in doms}
        owners = [(u.id, u.domain_id) for u in people]
        node_ids = [n.id for n in rg.nodes]
        rg_id = rg.id
    rows = []
    for n in range(running + pending):
        user_id, domain_id = rng.choice(owners)
        row = dict(id=str(uuid.uuid4()), user_id=user_id, domain_id=domain_id,
                   project_id=rng.choice(by_domain[domain_id]), resource_group_id=rg_id,
                   slots={"cpu": "4", "mem": str(16 * 2**30), "gpu.shares": "0.5"},
                   session_type="interactive", gpu_models=[], priority=rng.randint(0, 3),
                   passes=0, release_reason="", origin="api", mounts=[],
                   created_at=NOW - dt.timedelta(seconds=rng.randint(60, 86400)))
        if n < running:
            row.update(state="allocated", node_id=rng.choice(node_ids),
                       gpus=[{"index": rng.randint(0, 3), "share": "0.5"}], reasons=[],
                       admitted_at=row["created_at"])
        else:
            row.update(state="pending", node_id=None, admitted_at=None, gpus=[], reasons=[{
                "code": "capacity", "kind": "wait", "level": "resource-group", "name": "gpu",
                "text": "resource group gpu: no node has room"}])
        rows.append(row)
    with engine.begin() as c:
        for i in range(0, len(rows), 1000):
            c.execute(sa.insert(Allocation), rows[i:i + 1000])
    if engine.dialect.name == "postgresql":
        with engine.connect() as c:
            c.execute(sa.text("ANALYZE"))
            c.commit()


def listings(busiest: str):
    """(label, caller, call(session, principal) -> entries counted)."""
    def users(s, p):
        return len(accounts.list_users(s, p))

    def search(s, p):
        keep = bulkusers.search_filter("user0", "user", "true")
        return sum(1 for u in accounts.list_users(s, p) if keep(u))

    return [
        ("users", "root", users),
        ("users (domain admin)", "admin", users),
        ("users search q=user0&role&active", "root", search),
        ("nodes", "root", lambda s, p: len(inventory.list_nodes(s, p))),
        ("nodes (domain admin)", "admin", lambda s, p: len(inventory.list_nodes(s, p))),
        ("node sessions + GPU map", "root",
         lambda s, p: len(nodedesk.node_sessions(s, p, busiest, NOW)["sessions"])),
        ("resource groups", "root", lambda s, p: len(inventory.list_groups(s, p))),
        ("queue in order", "root", lambda s, p: len(queuedesk.list_queue(s, p, "gpu")["entries"])),
        ("queue in order (domain admin)", "admin",
         lambda s, p: len(queuedesk.list_queue(s, p, "gpu")["entries"])),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.admin", description=__doc__.split("\n")[0])
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pending", type=int, default=500)
    ap.add_argument("--running", type=int, default=400)
    ap.add_argument("--domains", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with database(args.db) as url:
        engine = db.make_engine(url)
        try:
            db.upgrade(engine)
            t0 = time.perf_counter()
            populate(engine, max(args.users, args.domains), max(args.nodes, 1), args.pending,
                     args.running, args.domains)
            print(f"{args.db}: {args.users} users in {args.domains} domains, {args.nodes} nodes, "
                  f"{args.running} running sessions, {args.pending} pending requests "
                  f"(written in {time.perf_counter() - t0:.1f} s)")
            factory = db.session_factory(engine)
            with factory() as s:
                busiest = s.scalar(sa.select(Node.name).join(Allocation, Allocation.node_id == Node.id)
                                   .group_by(Node.name).order_by(sa.func.count().desc())
                                   .limit(1)) or "node0000"
            callers = {"root": Principal("root", Role.superadmin, "dom0"),
                       "admin": Principal("dom0-admin", Role.domain_admin, "dom0")}
            print(f"{'listing':40} {'best s':>8} {'cpu s':>8} {'entries':>8}")
            for label, caller, call in listings(busiest):
                best, cpu, counted = float("inf"), float("inf"), 0
                for _ in range(max(args.repeat, 1)):
                    t, c = time.perf_counter(), time.process_time()
                    with factory() as s:
                        counted = call(s, callers[caller])
                    best = min(best, time.perf_counter() - t)
                    cpu = min(cpu, time.process_time() - c)
                print(f"{label:40} {best:8.3f} {cpu:8.3f} {counted:8d}")
        finally:
            engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
