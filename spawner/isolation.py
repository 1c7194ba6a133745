"""An isolated Docker session's network, decided without IO.

An isolated session runs in a network namespace of its own (Docker's
``none`` network: nothing but its loopback), so no other session and no
service of its node can be reached from it, nor it from them. Two Unix
sockets are its only ways in and out. Its directory on the node,
``<root>/<allocation>/``, is root's (the session cannot write it) and holds:

- ``session/``: the session's own (mode 0700, its uid), mounted at
  ``/run/hubgrid`` in that container and no other; its Jupyter server
  listens on ``session/jupyter.sock`` (``--ServerApp.sock``);
- ``jupyter.sock``: that socket pinned by the hub (spawner/sockpin.py: a
  hard link to the inode checked to be the session's own socket), which
  the hub and the proxy reach as ``http+unix://`` (configurable-http-proxy
  5 proxies HTTP and websockets to it) and the gateway's haproxy connects
  to: never the session's own name, which it could swap for a link;
- ``relay/hub.sock``: its relay (spawner/relay.py), which carries the hub's
  API and the hubgrid API only, bound by the hub in a directory only root
  writes, mounted read-only at ``/run/hubgrid-relay``; ``hubgrid-relay``
  makes it ``127.0.0.1:<relay_port>`` inside the session. A replica gets no
  relay.

An admin may give sessions an egress network instead of ``none``
(``egress_network``): a bridge whose containers cannot talk to each other.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import quote, urlparse, urlsplit

from hub_ext.config import SERVICE_NAME

from .builders import Mount
from .gatewayenv import relayed_gateway
from .relay import Route

#: the session's own directory inside the container
CONTAINER_DIR = "/run/hubgrid"
#: the relay's directory inside the container (read-only)
RELAY_DIR = "/run/hubgrid-relay"
SERVER_SOCKET = "jupyter.sock"
RELAY_SOCKET = "hub.sock"
#: the session's own and the relay's directories in the session's directory
SESSION_SUBDIR = "session"
RELAY_SUBDIR = "relay"
#: the port an isolated session's JUPYTERHUB_SERVICE_URL names: jupyter_server
#: refuses a socket with any port but its default (8888), and nothing listens on
#: a port in a network of one's own anyway
SERVER_PORT = 8888
#: Docker's network option that stops a bridge's containers talking to each other
ICC_OPTION = "com.docker.network.bridge.enable_icc"

#: JupyterHub lowercases a server URL's host, and the socket's path is that
#: host: the root may hold nothing an URL or the lowercasing would change
_ROOT = re.compile(r"^/[a-z0-9_./-]*$")
_ALLOCATION = re.compile(r"^[a-z0-9-]{1,64}$")


def check_root(root: str) -> str:
    """The session directories' root, or ValueError saying why it cannot be."""
    if not _ROOT.match(root) or "/../" in root + "/" or "//" in root:
        raise ValueError(f"session_socket_root {root!r}: an absolute path of lowercase "
                         "letters, digits, '_', '.', '-' and '/' (JupyterHub lowercases "
                         "the socket's URL)")
    return root.rstrip("/") or "/"


@dataclass(frozen=True)
class SessionNetwork:
    """Where one isolated session's sockets are, on the node and inside."""

    directory: str  # on the node
    relay_port: int

    @classmethod
    def of(cls, root: str, allocation: str, relay_port: int) -> SessionNetwork:
        if not _ALLOCATION.match(allocation):
            raise ValueError(f"allocation id {allocation!r} cannot name a directory")
        return cls(posixpath.join(check_root(root), allocation), relay_port)

    @property
    def session_dir(self) -> str:
        """The session's own directory (it binds its server's socket there)."""
        return posixpath.join(self.directory, SESSION_SUBDIR)

    @property
    def relay_dir(self) -> str:
        return posixpath.join(self.directory, RELAY_SUBDIR)

    @property
    def server_socket(self) -> str:
        """The server's socket as pinned by the hub: what everything outside
        the session connects to."""
        return posixpath.join(self.directory, SERVER_SOCKET)

    @property
    def relay_socket(self) -> str:
        return posixpath.join(self.relay_dir, RELAY_SOCKET)

    @property
    def server_url(self) -> str:
        """The Jupyter server's URL for the hub and the proxy."""
        return "http+unix://" + quote(self.server_socket, safe="")

    def mounts(self, relay: bool = True) -> tuple[Mount, ...]:
        """The session's own directory, writable, and (``relay``) the
        relay's, read-only."""
        own = Mount(self.session_dir, CONTAINER_DIR, read_only=False)
        return (own, Mount(self.relay_dir, RELAY_DIR, read_only=True)) if relay else (own,)

    def server_args(self) -> list[str]:
        return [f"--ServerApp.sock={posixpath.join(CONTAINER_DIR, SERVER_SOCKET)}",
                "--ServerApp.sock_mode=0600"]

    def environment(self, env: dict[str, str], hub_api_url: str,
                    service_api_url: str) -> dict[str, str]:
        """``env`` with the hub's, the hubgrid API's and the serving
        gateway's URLs as the session reaches them: through its relay on its
        own loopback."""
        local = f"http://127.0.0.1:{self.relay_port}"
        out = {**env,
               "HUBGRID_RELAY_PORT": str(self.relay_port),
               "HUBGRID_RELAY_SOCKET": posixpath.join(RELAY_DIR, RELAY_SOCKET),
               "HUBGRID_SERVER_SOCKET": posixpath.join(CONTAINER_DIR, SERVER_SOCKET),
               "JUPYTERHUB_API_URL": local + urlsplit(hub_api_url).path.rstrip("/")}
        activity = env.get("JUPYTERHUB_ACTIVITY_URL", "")
        if activity:
            out["JUPYTERHUB_ACTIVITY_URL"] = local + urlsplit(activity).path
        if service_api_url:
            out["HUBGRID_API_URL"] = local + urlsplit(service_api_url).path
        return relayed_gateway(out, local)


def engine_is_local(docker_url: str) -> bool:
    """Whether the engine at ``docker_url`` runs on this machine (its
    sessions' sockets are then files the hub and the proxy can open)."""
    parts = urlsplit(docker_url)
    if parts.scheme in ("unix", "npipe", ""):
        return parts.scheme == "unix" or not parts.scheme
    return (parts.hostname or "") in ("127.0.0.1", "localhost", "::1")


def session_api_url(public_hub_url: str, proxy_url: str, base_url: str) -> str:
    """The hubgrid API URL of sessions: the hub's public origin (from
    ``public_hub_url``) or else the proxy's bind URL, a wildcard host read as
    127.0.0.1; "" when neither is known."""
    parsed = urlparse(public_hub_url or proxy_url)
    if not parsed.scheme:
        return ""
    host = parsed.hostname or ""
    if not public_hub_url and host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    netloc = f"[{host}]" if ":" in host else host
    if parsed.port:
        netloc += f":{parsed.port}"
    return f"{parsed.scheme}://{netloc}{base_url}services/{SERVICE_NAME}/api/v1/"


def gateway_url(api_url: str) -> str:
    """The serving gateway beside the hubgrid API at ``api_url`` (under the
    same proxy: ``services/hubgrid-gateway/``); "" when it is not at the hub's
    usual ``services/hubgrid/api/v1/``."""
    suffix = "services/hubgrid/api/v1/"
    return api_url[:-len(suffix)] + "services/hubgrid-gateway/" if api_url.endswith(suffix) else ""


def relay_routes(hub_api_url: str, service_api_url: str,
                 gateway: str = "") -> tuple[Route, ...]:
    """What a session's relay carries: the hub's API (to the hub), the
    hubgrid API (to the service) and the serving gateway (through the hub's
    proxy, for the Lab's Chat page), each by its path prefix."""
    routes = []
    for url, strip in ((hub_api_url, ""), (service_api_url, "v1/"), (gateway, "")):
        if not url:
            continue
        parts = urlsplit(url)
        path = parts.path if parts.path.endswith("/") else parts.path + "/"
        if strip and path.endswith(strip):
            path = path[: -len(strip)]
        routes.append(Route(path, f"{parts.scheme}://{parts.netloc}"))
    return tuple(routes)


def egress_refusal(network: dict | None, name: str) -> str:
    """Why the Docker network ``name`` (its inspect output, None when
    missing) cannot carry sessions' egress, or "" when it can: it must be a
    bridge on which containers cannot talk to each other."""
    if network is None:
        return f"egress network {name!r} does not exist on this node"
    if network.get("Driver") != "bridge":
        return f"egress network {name!r} is a {network.get('Driver')!r} network, not a bridge"
    if (network.get("Options") or {}).get(ICC_OPTION) != "false":
        return (f"egress network {name!r} lets its containers talk to each other: create it "
                f"with -o {ICC_OPTION}=false")
    return ""
