"""The real thing: JupyterHub + configurable-http-proxy + the hubgrid service.

``hub`` starts ``jupyterhub -f jupyterhub_config.py`` (the same config
``make run`` uses, with test overrides) on free loopback ports, once per
test module and database (SQLite, PostgreSQL), and stops the whole process group
afterwards. Import the fixtures into a test module::

    from hub_fixtures import hub, world  # noqa: F401
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass

import pytest
import requests

from bench.hubproc import REPO, Hub, free_port, launch_hub, stop_hub  # noqa: F401


def require(what: str, ok: bool, hint: str) -> None:
    """A missing real component fails in CI and skips elsewhere."""
    if ok:
        return
    msg = f"{what} is not available: {hint}"
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


def _postgres_database():
    """A fresh database on the real PostgreSQL server, dropped afterwards."""
    import sqlalchemy as sa

    base = os.environ.get("HUBGRID_TEST_POSTGRES_URL")
    require("PostgreSQL", bool(base), "run the suite with `make test` (it starts PostgreSQL)")
    name = "hubgrid_hub_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(base).set(database=name)

    def drop():
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url.render_as_string(hide_password=False), drop


#: module scope: every test module that imports ``hub`` gets a fixture of its
#: own (pytest registers an imported fixture per module), so a session scope
#: kept every module's hubs running to the end of the run (dozens of hubs,
#: their services' passes and connection pools); now each module's hubs stop
#: when the module is done
@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def hub(request, tmp_path_factory):
    yield from _running_hub(request.param, tmp_path_factory)


@pytest.fixture(scope="module", name="hub")
def sqlite_hub(tmp_path_factory):
    """``hub`` on SQLite alone, for modules whose subject is a client of the
    API (the CLI, the Lab server extension, the widgets), not its database:
    the API itself runs through the hub on both databases (test_matrix,
    test_fuzz, test_api_input, test_hub_login, test_upload_refusals) and
    every service test on both. Import it instead of ``hub``."""
    yield from _running_hub("sqlite", tmp_path_factory)


def _running_hub(database: str, tmp_path_factory):
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test` (it installs it from npm)")
    state = tmp_path_factory.mktemp(f"hub-{database}")
    drop = None
    env = {}
    if database == "postgres":
        env["HUBGRID_DB_URL"], drop = _postgres_database()
    try:
        hub = launch_hub(state, env)
        try:
            yield hub
        finally:
            stop_hub(hub)
    finally:
        if drop is not None:
            drop()


@dataclass(frozen=True)
class World:
    """Two domains with an admin and a user each, and a keypair per caller."""

    hub: Hub
    keypairs: dict[str, str]  # user -> "Keypair ACCESS:SECRET"


def _ok(r: requests.Response, *codes: int) -> dict:
    assert r.status_code in codes, f"{r.request.method} {r.url}: {r.status_code} {r.text[:500]}"
    return r.json() if r.content else {}


@pytest.fixture(scope="module")
def world(hub) -> World:
    return build_world(hub)


def build_world(hub: Hub) -> World:
    """acme: ada (domain admin), alice (user, in acme/ml);
    globex: gus (domain admin), gina (user, in globex/lab); admin: superadmin.
    Each domain has a resource group ``<domain>-gpu`` with one node
    ``<domain>-node`` (1000 cpu, 4 A100 GPUs)."""
    for d, p in (("acme", "ml"), ("globex", "lab")):
        _ok(hub.call("POST", "domains", "admin", json={"name": d}), 201)
        _ok(hub.call("POST", f"domains/{d}/projects", "admin", json={"name": p}), 201)
    for name, domain, role in (
        ("ada", "acme", "domain-admin"), ("alice", "acme", "user"),
        ("gus", "globex", "domain-admin"), ("gina", "globex", "user"),
    ):
        _ok(hub.call("POST", "users", "admin", json={"name": name, "domain": domain, "role": role}), 201)
    _ok(hub.call("PUT", "domains/acme/projects/ml/members/alice", "admin"), 201)
    _ok(hub.call("PUT", "domains/globex/projects/lab/members/gina", "admin"), 201)
    for domain in ("acme", "globex"):
        rg, node = f"{domain}-gpu", f"{domain}-node"
        _ok(hub.call("POST", "resource-groups", "admin", json={"name": rg}), 201)
        _ok(hub.call("PUT", f"resource-groups/{rg}/grants", "admin", json={"domain": domain}), 201)
        _ok(hub.call("POST", "nodes", "admin", json={
            "name": node, "resource_group": rg, "capacity": {"cpu": "1000", "mem": "4096G"},
            "devices": [{"index": i, "model": "A100"} for i in range(4)],
        }), 201)
    keypairs = {}
    for user in ("admin", "ada", "alice", "gus", "gina"):
        kp = _ok(hub.call("POST", "keypairs", "admin", json={"user": user}), 201)
        keypairs[user] = f"Keypair {kp['access_key']}:{kp['secret_key']}"
    return World(hub=hub, keypairs=keypairs)
