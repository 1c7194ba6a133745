"""How long the usage query takes over a year of sessions.

    python -m bench.usage [--db sqlite|postgres] [--sessions 10000] [--users 200]
                          [--domains 4] [--running 100] [--repeat 3]

Builds a fresh database (SQLite in a temporary directory, or a new database
on the PostgreSQL server of $HUBGRID_TEST_POSTGRES_URL, dropped afterwards),
migrated to head, with ``--domains`` domains of users and projects, two
resource groups, ``--sessions`` ended sessions spread over the last year
(10 minutes to 3 days long, CPU, memory and whole or shared GPUs) and
``--running`` sessions still running. Then it times what ``GET usage``
does for a one-year period (reading the intervals, the exact sums, the
JSON or CSV), as each kind of caller: a superadmin grouping by user,
project, domain and resource group (with and without the daily series, and
as CSV), a domain admin, a user. Prints per query the best wall time and
the best CPU time of this process (a loaded machine stretches the first,
not the second; PostgreSQL's own work shows only in the first) over
``--repeat`` runs, and the sessions each one counted. Figures only: nothing
is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from quota_service.core import db
from quota_service.core.authz import Principal
from quota_service.core.models import Allocation, Domain, Project, ResourceGroup, Role, User
from quota_service.core.usagemodels import UsageInterval
from quota_service.operations import usage_query

UTC = dt.timezone.utc
NOW = dt.datetime(2031, 6, 1, 12, 0, tzinfo=UTC)
YEAR = dt.timedelta(days=365)


@contextmanager
def database(kind: str) -> Iterator[str]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as d:
            yield f"sqlite:///{d}/usage.sqlite"
        return
    base_url = os.environ.get("HUBGRID_TEST_POSTGRES_URL")
    if not base_url:
        raise SystemExit("--db postgres needs $HUBGRID_TEST_POSTGRES_URL "
                         "(bash scripts/start-postgres.sh prints it)")
    base = sa.engine.make_url(base_url)
    name = f"hubgrid_bench_usage_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def populate(engine, sessions: int, users: int, domains: int, running: int,
             seed: int = 7) -> dict:
    """The world and its sessions; the names of one domain admin and one user."""
    rng = random.Random(seed)
    factory = db.session_factory(engine)
    with db.transaction(factory) as s:
        groups = [ResourceGroup(name=n) for n in ("gpu", "cpu")]
        s.add_all(groups)
        doms = [Domain(name=f"dom{i}") for i in range(domains)]
        s.add_all(doms)
        s.flush()
        projects = [Project(name=f"prj{j}", domain_id=d.id) for d in doms for j in range(3)]
        people = [User(name=f"user{k}", domain_id=doms[k % domains].id) for k in range(users)]
        admin = User(name="dom0-admin", domain_id=doms[0].id, role=Role.domain_admin)
        s.add_all(projects + people + [admin])
        s.flush()
        by_domain = {d.id: [p.id for p in projects if p.domain_id == d.id] for d in doms}
        owners = [(u.id, u.domain_id) for u in people]
        gids = [g.id for g in groups]
    closed, live = [], []
    for n in range(sessions + running):
        user_id, domain_id = rng.choice(owners)
        slots = {"cpu": str(rng.choice((1, 2, 4, 8, 0.5))), "mem": str(rng.choice((4, 16, 64)) * 2**30)}
        if rng.random() < 0.3:
            slots["gpu"] = str(rng.choice((1, 2, 4)))
        elif rng.random() < 0.4:
            slots["gpu.shares"] = rng.choice(("0.25", "0.5", "0.1"))
        row = dict(user_id=user_id, domain_id=domain_id, project_id=rng.choice(by_domain[domain_id]),
                   resource_group_id=rng.choice(gids), slots=slots)
        if n < sessions:
            start = NOW - YEAR + dt.timedelta(seconds=rng.randint(0, 365 * 86400 - 1))
            length = dt.timedelta(seconds=min(rng.expovariate(1 / 14400) + 600, 3 * 86400))
            closed.append(dict(row, allocation_id=str(uuid.uuid4()), session_type="interactive",
                               gpus=[], started_at=start, ended_at=min(start + length, NOW)))
        else:
            start = NOW - dt.timedelta(seconds=rng.randint(60, 2 * 86400))
            live.append(dict(row, id=str(uuid.uuid4()), state="allocated", admitted_at=start,
                             created_at=start, session_type="interactive", gpus=[],
                             gpu_models=[], reasons=[], priority=0, passes=0,
                             release_reason="", origin="api", mounts=[]))
    with engine.begin() as c:
        for i in range(0, len(closed), 2000):
            c.execute(sa.insert(UsageInterval), closed[i:i + 2000])
        if live:
            c.execute(sa.insert(Allocation), live)
    if engine.dialect.name == "postgresql":
        with engine.connect() as c:
            c.execute(sa.text("ANALYZE"))
            c.commit()
    return {"admin": "dom0-admin", "user": "user0", "domain": "dom0"}


QUERIES = [
    # (label, caller, by, daily, format)
    ("superadmin by user", "root", "user", False, "json"),
    ("superadmin by project", "root", "project", False, "json"),
    ("superadmin by domain", "root", "domain", False, "json"),
    ("superadmin by resource_group", "root", "resource_group", False, "json"),
    ("superadmin by user, daily", "root", "user", True, "json"),
    ("superadmin by project, daily, CSV", "root", "project", True, "csv"),
    ("domain admin by user, daily", "admin", "user", True, "json"),
    ("user, daily", "user", "user", True, "json"),
]


def run_query(factory, p: Principal, q: usage_query.Query) -> int:
    with factory() as s:
        report = usage_query.report(s, p, q, NOW)
    if q.format == "csv":
        usage_query.as_csv(report)
    else:
        usage_query.as_json(report, q)
    return report.total.sessions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.usage", description=__doc__.split("\n")[0])
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--users", type=int, default=200)
    ap.add_argument("--domains", type=int, default=4)
    ap.add_argument("--running", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with database(args.db) as url:
        engine = db.make_engine(url)
        try:
            db.upgrade(engine)
            t0 = time.perf_counter()
            who = populate(engine, args.sessions, max(args.users, args.domains),
                           args.domains, args.running)
            print(f"{args.db}: {args.sessions} ended + {args.running} running sessions, "
                  f"{args.users} users in {args.domains} domains "
                  f"(written in {time.perf_counter() - t0:.1f} s)")
            callers = {
                "root": Principal("root", Role.superadmin, "dom0"),
                "admin": Principal(who["admin"], Role.domain_admin, who["domain"]),
                "user": Principal(who["user"], Role.user, who["domain"]),
            }
            factory = db.session_factory(engine)
            print(f"{'query (one year)':40} {'best s':>8} {'cpu s':>8} {'sessions':>9}")
            for label, caller, by, daily, fmt in QUERIES:
                q = usage_query.Query(NOW - YEAR, NOW, by, daily, fmt)
                best, cpu, counted = float("inf"), float("inf"), 0
                for _ in range(max(args.repeat, 1)):
                    t, c = time.perf_counter(), time.process_time()
                    counted = run_query(factory, callers[caller], q)
                    best = min(best, time.perf_counter() - t)
                    cpu = min(cpu, time.process_time() - c)
                print(f"{label:40} {best:8.3f} {cpu:8.3f} {counted:9d}")
        finally:
            engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
