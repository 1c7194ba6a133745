"""Who may call which endpoint, and by which model name: pure.

A caller presents an endpoint token (``Authorization: Bearer <secret>``,
or ``api-key``/``x-api-key`` as some OpenAI tools send it). A token opens
its own endpoint; a public endpoint is open to every caller, with any token
or none (OpenAI clients always send one: ``api_key="EMPTY"`` and the like).
Refusals say why: 401 when no valid token was presented (none, unknown,
revoked or expired), 404 when a valid token of another endpoint is
presented (the same answer as for an id that does not exist: a caller
learns of no endpoint it may not call).

A Lab user presents their own hub token instead (``usercred``): the
service says which endpoints that user may use (``users``, their ids; None
when no hub token was presented, ``refused`` when the hub token was not
taken); those open as a token opens its own, and any other answers 404
(the service hides what a user may not see).

An endpoint ``disabled`` by the service (its domain, project or creator
is deactivated) takes no call: it is public no more, and a credential
that would open it gets 403 saying why. Its own URL passes on only the
HTTP methods it declares (``allow_method``: 405 otherwise), on the paths
it declares (``allow_path``: 404 otherwise; 400 for a path not in normal
form, core/urlpaths.py).

The OpenAI gateway names each endpoint the caller may use by a model id:
its name, or ``project/name`` where two usable endpoints share a name
(``domain/project/name`` where that is not enough either).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from quota_service.core import urlpaths

from .table import Endpoint, Table


@dataclass(frozen=True)
class Refusal(Exception):
    status: int
    message: str
    code: str | None = None  # OpenAI's ``error.code``, where one says more than the status


def bearer(headers: dict[str, str]) -> str | None:
    """The secret a caller presented, if any (header names lower-cased)."""
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    for name in ("api-key", "x-api-key"):
        if headers.get(name, "").strip():
            return headers[name].strip()
    return None


#: what every endpoint token starts with (quota_service/serving/tokens.py)
ENDPOINT_TOKEN_PREFIX = "hge_"


def token_endpoint(table: Table, secret: str | None, now: dt.datetime) -> str | None:
    """The endpoint a presented secret opens; None when no secret was given.
    Refusal(401) for an unknown, revoked or expired one."""
    if secret is None:
        return None
    t = table.tokens.get(hashlib.sha256(secret.encode()).hexdigest())
    if t is None:
        if secret.startswith(ENDPOINT_TOKEN_PREFIX):
            raise Refusal(401, "invalid token: unknown or revoked")
        raise Refusal(401, "invalid token: neither an endpoint token (hge_...) nor a hub "
                      "token")
    if t.expires_at <= now:
        raise Refusal(401, "invalid token: expired")
    return t.endpoint_id


def enabled(e: Endpoint) -> Endpoint:
    """``e``, unless the service disabled it (Refusal 403 with why)."""
    if e.disabled:
        raise Refusal(403, f"endpoint {e.name!r} takes no calls: {e.disabled}",
                      "endpoint_disabled")
    return e


def may_call(table: Table, endpoint_id: str, secret: str | None, now: dt.datetime,
             users: frozenset[str] | None = None, refused: Refusal | None = None) -> Endpoint:
    """The endpoint, if this caller may call it; Refusal otherwise: 401
    without a valid credential, 404 for an endpoint that does not exist or
    that the caller's credential does not open (never 403: that would tell
    a stranger that the id exists), 403 for a disabled endpoint that the
    credential opens. ``refused``: why a presented hub token was not taken."""
    e = table.endpoints.get(endpoint_id)
    if e is not None and e.public and not e.disabled:
        return e
    if users is not None:
        if e is None or endpoint_id not in users:
            raise Refusal(404, "no such endpoint you may use")
        return enabled(e)
    if refused is not None:
        raise refused
    opened = token_endpoint(table, secret, now)
    if opened is None:
        raise Refusal(401, "this endpoint needs a token: Authorization: Bearer <token>")
    if e is None or opened != endpoint_id:
        raise Refusal(404, "no such endpoint you may use")
    return enabled(e)


def allow_method(e: Endpoint, method: str) -> None:
    """Refusal(405) for a method the endpoint's own URL does not pass on."""
    if method.upper() not in e.methods:
        raise Refusal(405, f"endpoint {e.name!r} does not take {method.upper()[:16]} calls; "
                      f"it takes {', '.join(sorted(e.methods))}", "method_not_allowed")


def allow_path(e: Endpoint, raw: str) -> str:
    """The normal form of ``raw`` (a request's path below ``e/<id>``, as
    sent), when the endpoint's own URL passes it on; Refusal otherwise: 400
    for a path not in normal form, 404 for one it does not declare."""
    try:
        path = urlpaths.normal(raw or "/")
    except urlpaths.BadPath as ex:
        raise Refusal(400, f"the path {raw[:200]!r} {ex}", "invalid_path") from None
    if not urlpaths.allows(e.paths, path):
        raise Refusal(404, f"endpoint {e.name!r} does not serve {path[:200]!r} here; its "
                      f"paths are {', '.join(e.paths)}", "path_not_allowed")
    return path


def usable(table: Table, secret: str | None, now: dt.datetime,
           users: frozenset[str] | None = None,
           refused: Refusal | None = None) -> tuple[dict[str, Endpoint], Refusal | None]:
    """Model id -> endpoint, for every endpoint this caller may call, and
    why a presented credential opened nothing (public endpoints stay usable)."""
    opened = None
    if refused is None:
        try:
            opened = token_endpoint(table, secret, now)
        except Refusal as r:
            refused = r
    users = users or frozenset()
    chosen = [e for e in table.endpoints.values() if not e.disabled
              and (e.public or e.id == opened or e.id in users)]
    out: dict[str, Endpoint] = {}
    for e in sorted(chosen, key=lambda e: (e.domain, e.project, e.name)):
        out[model_id(e, chosen)] = e
    return out, refused


def choose(table: Table, model: str, secret: str | None, now: dt.datetime,
           users: frozenset[str] | None = None, refused: Refusal | None = None) -> Endpoint:
    """The endpoint a call naming ``model`` goes to; Refusal when none: the
    credential's own refusal (401) first, then 401 for a caller with no token,
    404 for a model the caller's token (or hub token) does not open."""
    models, refused = usable(table, secret, now, users, refused)
    e = models.get(model)
    if e is not None:
        return e
    if refused is not None:
        raise refused
    if secret is None and users is None:
        raise Refusal(401, f"no public model {model[:200]!r}: present the endpoint's token "
                      "(Authorization: Bearer <token>)")
    raise Refusal(404, f"no model {model[:200]!r} you may use; GET v1/models lists them")


def model_id(e: Endpoint, among: list[Endpoint]) -> str:
    same = [o for o in among if o.name == e.name]
    if len(same) == 1:
        return e.name
    if sum(1 for o in same if o.project == e.project) == 1:
        return f"{e.project}/{e.name}"
    return f"{e.domain}/{e.project}/{e.name}"
