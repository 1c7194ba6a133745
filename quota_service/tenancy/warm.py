"""The accounts read into memory when the service starts.

Each keypair's caller (``keycache``) and the users and projects decisions
read (``people``) are kept between requests at the accounts' generation,
but a service just started kept none: every caller's first request read
its key, user, domain, memberships and project with queries of their own
(a tenth of the service's CPU in the first thousand requests of an admission
storm, 300 users each asking for the first time). ``warm`` reads the most
recently used keys and their people in a few bulk queries instead, before
the service answers. A key not read here (beyond ``limit``, or made later)
is read at its first use, as before; a change to the accounts afterwards
makes the copies start again, as it always did.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from . import keyauth, keycache, people


@dataclass(frozen=True)
class Warmed:
    keys: int
    people: int


def warm(s: Session, limit: int) -> Warmed:
    """Keep up to ``limit`` keys (used last first) and up to ``limit`` users
    and projects (``s``: a transaction that wrote nothing)."""
    if limit <= 0:
        return Warmed(0, 0)
    keys = keycache.cache_of(s).fill(s, lambda: keyauth.recent_keys(s, limit))
    return Warmed(keys, people.warm(s, limit))
