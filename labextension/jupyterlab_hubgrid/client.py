"""A Python client of the hubgrid API (and of the few JupyterHub calls a
session's life needs), for the ``hubgrid`` command, notebooks and scripts.

Configuration comes from the environment (:meth:`Settings.from_env`):

- ``HUBGRID_API_URL``: the API root, e.g.
  ``https://hub.example.org/services/hubgrid/api/v1``;
- a keypair, ``HUBGRID_ACCESS_KEY`` and ``HUBGRID_SECRET_KEY`` (sent as
  ``Authorization: Keypair ACCESS:SECRET``), or else a JupyterHub token,
  ``JUPYTERHUB_API_TOKEN`` (``Authorization: token ...``): inside a hubgrid
  session the session's own token, so it acts as the session's owner;
- for starting and stopping sessions (JupyterHub servers) the hub's API:
  ``JUPYTERHUB_API_URL`` (set in every session; elsewhere derived from
  ``HUBGRID_API_URL``: ``https://hub/services/...`` -> ``https://hub/hub/api``)
  with ``JUPYTERHUB_API_TOKEN``.

Amounts are exact (``amounts``): JSON numbers are read as
:class:`~decimal.Decimal`, and the slot maps of the answers (``slots``,
``total_resource_slots``, ``capacity``, ...) as Decimals too, so three
sessions of 0.3 GPU add up to 0.9. Every refusal is a :class:`ClientError` carrying the service's status
and message; an unreachable service is a :class:`ServiceUnreachable`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import IO, Any, Iterator, Mapping
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from .amounts import (SLOTS, compose_quota, dumps, exact, format_amount, format_bytes,
                      format_slot, loads)

__all__ = [
    "ClientError", "ServiceUnreachable", "NotConfigured", "Settings", "HubgridClient",
    "loads", "dumps", "exact", "format_amount", "format_bytes", "format_slot",
    "compose_quota", "SLOTS",
]

DEFAULT_TIMEOUT = 30.0


# --- errors --------------------------------------------------------------------

class ClientError(Exception):
    """A refusal or failure, with the service's HTTP status (None when no
    answer came) and its message."""

    def __init__(self, status: int | None, message: str, reason: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.status}: {self.message}" if self.status else self.message


class ServiceUnreachable(ClientError):
    """No answer: the connection failed or timed out."""

    def __init__(self, message: str):
        super().__init__(None, message, "unreachable")


class NotConfigured(ClientError):
    """The environment does not say where the service is or who is calling."""

    def __init__(self, message: str):
        super().__init__(None, message, "not-configured")


# --- settings ------------------------------------------------------------------------

def hub_api_from(api_url: str) -> str | None:
    """The hub's API next to a service URL reached through the proxy:
    ``https://h/base/services/hubgrid/api/v1`` -> ``https://h/base/hub/api``."""
    parts = urlsplit(api_url)
    path, sep, _rest = parts.path.partition("/services/")
    if not sep:
        return None
    return urlunsplit((parts.scheme, parts.netloc, path + "/hub/api", "", ""))


@dataclass(frozen=True)
class LogPart:
    """A read of a session's log: its text, and the positions (bytes of all
    the output the session wrote) where that text begins and ends."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Settings:
    """Where the service is and how to authenticate, read once."""

    api_url: str
    #: the Authorization header value for the service
    authorization: str
    #: "keypair" or "token"
    credential: str
    access_key: str | None = None
    hub_api_url: str | None = None
    hub_token: str | None = None

    def __repr__(self) -> str:  # never show a secret
        return (f"Settings(api_url={self.api_url!r}, credential={self.credential!r}, "
                f"access_key={self.access_key!r}, hub_api_url={self.hub_api_url!r})")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """From ``HUBGRID_API_URL`` and a keypair (``HUBGRID_ACCESS_KEY``,
        ``HUBGRID_SECRET_KEY``) or else ``JUPYTERHUB_API_TOKEN``;
        NotConfigured saying what is missing."""
        env = os.environ if env is None else env
        api_url = (env.get("HUBGRID_API_URL") or "").strip()
        if not api_url:
            raise NotConfigured(
                "HUBGRID_API_URL is not set: export the hubgrid API's URL, e.g. "
                "https://<hub>/services/hubgrid/api/v1")
        if urlsplit(api_url).scheme not in ("http", "https"):
            raise NotConfigured(f"HUBGRID_API_URL must be an http(s) URL, not {api_url!r}")
        api_url = api_url.rstrip("/")
        access, secret = env.get("HUBGRID_ACCESS_KEY", ""), env.get("HUBGRID_SECRET_KEY", "")
        token = env.get("JUPYTERHUB_API_TOKEN", "")
        hub_api = (env.get("JUPYTERHUB_API_URL") or "").rstrip("/") or hub_api_from(api_url)
        if access or secret:
            if not (access and secret):
                missing = "HUBGRID_SECRET_KEY" if access else "HUBGRID_ACCESS_KEY"
                raise NotConfigured(f"{missing} is not set: a keypair needs both keys")
            return cls(api_url, f"Keypair {access}:{secret}", "keypair", access,
                       hub_api, token or None)
        if token:
            return cls(api_url, f"token {token}", "token", None, hub_api, token)
        raise NotConfigured(
            "no credentials: set HUBGRID_ACCESS_KEY and HUBGRID_SECRET_KEY (a keypair: "
            "POST keypairs) or JUPYTERHUB_API_TOKEN (set in every hubgrid session)")


# --- the client ----------------------------------------------------------------------

def _q(segment: str) -> str:
    return quote(segment, safe="")


class HubgridClient:
    """Calls the hubgrid API (and the hub's, for servers) as one user.

    Use as a context manager, or call :meth:`close`."""

    def __init__(self, settings: Settings, *, timeout: float = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None):
        self.settings = settings
        self._http = httpx.Client(timeout=timeout, transport=transport)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **kw) -> HubgridClient:
        return cls(Settings.from_env(env), **kw)

    def __enter__(self) -> HubgridClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- plumbing ------------------------------------------------------------------

    def _send(self, method: str, url: str, what: str, **kw) -> httpx.Response:
        try:
            resp = self._http.request(method, url, **kw)
        except httpx.TimeoutException as e:
            raise ServiceUnreachable(f"{what} at {url.split('?')[0]} did not answer in time "
                                     f"({type(e).__name__})") from None
        except httpx.TransportError as e:
            raise ServiceUnreachable(f"cannot reach {what} at {url.split('?')[0]}: "
                                     f"{e or type(e).__name__}") from None
        if resp.status_code >= 400:
            raise self._error(resp)
        return resp

    @staticmethod
    def _error(resp: httpx.Response) -> ClientError:
        """The JSON message of a refusal (the service's and the hub's look alike)."""
        try:
            body = loads(resp.content)
        except (ValueError, UnicodeDecodeError):
            body = None
        if isinstance(body, dict) and body.get("message"):
            return ClientError(resp.status_code, str(body["message"]), str(body.get("reason", "")))
        text = resp.text.strip()[:200] if resp.content else ""
        return ClientError(resp.status_code, text or resp.reason_phrase or "error")

    @staticmethod
    def _decode(resp: httpx.Response) -> Any:
        if resp.status_code == 204 or not resp.content:
            return None
        if resp.headers.get("Content-Type", "").startswith("application/json"):
            return exact(loads(resp.content))
        return resp.text

    def request(self, method: str, path: str, *, params: Mapping | None = None,
                json_body: Any = None, **kw) -> Any:
        """Call the service; the answer decoded (exact JSON, text, or None)."""
        return self._decode(self.response(method, path, params=params, json_body=json_body, **kw))

    def response(self, method: str, path: str, *, params: Mapping | None = None,
                 json_body: Any = None, **kw) -> httpx.Response:
        """Call the service; its answer as it came (headers too)."""
        headers = {"Authorization": self.settings.authorization, **kw.pop("headers", {})}
        if json_body is not None:
            kw["content"] = dumps(json_body, indent=None).encode()
            headers["Content-Type"] = "application/json"
        params = {k: v for k, v in (params or {}).items() if v is not None}
        url = f"{self.settings.api_url}/{path}"
        return self._send(method, url, "the hubgrid service", params=params, headers=headers, **kw)

    def _hub(self) -> tuple[str, dict]:
        s = self.settings
        if not s.hub_api_url or not s.hub_token:
            raise NotConfigured(
                "sessions start and stop through JupyterHub: set JUPYTERHUB_API_TOKEN (set "
                "in every session; elsewhere a token from /hub/token) and, outside a session, "
                "JUPYTERHUB_API_URL if it is not next to HUBGRID_API_URL")
        return s.hub_api_url, {"Authorization": f"token {s.hub_token}"}

    def hub_request(self, method: str, path: str, *, json_body: Any = None) -> httpx.Response:
        """Call the hub's REST API with the hub token (servers start and stop there)."""
        base, headers = self._hub()
        kw = {}
        if json_body is not None:
            kw["content"] = dumps(json_body, indent=None).encode()
            headers["Content-Type"] = "application/json"
        return self._send(method, f"{base}/{path}", "JupyterHub", headers=headers, **kw)

    # --- who am I, limits ----------------------------------------------------------

    def me(self) -> dict:
        return self.request("GET", "me")

    def keypair(self, access_key: str) -> dict:
        return self.request("GET", f"keypairs/{_q(access_key)}")

    def resource_policies(self) -> list[dict]:
        return self.request("GET", "resource-policies")

    def resource_groups(self) -> list[dict]:
        return self.request("GET", "resource-groups")

    def nodes(self) -> list[dict]:
        return self.request("GET", "nodes")

    def my_policy(self, me: Mapping | None = None) -> dict | None:
        """The resource policy that binds me: my keypair's when I call with
        one that names a policy, else my user's."""
        me = me or self.me()
        name = me.get("resource_policy")
        if self.settings.credential == "keypair" and self.settings.access_key:
            name = self.keypair(self.settings.access_key).get("resource_policy") or name
        if not name:
            return None
        return next((p for p in self.resource_policies() if p.get("name") == name), None)

    def quota(self) -> dict:
        """My limits and use at every level (see :func:`compose_quota`)."""
        me = self.me()
        policy = self.my_policy(me)
        active = self.allocations("allocated") + self.allocations("pending")
        return compose_quota(me, policy, active, self.folders())

    # --- sessions (allocations) ------------------------------------------------------

    def allocations(self, state: str | None = None, user: str | None = None) -> list[dict]:
        return self.request("GET", "allocations", params={"state": state, "user": user})

    def allocation(self, allocation_id: str) -> dict:
        return self.request("GET", f"allocations/{_q(allocation_id)}")

    def mounts(self, allocation_id: str) -> dict:
        """The session's folders (``live``: mounted while it ran) and
        whether it can have more mounted now (``live_mounts``)."""
        return self.request("GET", f"allocations/{_q(allocation_id)}/mounts")

    def mount_folder(self, allocation_id: str, folder: str) -> dict:
        """Mount a folder (name or id) into the running session."""
        return self.request("POST", f"allocations/{_q(allocation_id)}/mounts",
                            json_body={"folder": folder})

    def dry_run(self, body: Mapping) -> dict:
        """Would this request fit now? (verdict, fits_now, node, gpus, reasons)"""
        return self.request("POST", "allocations/dry-run", json_body=body)

    def release(self, allocation_id: str) -> None:
        """Release an allocation made through the API, or cancel a pending one."""
        self.request("DELETE", f"allocations/{_q(allocation_id)}")

    def log(self, allocation_id: str, tail: int | None = None) -> str:
        return self.log_part(allocation_id, tail=tail).text

    def log_part(self, allocation_id: str, *, tail: int | None = None,
                 offset: int | None = None) -> LogPart:
        """The log (its last ``tail`` bytes), or the output from position
        ``offset`` on; with where it begins and ends (follow with ``offset=end``)."""
        resp = self.response("GET", f"allocations/{_q(allocation_id)}/logs",
                             params={"tail": tail, "offset": offset})
        return LogPart(resp.text, int(resp.headers.get("X-Hubgrid-Log-Start", 0)),
                       int(resp.headers.get("X-Hubgrid-Log-End", 0)))

    def images(self) -> list[dict]:
        return self.request("GET", "images")

    # --- servers, through the hub ------------------------------------------------------

    @staticmethod
    def _server_path(user: str, server: str) -> str:
        return f"users/{_q(user)}/servers/{_q(server)}" if server else f"users/{_q(user)}/server"

    def start_server(self, user: str, server: str, options: Mapping) -> bool:
        """Start ``user``'s (named) server with ``options`` as user_options;
        True when it is up already (201), False while it starts (202)."""
        resp = self.hub_request("POST", self._server_path(user, server),
                                json_body={"user_options": dict(options)})
        return resp.status_code == 201

    def stop_server(self, user: str, server: str, *, unwind_timeout: float = 60.0,
                    poll: float = 0.5) -> bool:
        """Stop it; True when stopped (204, or gone), False while it stops (202).

        A stop while the start is pending: JupyterHub cancels the start and,
        when it has not unwound within a second (the spawner gives back its
        allocation first), answers 500 "pending spawn". Then the stop is asked
        again once the hub no longer shows the start pending (at most
        ``unwind_timeout`` seconds; after that a 409 ClientError)."""
        path = self._server_path(user, server)
        try:
            return self.hub_request("DELETE", path).status_code == 204
        except ClientError as e:
            if e.status is None or e.status < 500:
                raise
        deadline = time.monotonic() + unwind_timeout
        while True:
            model = self.hub_user(user).get("servers", {}).get(server)
            if model is None:
                return True
            if model.get("pending") != "spawn":
                return self.hub_request("DELETE", path).status_code == 204
            if time.monotonic() > deadline:
                raise ClientError(409, f"session {server or '(default)'} is still starting "
                                       f"{unwind_timeout:g} s after JupyterHub was asked to stop "
                                       "it: stop it again in a moment", "still-starting")
            time.sleep(poll)

    def hub_user(self, user: str) -> dict:
        return exact(loads(self.hub_request("GET", f"users/{_q(user)}").content))

    def server_progress(self, user: str, server: str) -> Iterator[dict]:
        """The hub's progress events of a starting server (``message``,
        ``progress``; the last has ``ready`` or ``failed``), as they come."""
        base, headers = self._hub()
        url = f"{base}/{self._server_path(user, server)}/progress"
        try:
            with self._http.stream("GET", url, headers=headers,
                                   timeout=httpx.Timeout(DEFAULT_TIMEOUT, read=None)) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise self._error(resp)
                for line in resp.iter_lines():
                    if line.startswith("data:"):
                        event = loads(line[5:].strip() or "{}")
                        yield event
                        if event.get("ready") or event.get("failed"):
                            return
        except httpx.TransportError as e:
            raise ServiceUnreachable(f"cannot follow JupyterHub at {url}: "
                                     f"{e or type(e).__name__}") from None

    # --- folders -------------------------------------------------------------------

    def folders(self, status: str | None = None, project: str | None = None) -> list[dict]:
        return self.request("GET", "vfolders", params={"status": status, "project": project})

    def folder(self, folder_id: str) -> dict:
        return self.request("GET", f"vfolders/{_q(folder_id)}")

    def create_folder(self, name: str, *, host: str | None = None, project: str | None = None,
                      permission: str | None = None, usage_mode: str | None = None) -> dict:
        body = {"name": name, "host": host, "project": project, "permission": permission,
                "usage_mode": usage_mode}
        return self.request("POST", "vfolders",
                            json_body={k: v for k, v in body.items() if v is not None})

    def hosts(self) -> list[dict]:
        return self.request("GET", "vfolder-hosts")

    def files(self, folder_id: str, path: str = "") -> dict:
        return self.request("GET", f"vfolders/{_q(folder_id)}/files", params={"path": path})

    def upload(self, folder_id: str, path: str, data: IO[bytes], size: int,
               overwrite: bool = False) -> dict:
        """Upload ``size`` bytes read from ``data`` to ``path`` in the folder (streamed)."""
        def chunks():
            while True:
                chunk = data.read(1 << 20)
                if not chunk:
                    return
                yield chunk

        return self.request("PUT", f"vfolders/{_q(folder_id)}/upload",
                            params={"path": path, "overwrite": "true" if overwrite else None},
                            content=chunks(), headers={"Content-Length": str(size)})

    def download(self, folder_id: str, path: str, out: IO[bytes]) -> int:
        """Write the file at ``path`` into ``out`` (streamed); the bytes written."""
        url = f"{self.settings.api_url}/vfolders/{_q(folder_id)}/download"
        headers = {"Authorization": self.settings.authorization}
        try:
            with self._http.stream("GET", url, params={"path": path}, headers=headers) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise self._error(resp)
                written = 0
                for chunk in resp.iter_bytes(1 << 20):
                    out.write(chunk)
                    written += len(chunk)
                return written
        except httpx.TransportError as e:
            raise ServiceUnreachable(f"download from the hubgrid service at {url} failed: "
                                     f"{e or type(e).__name__}") from None

    def invite(self, folder_id: str, user: str, permission: str = "ro") -> dict:
        return self.request("POST", f"vfolders/{_q(folder_id)}/invitations",
                            json_body={"user": user, "permission": permission})

    def invitations(self, direction: str | None = None, state: str | None = None) -> list[dict]:
        return self.request("GET", "invitations", params={"direction": direction, "state": state})

    def accept(self, invitation_id: str) -> dict:
        return self.request("POST", f"invitations/{_q(invitation_id)}/accept")

    def decline(self, invitation_id: str) -> dict:
        return self.request("POST", f"invitations/{_q(invitation_id)}/reject")

    def cancel_invitation(self, invitation_id: str) -> None:
        self.request("DELETE", f"invitations/{_q(invitation_id)}")

    # --- serving: endpoints and their tokens ------------------------------------------

    def endpoints(self, project: str | None = None) -> list[dict]:
        return self.request("GET", "endpoints", params={"project": project})

    def endpoint(self, endpoint_id: str) -> dict:
        """One endpoint, with its health as the gateway's probes see it."""
        return self.request("GET", f"endpoints/{_q(endpoint_id)}")

    def validate_endpoint(self, body: Mapping) -> dict:
        """The checks of a create, nothing written: {ok, problems, warnings, definition}."""
        return self.request("POST", "endpoints/validate", json_body=body)

    def create_endpoint(self, body: Mapping) -> dict:
        return self.request("POST", "endpoints", json_body=body)

    def update_endpoint(self, endpoint_id: str, changes: Mapping) -> dict:
        """``replicas``, ``public`` or ``autoscaling`` (the rules, replaced)."""
        return self.request("PATCH", f"endpoints/{_q(endpoint_id)}", json_body=changes)

    def delete_endpoint(self, endpoint_id: str) -> None:
        self.request("DELETE", f"endpoints/{_q(endpoint_id)}")

    def endpoint_tokens(self, endpoint_id: str) -> list[dict]:
        return self.request("GET", f"endpoints/{_q(endpoint_id)}/tokens")

    def create_endpoint_token(self, endpoint_id: str, days: int) -> dict:
        """A bearer token; its secret (``token``) is in this answer only."""
        return self.request("POST", f"endpoints/{_q(endpoint_id)}/tokens",
                            json_body={"expires_in_days": days})

    def revoke_endpoint_token(self, endpoint_id: str, token_id: str) -> None:
        self.request("DELETE", f"endpoints/{_q(endpoint_id)}/tokens/{_q(token_id)}")

    # --- the Model Store ----------------------------------------------------------------

    def store_models(self) -> list[dict]:
        """The published models I may see, each with its card."""
        return self.request("GET", "model-store")

    def store_model(self, model_id: str) -> dict:
        return self.request("GET", f"model-store/{_q(model_id)}")

    def check_store_model(self, model_id: str, body: Mapping) -> dict:
        """The checks of a deploy, nothing written: {ok, problems, warnings, endpoint}."""
        return self.request("POST", f"model-store/{_q(model_id)}/check", json_body=body)

    def deploy_store_model(self, model_id: str, body: Mapping) -> dict:
        """Deploy as an endpoint of mine (``project``, ``resource_group``,
        ``name``, ``replicas``): the endpoint."""
        return self.request("POST", f"model-store/{_q(model_id)}/deploy", json_body=body)
