"""Bearer tokens of endpoints: making one, and the check a gateway runs.

A token is ``hge_`` and 256 random bits; it is shown once, when made, and
only its SHA-256 is kept (as keypairs' secrets, ``core/keys.py``: random
secrets need no password stretching). :func:`check` decides, from a token
string, the time and the stored rows, which endpoint the token opens or why
it opens none. Pure: no IO.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Iterable

PREFIX = "hge_"

#: why a token opens no endpoint: the gateway's refusal reasons
UNKNOWN, EXPIRED, REVOKED, OTHER_ENDPOINT = "unknown", "expired", "revoked", "other-endpoint"


@dataclass(frozen=True)
class StoredToken:
    """What the check needs of a stored token (an ``EndpointToken`` row)."""

    id: str
    endpoint_id: str
    token_hash: str
    expires_at: dt.datetime
    revoked_at: dt.datetime | None = None


@dataclass(frozen=True)
class Verdict:
    """The check's answer: the endpoint opened (``reason`` None), or why not."""

    endpoint_id: str | None
    token_id: str | None
    reason: str | None

    @property
    def ok(self) -> bool:
        return self.reason is None


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check(token: str, now: dt.datetime, rows: Iterable[StoredToken],
          endpoint_id: str | None = None) -> Verdict:
    """Which endpoint ``token`` opens at ``now``, among ``rows`` (the stored
    tokens; a gateway passes those whose hash matches, or all of them).
    ``endpoint_id``: the endpoint called; a token of another one is refused.
    Revoked outranks expired: a revoked token stays revoked."""
    wanted = hash_token(token)
    for row in rows:
        if not hmac.compare_digest(row.token_hash, wanted):
            continue
        if row.revoked_at is not None:
            return Verdict(row.endpoint_id, row.id, REVOKED)
        if row.expires_at <= now:
            return Verdict(row.endpoint_id, row.id, EXPIRED)
        if endpoint_id is not None and row.endpoint_id != endpoint_id:
            return Verdict(None, row.id, OTHER_ENDPOINT)
        return Verdict(row.endpoint_id, row.id, None)
    return Verdict(None, None, UNKNOWN)


def expiry(now: dt.datetime, days: int, max_days: int) -> dt.datetime:
    """When a token made at ``now`` for ``days`` days expires; ValueError
    past the admin's ``max_days``."""
    if days < 1:
        raise ValueError("expires_in_days: at least 1")
    if days > max_days:
        raise ValueError(f"expires_in_days: at most {max_days} (the service's "
                         "endpoint_token_max_days)")
    return now + dt.timedelta(days=days)
