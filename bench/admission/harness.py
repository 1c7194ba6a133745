"""What every bench.admission workload shares: a fresh database of either
kind, the real service started on it (``python -m quota_service`` on a
loopback port, keypair authentication, no hub), its memory, percentiles."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa

from bench.hubproc import free_port, wait_for_service


def postgres_database(base: str):
    """A new database on the server of ``base``: (its URL, a function dropping it)."""
    name = "hubgrid_bench_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop():
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return sa.engine.make_url(base).set(database=name).render_as_string(hide_password=False), drop


@contextmanager
def database(kind: str, postgres_url: str | None) -> Iterator[str | None]:
    """The URL of a fresh empty database of ``kind`` (sqlite | postgres),
    dropped afterwards; None when PostgreSQL is asked for without a URL."""
    if kind == "sqlite":
        tmp = tempfile.mkdtemp(prefix="hubgrid-bench-")
        yield f"sqlite:///{Path(tmp) / 'bench.sqlite'}"
        return
    if not postgres_url:
        yield None
        return
    url, drop = postgres_database(postgres_url)
    try:
        yield url
    finally:
        drop()


def prepare_service(db_url: str, nodes: list[dict]):
    """The service's schema and bootstrap (superadmin ``bench``) with ``nodes``
    in the default resource group; returns the HubgridService (dispose its
    engine when done writing)."""
    os.environ.pop("JUPYTERHUB_API_TOKEN", None)
    from quota_service.app import HubgridService

    svc = HubgridService(db_url=db_url, bootstrap_superadmin="bench", register_local_node=False,
                         nodes=nodes)
    svc.initialize([])
    return svc


class Service:
    """The running service: its API base URL and process."""

    def __init__(self, api: str, proc: subprocess.Popen):
        self.api, self.proc = api, proc

    def memory(self) -> dict[str, int]:
        """The service process's resident memory now and at its peak (bytes)."""
        out = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
        return {"rss": out.get("VmRSS", 0), "peak_rss": out.get("VmHWM", 0)}

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) the service process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def service(db_url: str) -> Iterator[Service]:
    """``python -m quota_service`` on ``db_url`` (prepared) on a free loopback port."""
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
        wait_for_service(api, proc, timeout=120)
        yield Service(api, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``sorted_values`` (nearest rank below); 0 for none."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]
