"""A real Jupyter server with the jupyterlab_hubgrid server extension, in the
test's event loop (the way pytest-jupyter's ``jp_serverapp`` runs one; its
plugin is not loaded because it takes over every async test of the session).

``lab_server(tmp_path, monkeypatch, user="alice", **hubgrid)`` starts
``ServerApp`` with only this extension enabled, ``c.HubgridLab.<name>`` set
from ``hubgrid``, and token logins identified as ``user`` (stock
jupyter_server names them "Anonymous ..."; under jupyterhub-singleuser the
user is the hub user): an async context manager yielding a :class:`Lab`.
"""

from __future__ import annotations

import json
import re
from contextlib import asynccontextmanager
from dataclasses import dataclass

import jupyter_core.paths
from jupyter_server.auth.identity import IdentityProvider, User
from jupyter_server.serverapp import ServerApp
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port
from traitlets import Unicode
from traitlets.config import Config

TOKEN = "lab-test-token"
#: what must not leak from the environment into the server under test
ENV = ("HUBGRID_API_URL", "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_USER", "JUPYTERHUB_API_URL",
       "JUPYTERHUB_SERVICE_PREFIX", "JUPYTERHUB_CLIENT_ID", "JUPYTER_CONFIG_PATH",
       "HUBGRID_ACCESS_KEY", "HUBGRID_SECRET_KEY")


class NamedIdentity(IdentityProvider):
    """Token logins are the user ``username`` (a test double: the stock
    provider invents an anonymous name per login)."""

    username = Unicode("alice", help="who a token login is").tag(config=True)

    def generate_anonymous_user(self, handler):
        return User(username=self.username)


@dataclass
class Lab:
    app: ServerApp
    url: str  # http://127.0.0.1:PORT/ (the server's base_url is /)
    client: AsyncHTTPClient
    #: cookies a response set, sent with ``call(cookies=True)``
    jar: dict

    async def call(self, method: str, path: str, *, json_body=None, body: bytes | None = None,
                   headers: dict | None = None, token: bool = True, cookies: bool = False):
        """(response, decoded body: JSON when JSON, else bytes)."""
        headers = dict(headers or {})
        if token:
            headers["Authorization"] = f"token {TOKEN}"
        if cookies and self.jar:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.jar.items())
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers.setdefault("Content-Type", "application/json")
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        resp = await self.client.fetch(self.url + path, method=method, headers=headers,
                                       body=body, raise_error=False, follow_redirects=False,
                                       allow_nonstandard_methods=True)
        for cookie in resp.headers.get_list("Set-Cookie"):
            m = re.match(r"([^=;\s]+)=([^;]*)", cookie)
            if m:
                self.jar[m.group(1)] = m.group(2)
        if resp.headers.get("Content-Type", "").startswith("application/json") and resp.body:
            return resp, json.loads(resp.body)
        return resp, resp.body


def isolate(tmp_path, monkeypatch) -> None:
    """No Jupyter config, data or runtime file of this machine (its
    jupyter_server_config.d enables jupyterlab and others) reaches the server."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    for name in ("config", "data", "runtime"):
        (tmp_path / "jupyter" / name).mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(f"JUPYTER_{name.upper()}_DIR", str(tmp_path / "jupyter" / name))
    for name in ("ENV_CONFIG_PATH", "SYSTEM_CONFIG_PATH"):
        monkeypatch.setattr(jupyter_core.paths, name, [str(tmp_path / "jupyter" / "config")])


@asynccontextmanager
async def lab_server(tmp_path, monkeypatch, user: str = "alice", max_body_size: int | None = None,
                     **hubgrid):
    isolate(tmp_path, monkeypatch)
    (tmp_path / "lab-root").mkdir(exist_ok=True)
    sock, port = bind_unused_port()
    c = Config()
    c.ServerApp.jpserver_extensions = {"jupyterlab_hubgrid": True}
    c.ServerApp.root_dir = str(tmp_path / "lab-root")
    c.ServerApp.ip = "127.0.0.1"
    c.ServerApp.port = port
    c.ServerApp.port_retries = 0
    c.ServerApp.open_browser = False
    c.ServerApp.allow_root = True
    c.ServerApp.log_level = "WARN"
    c.ServerApp.identity_provider_class = NamedIdentity
    c.IdentityProvider.token = TOKEN
    c.NamedIdentity.username = user
    for name, value in hubgrid.items():
        setattr(c.HubgridLab, name, value)
    ServerApp.clear_instance()
    app = server = client = None
    try:
        app = ServerApp.instance(config=c)
        app.init_signal = lambda: None  # the test runner owns the signals
        app.initialize(argv=[], new_httpserver=False)
        app.start_app()
        # Jupyter's own limit on request bodies (512 MiB in life) when given
        server = HTTPServer(app.web_app, **({"max_body_size": max_body_size}
                                            if max_body_size else {}))
        server.add_sockets([sock])
        client = AsyncHTTPClient(force_instance=True)
        yield Lab(app, f"http://127.0.0.1:{port}/", client, {})
    finally:
        if client is not None:
            client.close()
        if server is not None:
            server.stop()
            await server.close_all_connections()
        sock.close()
        if app is not None:
            if getattr(app, "web_app", None) is not None and "hubgrid_lab" in app.web_app.settings:
                app.web_app.settings["hubgrid_lab"].close()
            await app._cleanup()
        ServerApp.clear_instance()
