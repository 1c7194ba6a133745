"""The real thing: JupyterHub + configurable-http-proxy + the hubgrid service.

``hub`` starts ``jupyterhub -f jupyterhub_config.py`` (the same config
``make run`` uses, with test overrides) on free loopback ports, once per
session and database (SQLite, PostgreSQL), and stops the whole process group
afterwards. Import the fixtures into a test module::

    from hub_fixtures import hub, world  # noqa: F401
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require(what: str, ok: bool, hint: str) -> None:
    """A missing real component fails in CI and skips elsewhere."""
    if ok:
        return
    msg = f"{what} is not available: {hint}"
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


@dataclass
class Hub:
    url: str
    state: Path
    admin_password: str
    user_password: str
    process: subprocess.Popen
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return self.url + "/services/hubgrid/api/v1/"

    @property
    def hub_api(self) -> str:
        return self.url + "/hub/api/"

    def login(self, user: str, password: str | None = None) -> requests.Response:
        """Log in through the hub's real login form; returns the response
        (302 on success) with ``.session`` attached."""
        s = requests.Session()
        s.get(self.url + "/hub/login", timeout=30)
        if password is None:
            password = self.admin_password if user == "admin" else self.user_password
        r = s.post(
            self.url + "/hub/login?next=",
            data={"username": user, "password": password, "_xsrf": s.cookies.get("_xsrf")},
            allow_redirects=False,
            timeout=30,
        )
        r.session = s
        return r

    def token(self, user: str) -> str:
        """A hub API token of ``user``, made after a real login (cached)."""
        if user not in self.tokens:
            r = self.login(user)
            assert r.status_code == 302, f"login of {user} failed: {r.status_code} {r.text[:300]}"
            s = r.session
            t = s.post(
                f"{self.hub_api}users/{user}/tokens",
                json={"note": "test"},
                headers={"X-XSRFToken": s.cookies.get("_xsrf")},
                timeout=30,
            )
            assert t.status_code == 201, t.text
            self.tokens[user] = t.json()["token"]
        return self.tokens[user]

    def call(self, method: str, path: str, auth: str | None = None, **kw) -> requests.Response:
        """Call the hubgrid API as ``auth``: a user name (hub token), a full
        Authorization header value, or None (anonymous)."""
        headers = kw.pop("headers", {})
        if auth is not None:
            headers["Authorization"] = auth if " " in auth else f"token {self.token(auth)}"
        return requests.request(method, self.api + path, headers=headers, timeout=30, **kw)

    def hub_call(self, method: str, path: str, user: str = "admin", **kw) -> requests.Response:
        headers = {"Authorization": f"token {self.token(user)}"}
        return requests.request(method, self.hub_api + path, headers=headers, timeout=30, **kw)

    def internal(self, method: str, path: str, **kw) -> requests.Response:
        token = (self.state / "hubgrid-internal-token").read_text().strip()
        return requests.request(
            method, self.api + path,
            headers={"Authorization": f"hubgrid-internal {token}"}, timeout=60, **kw,
        )

    def sync(self) -> dict:
        """Mirror the service into the hub now (instead of waiting for it)."""
        r = self.internal("POST", "internal/sync")
        assert r.status_code == 200, r.text
        return r.json()


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


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def hub(request, tmp_path_factory):
    chp = shutil.which("configurable-http-proxy")
    require("configurable-http-proxy", chp is not None, "run `make test` (it installs it from npm)")
    state = tmp_path_factory.mktemp(f"hub-{request.param}")
    drop = None
    env = dict(os.environ)
    if request.param == "postgres":
        env["HUBGRID_DB_URL"], drop = _postgres_database()
    port = free_port()
    env.update(
        HUBGRID_STATE_DIR=str(state),
        HUBGRID_BIND_URL=f"http://127.0.0.1:{port}",
        HUBGRID_HUB_PORT=str(free_port()),
        HUBGRID_PROXY_API_PORT=str(free_port()),
        HUBGRID_SERVICE_PORT=str(free_port()),
    )
    service_config = state / "service_config.py"
    service_config.write_text(
        "c = get_config()  # noqa\n"
        "c.HubgridService.reconcile_grace = 1\n"
        "c.HubgridService.log_level = 'INFO'\n"
    )
    env["HUBGRID_SERVICE_CONFIG"] = str(service_config)
    config = state / "test_config.py"
    config.write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(REPO / 'jupyterhub_config.py')!r})\n"
        "c.HubgridAuthenticator.auth_refresh_age = 2\n"
        "c.Spawner.poll_interval = 2\n"
        "c.JupyterHub.log_level = 'INFO'\n"
    )
    log = open(state / "hub.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(config)],
        cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    hub = Hub(
        url=f"http://127.0.0.1:{port}",
        state=state,
        admin_password="",
        user_password="",
        process=proc,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"hub exited {proc.returncode}: {(state / 'hub.log').read_text()[-3000:]}")
            try:
                if requests.get(hub.api + "openapi.json", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"hub did not come up: {(state / 'hub.log').read_text()[-3000:]}")
            time.sleep(0.3)
        hub.admin_password = (state / "admin-password").read_text().strip()
        hub.user_password = (state / "user-password").read_text().strip()
        yield hub
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log.close()
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


@pytest.fixture(scope="session")
def world(hub) -> World:
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
