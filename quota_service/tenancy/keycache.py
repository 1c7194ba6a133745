"""Each keypair's caller, kept in memory between requests.

Authenticating a keypair read the key, its user, their domain, memberships
and projects (an eighth of the service's CPU in an admission storm, where every
request comes with a keypair). This keeps, per access key, what the check
needs (the secret's hash, active, expiry) and the caller it gives, tagged
with the accounts' generation (``ledger_counters`` row ``tenancy``: triggers
move it with every change to domains, projects, users, memberships and
keypairs, a key's last use excepted; ``core/generations``). Reading the
generation is one row in the caller's transaction: a change committed before
it (a key revoked, a user deactivated, a membership removed) is seen by the
next request, whoever made it.

Unknown keys are never kept (memory an unauthenticated caller could fill).
A key's last use is written when the stored one is more than
``LAST_USE_RESOLUTION`` old: to the minute, one write a minute per busy key
instead of one per request.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from typing import Callable

from sqlalchemy import bindparam, update
from sqlalchemy.orm import Session

from ..core import generations, laterrows, rowcache, statements
from ..core.authz import Principal
from ..core.models import Keypair

#: the tables a caller is read from (migration 0014 watches them)
TABLES = frozenset({"domains", "projects", "users", "memberships", "keypairs"})
#: how stale a key's recorded last use may get
LAST_USE_RESOLUTION = dt.timedelta(seconds=60)
#: a copy holding more keys than this starts again (bounded memory)
MAX_KEYS = 200_000


@dataclass(frozen=True)
class KeyEntry:
    """One keypair as authentication reads it."""

    secret_hash: str
    active: bool
    expires_at: dt.datetime | None  # aware
    last_used_at: dt.datetime | None  # aware, as read
    #: the caller it authenticates, or why its user may not call (inactive)
    principal: Principal | None
    refusal: str | None = None


class KeyCache:
    """The keys of one database at one generation of the accounts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._used: dict[str, dt.datetime] = {}  # last uses written since the read
        #: the kept entries (``core/rowcache``); a copy that starts again
        #: forgets the last uses written too
        self._entries: rowcache.RowCache[KeyEntry] = rowcache.RowCache(
            "tenancy", TABLES, MAX_KEYS, on_reset=self._forget_uses)

    def _forget_uses(self) -> None:
        self._used = {}

    def entry(self, s: Session, access_key: str,
              load: Callable[[Session, str], KeyEntry | None]) -> KeyEntry | None:
        return self._entries.get(s, access_key, lambda: load(s, access_key))

    def fill(self, s: Session, load: Callable[[], dict[str, KeyEntry]]) -> int:
        """Keep the keys ``load()`` reads (``core/rowcache`` ``fill``)."""
        return self._entries.fill(s, load)

    def peek(self, access_key: str) -> KeyEntry | None:
        """The key as last kept, unconfirmed (``core/rowcache`` ``peek``)."""
        return self._entries.peek(access_key)

    def use_due(self, access_key: str, entry: KeyEntry, now: dt.datetime) -> bool:
        """Whether the key's recorded last use is older than ``LAST_USE_RESOLUTION``."""
        last = self._used.get(access_key, entry.last_used_at)
        return last is None or not dt.timedelta(0) <= now - last < LAST_USE_RESOLUTION

    def record_use(self, s: Session, access_key: str, entry: KeyEntry,
                   now: dt.datetime) -> None:
        """Write the key's last use when the recorded one is older than
        ``LAST_USE_RESOLUTION`` (in ``s``'s transaction: in a ledger batch,
        with the batch's other keys at its end, ``core/laterrows``)."""
        if not self.use_due(access_key, entry, now):
            return
        if not laterrows.later(s, self.write_uses, access_key, now):
            self.write_uses(s, {access_key: now})

    def write_uses(self, s: Session, uses: dict[str, dt.datetime]) -> None:
        """Record the last use of each key in ``uses`` (access key -> when):
        one UPDATE for all, at the last of those times (a use is kept to the
        minute, and a batch's keys were used within it)."""
        keys, last = sorted(uses), max(uses.values())
        for chunk in statements.chunks(keys):
            # (on the connection: no copy is made of a last use, nothing to mark)
            s.connection().execute(_USES, {"keys": list(chunk), "last": last})
        with self._lock:
            self._used.update(uses)


#: the keys' last use (made once: building a statement costs more than its run)
_USES = (update(Keypair.__table__)
         .where(Keypair.__table__.c.access_key.in_(bindparam("keys", expanding=True)))
         .values(last_used_at=bindparam("last")))


def cache_of(s: Session) -> KeyCache:
    """The key cache of ``s``'s database (one per engine)."""
    return generations.per_engine(s, "keys", KeyCache)


def cache_for(engine) -> KeyCache:
    """``cache_of`` for ``engine`` (without a session)."""
    return generations.of_engine(engine, "keys", KeyCache)
