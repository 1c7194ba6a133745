"""A Lab user's own hub credential at the gateway: an IO edge.

A caller presenting a JupyterHub token (``Authorization: token <hub
token>``, the credential a Lab server sends to the service, or a Bearer
that looks like one: ``hub_bearer``) may call the endpoints that user may
use. Permissions stay in the service: the gateway asks it, ``GET
endpoints`` with that very token, and the endpoints listed are the ones it
opens (``access.may_call``'s ``users``).

Only what could be a hub token is ever sent anywhere (``plausible``: what
JupyterHub makes, 32 hex digits, or an OAuth access token of its provider,
30 letters and digits): an OpenAI client's ``api_key="EMPTY"`` reaches
neither the hub nor the service.

The answer is kept for ``ttl`` seconds by the SHA-256 of the token (a
refusal too), in a bounded cache; the token is never logged nor kept. The
service keeps its own hub's answers about tokens for a while too
(``HubOAuth.cache_max_age``), so where the gateway knows the hub's API
(``hub_api``: ``$JUPYTERHUB_API_URL``, set for the hub's services) it asks
the hub first whether the token is still good: a token revoked at the hub
is refused within ``ttl`` seconds, not ``ttl`` plus the service's cache. A
token the hub does not know is 401; a hub or service that cannot be
asked, 503.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import time
from collections import OrderedDict

import httpx

from .access import ENDPOINT_TOKEN_PREFIX, Refusal

#: seconds an answer is kept: a revoked hub token or a membership change
#: reaches the gateway within this
TTL = 10.0
MAX_ENTRIES = 4096
#: what a JupyterHub token is: ``jupyterhub.utils.new_token`` (a UUID's 32
#: hex digits: users' API tokens, servers' tokens), or an OAuth access token
#: the hub's provider made (oauthlib's ``generate_token``: 30 letters and
#: digits), e.g. the one the hubgrid service holds for a console's user and
#: passes on for its Chat (quota_service/api/consolegateway.py)
HUB_TOKEN = re.compile(r"[0-9a-fA-F]{32}|[0-9A-Za-z]{30}")


def plausible(token: str) -> bool:
    """Whether ``token`` could be a hub token at all (else nobody is asked)."""
    return HUB_TOKEN.fullmatch(token) is not None


def hub_token(headers) -> str | None:
    """The hub token in ``Authorization: token <hub token>``, if that is the scheme."""
    scheme, _, value = (headers.get("Authorization") or "").partition(" ")
    if scheme.lower() != "token":
        return None
    return value.strip() or None


def hub_bearer(secret: str, endpoint_token_hashes) -> bool:
    """Whether a Bearer secret is a hub token (what the openai client sends as
    its ``api_key``): one that could be a hub token, with no endpoint token's
    prefix, and no endpoint token's hash. Any other is judged as an endpoint
    token (and so opens public endpoints only, unless it is one)."""
    return (plausible(secret) and not secret.startswith(ENDPOINT_TOKEN_PREFIX)
            and hashlib.sha256(secret.encode()).hexdigest() not in endpoint_token_hashes)


INVALID = ("invalid hub token: the hub does not know it, or its user is not registered "
           "in hubgrid")


class UserCreds:
    """The endpoints each presented hub token opens, asked of the service."""

    def __init__(self, api_url: str, ttl: float = TTL, http: httpx.AsyncClient | None = None,
                 clock=time.monotonic, hub_api: str | None = None):
        self.url = api_url.rstrip("/") + "/endpoints"
        self.hub_url = hub_api.rstrip("/") + "/user" if hub_api else None
        self.ttl = ttl
        self.http = http or httpx.AsyncClient(timeout=httpx.Timeout(20.0, connect=5.0))
        self.clock = clock
        self.cache: OrderedDict[str, tuple[float, frozenset[str] | Refusal]] = OrderedDict()
        self.asking: dict[str, asyncio.Task] = {}
        self.asked = 0  # questions asked about a token (for tests and figures)

    @classmethod
    def from_env(cls) -> "UserCreds | None":
        url = os.environ.get("HUBGRID_API_URL")
        return cls(url, float(os.environ.get("HUBGRID_GATEWAY_USER_TTL", TTL)),
                   hub_api=os.environ.get("JUPYTERHUB_API_URL") or None) if url else None

    async def endpoints(self, token: str) -> frozenset[str]:
        """The ids of the endpoints the token's user may use; Refusal otherwise."""
        if not plausible(token):
            raise Refusal(401, INVALID)  # nobody asked: it cannot be a hub token
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self.clock()
        hit = self.cache.get(key)
        if hit is None or hit[0] <= now:
            task = self.asking.get(key)
            if task is None:  # one question per token at a time
                task = self.asking[key] = asyncio.get_running_loop().create_task(self._ask(token))
                task.add_done_callback(lambda _t: self.asking.pop(key, None))
            answer = await asyncio.shield(task)
            self._keep(key, answer)
            hit = (0.0, answer)
        if isinstance(hit[1], Refusal):
            raise hit[1]
        return hit[1]

    def _keep(self, key: str, answer) -> None:
        if isinstance(answer, Refusal) and answer.status >= 500:
            return  # the service's trouble: ask again next time
        self.cache[key] = (self.clock() + self.ttl, answer)
        self.cache.move_to_end(key)
        while len(self.cache) > MAX_ENTRIES:
            self.cache.popitem(last=False)

    async def _get(self, url: str, token: str) -> httpx.Response | Refusal:
        try:
            return await self.http.get(url, headers={"Authorization": f"token {token}"})
        except httpx.HTTPError as e:
            return Refusal(503, f"cannot check your hub token now ({type(e).__name__}); "
                           "try again shortly")

    async def _ask(self, token: str) -> frozenset[str] | Refusal:
        self.asked += 1
        if self.hub_url is not None:  # the hub's own word, never a cached one
            r = await self._get(self.hub_url, token)
            if isinstance(r, Refusal):
                return r
            if r.status_code in (401, 403):
                return Refusal(401, INVALID)
            if r.status_code != 200:
                return Refusal(503, f"cannot check your hub token now (the hub answered "
                               f"{r.status_code}); try again shortly")
        r = await self._get(self.url, token)
        if isinstance(r, Refusal):
            return r
        if r.status_code == 200:
            return frozenset(str(e["id"]) for e in r.json())
        if r.status_code in (401, 403):
            return Refusal(401, INVALID)
        return Refusal(503, f"cannot check your hub token now (the service answered "
                       f"{r.status_code}); try again shortly")

    async def aclose(self) -> None:
        await self.http.aclose()


async def opened(creds: UserCreds | None, headers) -> frozenset[str] | None:
    """What the request's hub token opens; None when it presents none."""
    token = hub_token(headers)
    if token is None:
        return None
    if creds is None:
        raise Refusal(401, "this gateway does not take hub tokens (it has no service to ask)")
    return await creds.endpoints(token)
