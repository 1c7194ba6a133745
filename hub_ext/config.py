"""Config helper: wire hubgrid into a JupyterHub configuration.

In ``jupyterhub_config.py``::

    from hub_ext.config import configure
    configure(c, state_dir="/srv/jupyterhub")

It registers the hubgrid service (started and stopped by the hub), gives it
the hub role it needs to mirror users and groups, installs the
HubgridAuthenticator, and shares a generated internal secret between the two.
Unless set before, it lifts ``c.JupyterHub.concurrent_spawn_limit`` (0: no
limit), since sessions waiting in hubgrid's queue are pending spawns. It adds
``access:services!service=hubgrid`` and ``servers!user`` to
``c.Spawner.server_token_scopes`` (to the list or callable set before it, else
to the hub's default scopes), so a session's own token reaches the hubgrid API
and starts and stops its owner's sessions; a list set after ``configure()``
replaces it. Unless set before, the proxy class is
``hub_ext.proxyclass.HubgridProxy`` (no route to an endpoint's replicas).
The hub checks its managed services every 2 s instead of 30, so a crashed
service is started again within seconds (``hub_ext.servicewatch``).
"""

from __future__ import annotations

import inspect
import os
import secrets
import sys
from pathlib import Path

from . import servicewatch

SERVICE_NAME = "hubgrid"
#: the serving gateway (gateway/): endpoints' URLs and the OpenAI-compatible API
GATEWAY_NAME = "hubgrid-gateway"

# what the service may do in the hub: create users, mirror groups, and end
# the tokens and servers of deactivated users
SERVICE_SCOPES = [
    "admin:users",
    "read:tokens",
    "tokens",
    "read:servers",
    "admin:server_state",
    "servers",
    "list:users",
    "read:users",
    "admin:groups",
    "groups",
    "list:groups",
    "read:groups",
]


#: what a session's own token (``$JUPYTERHUB_API_TOKEN``) may do beyond the
#: hub's default ``server`` role: call the hubgrid API as the session's owner,
#: and start, stop and read the owner's own servers (``servers!user``: no other
#: user's, and nothing else of the owner's) -- the Lab extension and the
#: ``hubgrid`` command in a session start and stop sessions through the hub
SESSION_SCOPES = [f"access:services!service={SERVICE_NAME}", "servers!user"]


def server_token_scopes(configured):
    """``c.Spawner.server_token_scopes`` extended with :data:`SESSION_SCOPES`.

    ``configured``: what the config set before (a list, a callable, or None
    for the hub's default, the scopes of its ``server`` role). The hub gives
    the token only the subset its owner holds (hubgrid users hold
    ``access:services!service=hubgrid`` through the ``hubgrid-user`` role, and
    ``servers!user`` through the hub's default ``user`` role, ``self``).
    """
    if callable(configured):
        async def scopes(spawner):
            chosen = configured(spawner)
            if inspect.isawaitable(chosen):
                chosen = await chosen
            return [*chosen, *(s for s in SESSION_SCOPES if s not in chosen)]

        return scopes
    if not configured:
        from jupyterhub.roles import get_default_roles

        configured = next(r["scopes"] for r in get_default_roles() if r["name"] == "server")
    return [*configured, *(s for s in SESSION_SCOPES if s not in configured)]


def read_or_create_secret(path: Path, nbytes: int = 32) -> str:
    """A secret kept in ``path`` (mode 0600), created on first use."""
    path = Path(path)
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(nbytes)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value


def configure(
    c,
    *,
    state_dir: str | os.PathLike,
    service_port: int = 10101,
    db_url: str | None = None,
    bootstrap_superadmin: str = "",
    default_domain: str = "default",
    service_config_file: str | os.PathLike | None = None,
    environment: dict[str, str] | None = None,
    gateway_port: int | None = 10102,
) -> None:
    """Add the hubgrid service and authenticator to config ``c``.

    ``gateway_port``: where the serving gateway (``hubgrid-gateway``, under
    ``/services/hubgrid-gateway/``) listens on loopback; None: no gateway.

    ``service_config_file``: a Python config file for the service
    (``c.HubgridService.hub_sync_interval = 30``, ...); see
    docs/config-reference.md.
    """
    state = Path(state_dir).resolve()
    state.mkdir(parents=True, exist_ok=True)
    servicewatch.install()  # a crashed service is started again within seconds
    token = read_or_create_secret(state / "hubgrid-internal-token")
    db_url = db_url or f"sqlite:///{state / 'hubgrid.sqlite'}"
    service_url = f"http://127.0.0.1:{service_port}"
    env = {
        "HUBGRID_INTERNAL_TOKEN": token,
        "HUBGRID_DB_URL": db_url,
        "HUBGRID_BOOTSTRAP_SUPERADMIN": bootstrap_superadmin,
        "PYTHONUNBUFFERED": "1",
    }
    if service_config_file:
        env["HUBGRID_CONFIG_FILE"] = str(Path(service_config_file).resolve())
    if gateway_port:
        # the console's Chat: the service forwards its gateway calls there
        env["HUBGRID_GATEWAY_URL"] = f"http://127.0.0.1:{gateway_port}/services/{GATEWAY_NAME}/"
    env.update(environment or {})
    c.JupyterHub.services.append(
        {
            "name": SERVICE_NAME,
            "url": service_url,
            "command": [sys.executable, "-m", "quota_service",
                        f"--HubgridService.default_domain={default_domain}"],
            "environment": env,
            "cwd": str(state),
            "oauth_no_confirm": True,
            "display": True,
        }
    )
    if gateway_port:
        c.JupyterHub.services.append(
            {
                "name": GATEWAY_NAME,
                "url": f"http://127.0.0.1:{gateway_port}",
                "command": [sys.executable, "-m", "gateway"],
                "environment": {
                    "HUBGRID_INTERNAL_TOKEN": token,
                    "HUBGRID_API_URL": f"{service_url}/services/{SERVICE_NAME}/api/v1/",
                    "HUBGRID_GATEWAY_RUN_DIR": str(state / "gateway"),
                    "PYTHONUNBUFFERED": "1",
                },
                "cwd": str(state),
            }
        )
    c.JupyterHub.load_roles.append(
        {
            "name": "hubgrid-service",
            "description": "hubgrid mirrors its users and projects into the hub",
            "scopes": SERVICE_SCOPES,
            "services": [SERVICE_NAME],
        }
    )
    # hubgrid queues sessions: a pending spawn costs one long-poll, and the
    # queue's own limits (pending limits of the resource policies) bound it;
    # JupyterHub's default of 100 concurrent spawns would refuse the 101st
    # waiting user with 429. A value the config set before stays.
    if "concurrent_spawn_limit" not in c.JupyterHub:
        c.JupyterHub.concurrent_spawn_limit = 0
    # sessions call the hubgrid API with their own token (the Lab extension's
    # server side, the ``hubgrid`` command): extend the scopes set before, or
    # the hub's default ones
    c.Spawner.server_token_scopes = server_token_scopes(
        c.Spawner.server_token_scopes if "server_token_scopes" in c.Spawner else None)
    # hubgrid's templates of hub pages (hub_ext/templates: e.g. the
    # spawn-pending page says a start waits in the queue and offers Cancel),
    # before any set before and JupyterHub's own
    templates = str(Path(__file__).resolve().parent / "templates")
    paths = list(c.JupyterHub.template_paths) if "template_paths" in c.JupyterHub else []
    if templates not in paths:
        c.JupyterHub.template_paths = [templates, *paths]
    c.JupyterHub.authenticator_class = "hubgrid"
    # no proxy route to an endpoint's replicas (hub_ext/proxyclass.py); a
    # proxy class set before stays (it must then skip them itself)
    if "proxy_class" not in c.JupyterHub:
        c.JupyterHub.proxy_class = "hub_ext.proxyclass.HubgridProxy"
    c.HubgridAuthenticator.service_api_url = f"{service_url}/services/{SERVICE_NAME}/api/v1/"
    c.HubgridAuthenticator.internal_token = token
