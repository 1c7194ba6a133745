"""The hubgrid service's real tornado app over the ``tenancy`` world, without a hub.

``served`` initialises ``HubgridService`` on the test's database (SQLite and
PostgreSQL, the same one the ``tenancy`` and ``cluster`` fixtures write) and
serves it on a free loopback port in the test's event loop. Callers
authenticate with keypairs (a keypair acts as its owner), the hub's
endpoints with the internal token. Import the fixture into a test module::

    from service_app import served  # noqa: F401
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field

import pytest
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port

from quota_service.tenancy import accounts as manager
from quota_service.api import openapi
from quota_service.app import HubgridService
from quota_service.core.schemas import KeypairCreate

INTERNAL_TOKEN = "internal-test-token"

#: the OpenAPI document depends on the code and its two arguments only, and
#: make_app built it anew for every app (0.1-0.3 s of pydantic schemas, some
#: 800 tests): each served app gets its own copy of the one built first
_built_document = functools.cache(openapi.document)


def _document(prefix: str, cookie_name: str) -> dict:
    return copy.deepcopy(_built_document(prefix, cookie_name))


HUB_ENV = (
    "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "JUPYTERHUB_SERVICE_PREFIX",
    "JUPYTERHUB_SERVICE_URL", "JUPYTERHUB_COOKIE_SECRET", "JUPYTERHUB_BASE_URL",
    "HUBGRID_DB_URL", "HUBGRID_CONFIG_FILE", "HUBGRID_INTERNAL_TOKEN",
    "HUBGRID_BOOTSTRAP_SUPERADMIN",
)


@dataclass
class Served:
    svc: HubgridService
    world: object  # conftest.World
    api: str
    client: AsyncHTTPClient
    _keys: dict[str, str] = field(default_factory=dict)

    def auth(self, user: str) -> str:
        """An Authorization header for ``user`` (a keypair, made once)."""
        if user == "internal":
            return f"hubgrid-internal {INTERNAL_TOKEN}"
        if user not in self._keys:
            with self.world.tx() as s:
                root = self.world.principal("root")
                kp = manager.create_keypair(s, root, KeypairCreate(user=user), self.svc.clock())
            self._keys[user] = f"Keypair {kp['access_key']}:{kp['secret_key']}"
        return self._keys[user]

    async def call(self, method: str, path: str, user: str | None = None, *, json_body=None,
                   body: bytes | None = None):
        """(response, decoded body: JSON when JSON, else text)."""
        headers = {"Authorization": self.auth(user)} if user else {}
        if json_body is not None:
            body = json.dumps(json_body).encode()
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        resp = await self.client.fetch(self.api + path, method=method, headers=headers,
                                       body=body, raise_error=False,
                                       allow_nonstandard_methods=True)
        ctype = resp.headers.get("Content-Type", "")
        if ctype.startswith("application/json") and resp.body:
            return resp, json.loads(resp.body)
        return resp, resp.body.decode("utf-8", errors="replace")


@pytest.fixture
async def served(db_url, tenancy, tmp_path, monkeypatch):
    for name in HUB_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(openapi, "document", _document)
    sock, port = bind_unused_port()
    svc = HubgridService(
        db_url=db_url,
        service_url=f"http://127.0.0.1:{port}",
        internal_token=INTERNAL_TOKEN,
        register_local_node=False,
        scan_images_at_start=False,
        session_log_dir=str(tmp_path / "session-logs"),
        vfolder_hosts={"local": {"path": str(tmp_path / "vfolders")}},
    )
    server = client = None
    try:
        svc.initialize([])
        assert svc.hub_auth is None, "a hub token leaked into the test"
        server = HTTPServer(svc.make_app())
        server.add_sockets([sock])
        client = AsyncHTTPClient(force_instance=True)
        yield Served(svc, tenancy, f"http://127.0.0.1:{port}{svc.api_prefix}", client)
    finally:
        if client is not None:
            client.close()
        if server is not None:
            server.stop()
            await server.close_all_connections()
        sock.close()
        if hasattr(svc, "engine"):
            svc.engine.dispose()
