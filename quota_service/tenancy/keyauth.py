"""A keypair's caller: read in a transaction (``principal_for_keypair``,
from memory while the accounts did not change: ``keycache``), or guessed
without the database and confirmed in the transaction that acts.

Reading the accounts' generation takes a transaction: for a session's start
or end, that was a second transaction beside the ledger batch that acts, a
quarter of a start's cost when requests come a few at a time. For the verbs
that act in the ledger's batch (``APIHandler.confirmed_in_batch``), the
handler takes the caller the key gave when last kept (``kept_caller``: no
database), and the batch's write first confirms it in its own transaction
(``principal_for_keypair``, the same check): a key revoked, a user or
domain deactivated or a membership removed before the batch is seen there,
and the write is refused as it would have been. A key not kept (its first
use; the accounts changed and nobody read them since) is read the usual way.
What a handler does before its batch decides nothing: a request refused
there (a malformed body, 4xx) is answered, and its access-log entry written,
as for the caller the key gave when last read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from . import accounts, keycache
from ..core import keys, statements
from ..core.authz import Principal
from ..core.errors import Denied, Unauthenticated
from ..core.models import Domain, Keypair, Membership, Project, User
from ..core.orm import aware


def kept_caller(cache: keycache.KeyCache, access_key: str, secret: str,
                now: dt.datetime) -> Principal | None:
    """The caller ``access_key`` gave when last kept, if ``secret`` matches
    it and it was usable then (None: read it in a transaction). A guess:
    the transaction that acts confirms it."""
    k = cache.peek(access_key)
    if k is None or k.principal is None or not k.active:
        return None
    if k.expires_at is not None and k.expires_at <= now:
        return None
    return k.principal if keys.secret_matches(secret, k.secret_hash) else None


def record_use(s: Session, access_key: str, now: dt.datetime) -> None:
    """Write the last use of a key ``principal_for_keypair`` just checked in
    ``s``'s transaction (``record=False``), when due: no second check."""
    cache = keycache.cache_of(s)
    k = cache.entry(s, access_key, _key_entry)
    if k is not None:
        cache.record_use(s, access_key, k, now)


def use_due(cache: keycache.KeyCache, access_key: str, now: dt.datetime) -> bool:
    """Whether the key's last use is to be written (as last kept)."""
    k = cache.peek(access_key)
    return k is None or cache.use_due(access_key, k, now)


def principal_for_keypair(
    s: Session, access_key: str, secret: str, now: dt.datetime, record: bool = True
) -> Principal:
    """The caller behind a keypair (from memory unless the accounts changed:
    ``keycache``); records its use to the minute (unless not ``record``)."""
    cache = keycache.cache_of(s)
    k = cache.entry(s, access_key, _key_entry)
    # compare even for an unknown key, so timing does not tell which keys exist
    matches = keys.secret_matches(secret, k.secret_hash if k is not None else keys.DUMMY_HASH)
    if k is None or not matches:
        raise Unauthenticated("invalid keypair")
    if not k.active:
        raise Unauthenticated("keypair is inactive")
    if k.expires_at is not None and k.expires_at <= now:
        raise Unauthenticated("keypair has expired")
    if k.refusal is not None:
        raise Denied(k.refusal)
    if record:
        cache.record_use(s, access_key, k, now)
    return k.principal


#: what authentication reads of a key, its user and their domain
_KEY = (select(Keypair.access_key, Keypair.secret_hash, Keypair.active, Keypair.expires_at,
               Keypair.last_used_at, Keypair.resource_policy, User.id, User.name, User.role,
               User.active.label("user_active"), Domain.name.label("domain"),
               Domain.active.label("domain_active"))
        .join(User, User.id == Keypair.user_id)
        .join(Domain, Domain.id == User.domain_id))
#: a key by its name (made once: building a statement costs more than its run)
_ONE_KEY = _KEY.where(Keypair.access_key == bindparam("key"))
#: the projects of one user
_PROJECTS = (select(Project.name).join(Membership, Membership.project_id == Project.id)
             .where(Membership.user_id == bindparam("user")))


def _key_entry(s: Session, access_key: str) -> keycache.KeyEntry | None:
    # two queries of the columns it needs: no ORM objects, which cost more to
    # build than the check (every caller's first request makes one)
    k = s.execute(_ONE_KEY, {"key": access_key}).first()
    if k is None:
        return None
    return _entry(k, s.scalars(_PROJECTS, {"user": k.id}))


def recent_keys(s: Session, limit: int) -> dict[str, keycache.KeyEntry]:
    """The ``limit`` keys used last (never used ones after), as
    ``principal_for_keypair`` reads them one by one: three queries for a
    few hundred keys (a service's start: ``tenancy/warm``)."""
    rows = s.execute(_KEY.order_by(Keypair.last_used_at.is_(None), Keypair.last_used_at.desc(),
                                   Keypair.access_key).limit(limit)).all()
    ids = sorted({k.id for k in rows})
    projects: dict[int, list[str]] = {i: [] for i in ids}
    for chunk in statements.chunks(ids):
        for user_id, name in s.execute(
                select(Membership.user_id, Project.name)
                .join(Project, Project.id == Membership.project_id)
                .where(Membership.user_id.in_(chunk))):
            projects[user_id].append(name)
    return {k.access_key: _entry(k, projects[k.id]) for k in rows}


def _entry(k, projects) -> keycache.KeyEntry:
    try:
        principal, refusal = dataclasses.replace(
            accounts.caller(k.name, k.role, k.user_active, k.domain, k.domain_active, projects,
                   "keypair"),
            keypair=k.access_key, policy=k.resource_policy), None
    except Denied as e:
        principal, refusal = None, e.message
    return keycache.KeyEntry(secret_hash=k.secret_hash, active=k.active,
                             expires_at=aware(k.expires_at), last_used_at=aware(k.last_used_at),
                             principal=principal, refusal=refusal)
