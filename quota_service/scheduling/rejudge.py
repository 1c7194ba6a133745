"""Which waiting requests a queue pass must judge again. Pure: no IO.

A waiting request's last judgement (``Kept``) says what it read and what
blocks it, as keys: its user's, project's and domain's usage (``user``,
``project``, ``domain``: ``holdings.keys``) and its group's free capacity
(``capacity``). Between two passes only sessions starting and ending move
usage and capacity (a setting that changes makes the pass judge everyone:
``changelog``); a session that ended *frees* its keys, one that started
*takes* them (``Touched``). A freed key can only unblock, so it matters to
the requests it blocks; a taken key can only block more, so it matters to
every request that read it. A request neither touches keeps its last
decision, reasons and all: judging it again would give exactly the same.

- Waiting for its own limits: it read its user's, project's and domain's
  usage (no node: placement is asked only of what the limits admit); it is
  blocked by the levels its reasons name.
- Waiting for capacity: it read those and its group's capacity, which
  blocks it (the reason's numbers say what is short now, so any session
  ending in its group is judged again).
- Any other reason (an image, a queue rule): judged every pass.

Within a pass, each admission takes its keys for the requests after it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping

Key = tuple[str, object]
#: the key of reasons that are judged every pass
ALWAYS: Key = ("always", None)
#: reason levels whose usage a key names
LIMIT_LEVELS = ("user", "project", "domain")


def own_keys(user_id: int, project_id: int, domain_id: int, group_id: int) -> dict[str, Key]:
    """The keys of a request or a session, by the level reasons name them."""
    return {"user": ("user", user_id), "project": ("project", project_id),
            "domain": ("domain", domain_id), "resource-group": ("capacity", group_id)}


@dataclass(frozen=True)
class Kept:
    """A waiting request's last judgement, as far as judging it again goes."""

    waits_for_capacity: bool
    #: the keys of the rules that block it (freed: judge it again)
    blocking: frozenset[Key]
    #: every key its judgement read (taken: judge it again)
    reads: frozenset[Key]


def kept(reasons: Iterable[dict], own: dict[str, Key]) -> Kept:
    """What a pending decision's ``reasons`` (``Reason.as_dict``) depend on."""
    reasons = list(reasons)
    blocking = set()
    for r in reasons:
        level = r.get("level")
        if level in LIMIT_LEVELS:
            blocking.add(own[level])
        elif level == "resource-group" and r.get("code") == "capacity":
            blocking.add(own["resource-group"])
        else:
            blocking.add(ALWAYS)
    capacity = bool(reasons) and all(r.get("level") == "resource-group" for r in reasons)
    reads = {own[level] for level in LIMIT_LEVELS}
    if capacity:
        reads.add(own["resource-group"])
    if not reasons:
        blocking.add(ALWAYS)
    return Kept(capacity, frozenset(blocking), frozenset(reads))


@dataclass
class Touched:
    """The keys sessions freed (ended) and took (started) since a judgement."""

    freed: set[Key] = field(default_factory=set)
    taken: set[Key] = field(default_factory=set)

    def ended(self, own: dict[str, Key]) -> None:
        self.freed.update(own.values())

    def started(self, own: dict[str, Key]) -> None:
        self.taken.update(own.values())

    def __bool__(self) -> bool:
        return bool(self.freed or self.taken)


def must_judge(last: Kept | None, touched: Touched) -> bool:
    """Whether a request last judged as ``last`` (None: not known) may be
    decided differently now."""
    if last is None or ALWAYS in last.blocking:
        return True
    return bool(last.blocking & touched.freed) or bool(last.reads & touched.taken)


def idle_pass(pending: Iterable[tuple[str, int, dt.datetime]], known: Mapping[str, Kept],
              hol_passes: int, timeout: float | None, now: dt.datetime,
              abandoned: Collection[str]) -> bool:
    """Whether a pass over a queue (``pending``: (id, passes counted, created
    at, aware) of its requests) in an unchanged world would change nothing:
    every request keeps its last judgement (``known``), none counts passes
    any more (past ``hol_passes``: none holds the line), none timed out and
    none was abandoned. Such a pass is skipped: a quiet queue of thousands
    costs one narrow read per pass, not a judgement of each."""
    for alloc_id, passes, created in pending:
        if alloc_id not in known or passes <= hol_passes or alloc_id in abandoned:
            return False
        if timeout is not None and (now - created).total_seconds() > timeout:
            return False
    return True
