"""How late after its deadline a session is reclaimed, over many sessions.

    python -m bench.reclaim [--sessions 100] [--interval 1] [--lifetime 5]
                            [--warning 0] [--spread 3]

Starts the hubgrid service (the real ``python -m quota_service``, no hub) on
a loopback port against a fresh SQLite database, with a reclaim pass every
``--interval`` seconds and a resource policy whose ``max_session_lifetime``
is ``--lifetime`` seconds (``reclaim_warning`` ``--warning``). It creates
``--sessions`` API allocations (``POST allocations`` with a keypair) spread
over ``--spread`` seconds, so their deadlines fall anywhere in a pass's
cycle, waits until every one is released, and prints how late each was
released after its deadline (``admitted_at`` + lifetime): p50, p99 and the
worst, against the check interval (the goal: within one interval), and how
many ended as ``reclaimed (lifetime)``. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient

from bench.hubproc import free_port, wait_for_service

USER = "bench"


def prepare(db_url: str, lifetime: int, warning: int) -> str:
    """Schema, the superadmin ``bench``, a roomy node, the default policy's
    lifetime; returns bench's keypair (``Keypair ACCESS:SECRET``)."""
    os.environ.pop("JUPYTERHUB_API_TOKEN", None)
    import sqlalchemy as sa

    from quota_service.app import HubgridService
    from quota_service.core import db
    from quota_service.core.models import ResourcePolicy, User
    from quota_service.core.schemas import KeypairCreate
    from quota_service.tenancy import accounts

    svc = HubgridService(db_url=db_url, bootstrap_superadmin=USER, register_local_node=False,
                         log_level="WARN",
                         nodes=[{"name": "bench-node", "resource_group": "default",
                                 "capacity": {"cpu": "100000", "mem": "100T"}}])
    svc.initialize([])
    now = dt.datetime.now(dt.timezone.utc)
    with db.transaction(svc.session_factory) as s:
        pol = s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == "default"))
        pol.max_session_lifetime = lifetime
        pol.reclaim_warning = warning
        user = s.scalar(sa.select(User).where(User.name == USER))
        me = accounts.principal_for(s, user, "token")
        kp = accounts.create_keypair(s, me, KeypairCreate(user=USER), now)
    svc.engine.dispose()
    return f"Keypair {kp['access_key']}:{kp['secret_key']}"


def parse(t: str) -> dt.datetime:
    return dt.datetime.fromisoformat(t)


def percentile(xs: list[float], p: float) -> float:
    """The nearest-rank percentile."""
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(-(-p * len(xs) // 100)) - 1))
    return xs[k]


async def measure(api: str, auth: str, sessions: int, lifetime: int, spread: float,
                  timeout: float) -> list[dict]:
    http = AsyncHTTPClient(force_instance=True, max_clients=32)
    headers = {"Authorization": auth, "Content-Type": "application/json"}
    body = json.dumps({"project": "default", "resource_group": "default",
                       "slots": {"cpu": "1", "mem": "1G"}})
    ids: list[str] = []
    try:
        start = time.monotonic()
        for i in range(sessions):
            # spread over ``spread`` seconds: deadlines anywhere in a pass's cycle
            delay = start + spread * i / max(sessions, 1) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            r = await http.fetch(api + "allocations", method="POST", headers=headers, body=body,
                                 raise_error=False)
            if r.code != 201:
                raise SystemExit(f"POST allocations: {r.code} {r.body[:300]!r}")
            ids.append(json.loads(r.body)["id"])
        deadline = time.monotonic() + timeout
        while True:
            r = await http.fetch(api + "allocations?state=released", headers=headers,
                                 raise_error=False)
            done = [a for a in json.loads(r.body) if a["id"] in set(ids)]
            if len(done) == len(ids) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
    finally:
        http.close()
    rows = []
    for a in done:
        due = parse(a["admitted_at"]) + dt.timedelta(seconds=lifetime)
        rows.append({"id": a["id"], "late": (parse(a["released_at"]) - due).total_seconds(),
                     "reclaimed": (a["release_reason"] or "").startswith("reclaimed (lifetime)")})
    rows += [{"id": i, "late": None, "reclaimed": False} for i in set(ids) - {a["id"] for a in done}]
    return rows


def run(sessions: int, interval: float, lifetime: int, warning: int, spread: float) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="hubgrid-bench-reclaim-"))
    db_url = f"sqlite:///{tmp / 'bench.sqlite'}"
    auth = prepare(db_url, lifetime, warning)
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
         f"--HubgridService.reclaim_interval={interval}",
         "--HubgridService.log_level=WARN"],
        env=env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    api = f"http://127.0.0.1:{port}/services/hubgrid/api/v1/"
    try:
        wait_for_service(api, proc, log=tmp / "service.log")
        timeout = spread + lifetime + warning + 10 * interval + 30
        return asyncio.run(measure(api, auth, sessions, lifetime, spread, timeout))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.reclaim",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=100, help="sessions to reclaim")
    ap.add_argument("--interval", type=float, default=1.0, help="the reclaim pass's interval (s)")
    ap.add_argument("--lifetime", type=int, default=5, help="the policy's max_session_lifetime (s)")
    ap.add_argument("--warning", type=int, default=0, help="the policy's reclaim_warning (s)")
    ap.add_argument("--spread", type=float, default=3.0,
                    help="seconds over which the sessions are started")
    args = ap.parse_args(argv)
    rows = run(args.sessions, args.interval, args.lifetime, args.warning, args.spread)
    late = [r["late"] for r in rows if r["late"] is not None]
    print(f"reclaim lateness after the deadline: {args.sessions} API sessions, lifetime "
          f"{args.lifetime} s, warning {args.warning} s, a pass every {args.interval:g} s")
    print(f"{'sessions':>8} {'released':>8} {'reclaimed':>9} {'p50 s':>7} {'p99 s':>7} "
          f"{'max s':>7} {'within 1 interval':>17}")
    within = sum(1 for x in late if x <= args.interval)
    if late:
        print(f"{len(rows):8d} {len(late):8d} {sum(r['reclaimed'] for r in rows):9d} "
              f"{percentile(late, 50):7.3f} {percentile(late, 99):7.3f} {max(late):7.3f} "
              f"{within:10d} of {len(rows)}")
    else:
        print(f"{len(rows):8d} {0:8d} {0:9d} {'-':>7} {'-':>7} {'-':>7} {0:10d} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
