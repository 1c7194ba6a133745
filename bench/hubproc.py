"""A real JupyterHub (with configurable-http-proxy and the hubgrid service) in
a subprocess, for tests and benchmarks.

``launch_hub(state)`` runs ``jupyterhub -f jupyterhub_config.py`` (the same
config ``make run`` uses) with test overrides on free loopback ports and
waits until the hubgrid service answers through the proxy; ``stop_hub``
stops its whole process group. A second launch on the same state directory
and ports is a hub restart.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Hub:
    url: str
    state: Path
    admin_password: str
    user_password: str
    process: subprocess.Popen
    ports: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    #: browser sessions of ``login``, closed by ``stop_hub`` (a session left
    #: to the garbage collector leaves its sockets unclosed)
    sessions: list = field(default_factory=list)

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
        self.sessions.append(s)
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
        kw.setdefault("timeout", 30)
        return requests.request(method, self.hub_api + path, headers=headers, **kw)

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


def wait_for_service(api: str, proc: subprocess.Popen, timeout: float = 60,
                     log: Path | None = None) -> None:
    """Wait until a service started as ``proc`` answers ``api``openapi.json;
    SystemExit (with the end of ``log``) if it exits or does not answer."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(api + "openapi.json", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
            raise SystemExit(f"the service did not start: {tail}")
        time.sleep(0.2)


#: the hub checks whether a managed service (hubgrid, its gateway) is up with
#: exponential backoff and full jitter, pauses of up to 0.2, 0.4, ... 5 s
#: (``jupyterhub.utils.wait_for_http_server``): a service up after 5-6 s is
#: found 1.5 s late on average. The test suite (tests/conftest.py) sets this
#: to 0.25 s for its hubs with overrides, at every hub start and restart;
#: None (benchmarks, ``make run``) keeps JupyterHub's own pauses, which also
#: time the servers of spawners that do not wait for them themselves
CHECK_MAX_WAIT: float | None = None


def _hub_checks() -> str:
    if CHECK_MAX_WAIT is None:
        return ""
    return ("import functools, jupyterhub.utils\n"
            "jupyterhub.utils.exponential_backoff = functools.partial(\n"
            f"    jupyterhub.utils.exponential_backoff, max_wait={CHECK_MAX_WAIT!r})\n")


def launch_hub(state: Path, env_extra: dict | None = None, config: str = "",
               service_config: str = "", ports: dict | None = None,
               test_overrides: bool = True) -> Hub:
    """Start ``jupyterhub -f jupyterhub_config.py`` with test overrides in
    ``state`` (reused: a second launch on the same dir and ``ports`` is a
    restart) and wait until the hubgrid service answers through the proxy.

    ``test_overrides=False``: exactly the README's ``make run`` configuration
    (``config`` and ``service_config`` must then be empty); only the ports and
    the state directory differ."""
    if not test_overrides and (config or service_config):
        raise ValueError("test_overrides=False runs jupyterhub_config.py as it is")
    if shutil.which("configurable-http-proxy") is None:
        raise RuntimeError("configurable-http-proxy is not on PATH (`make install` puts it "
                           "into node_modules/.bin)")
    env = dict(os.environ)
    if test_overrides:  # no declared demo GPUs or CPUs unless a test asks for them
        env["HUBGRID_DEMO_GPUS"] = "0"
        env["HUBGRID_DEMO_CPUS"] = "0"
    env.update(env_extra or {})
    ports = ports or {}
    for key in ("HUBGRID_HUB_PORT", "HUBGRID_PROXY_API_PORT", "HUBGRID_SERVICE_PORT",
                "HUBGRID_GATEWAY_PORT", "port"):
        ports.setdefault(key, str(free_port()))
    port = ports["port"]
    env.update({k: v for k, v in ports.items() if k != "port"})
    env.update(HUBGRID_STATE_DIR=str(state), HUBGRID_BIND_URL=f"http://127.0.0.1:{port}")
    config_file = REPO / "jupyterhub_config.py"
    if test_overrides:
        (state / "service_config.py").write_text(
            "c = get_config()  # noqa\n"
            "c.HubgridService.reconcile_grace = 1\n" + service_config
        )
        env["HUBGRID_SERVICE_CONFIG"] = str(state / "service_config.py")
        config_file = state / "test_config.py"
        config_file.write_text(
            "c = get_config()  # noqa\n"
            f"load_subconfig({str(REPO / 'jupyterhub_config.py')!r})\n"
            "c.HubgridAuthenticator.auth_refresh_age = 2\n"
            "c.Spawner.poll_interval = 2\n"
            "c.JupyterHub.log_level = 'INFO'\n" + _hub_checks() + config
        )
    log = open(state / "hub.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(config_file)],
        cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    log.close()
    hub = Hub(url=f"http://127.0.0.1:{port}", state=state, admin_password="",
              user_password="", process=proc, ports=ports)
    deadline = time.monotonic() + TIMEOUT
    while True:
        if proc.poll() is not None:
            stop_hub(hub)
            raise RuntimeError(f"hub exited {proc.returncode}: {(state / 'hub.log').read_text()[-3000:]}")
        try:
            if requests.get(hub.api + "openapi.json", timeout=2).status_code == 200:
                break
        except requests.ConnectionError:
            pass
        if time.monotonic() > deadline:
            stop_hub(hub)
            raise RuntimeError(f"hub did not come up: {(state / 'hub.log').read_text()[-3000:]}")
        time.sleep(0.3)
    hub.admin_password = (state / "admin-password").read_text().strip()
    hub.user_password = (state / "user-password").read_text().strip()
    return hub


def stop_hub(hub: Hub) -> None:
    """Stop the hub's whole process group (proxy and service included)."""
    for s in hub.sessions:
        s.close()
    hub.sessions.clear()
    proc = hub.process
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
