"""Each pending request's place in its resource group's line, for its
spawner's progress page, kept current by what changes instead of counted
again for every question.

A ``Line`` is one group's pending requests sorted by the key the queue
orders them by (``ordering``): FIFO by (order time, id), ``priority`` by
(-priority, order time, id). A change to a request (it joined, left, was
moved or re-prioritised, its reasons changed) re-reads that request alone
and moves it in the line: a place costs a binary search, a change the
requests it touches, whatever the line's length. Under ``drf`` a request's
key is its user's dominant share, which any session starting or ending
moves: that order is read whole again after any change, as before.

``Lines`` keeps the lines of a service, on the event loop's thread: the
waiters' registry (``waiters.Waiters.changed``) tells it which requests a
committed transaction changed; ``place`` reads what changed since (one
query, in a worker thread) before answering. Reads of one group take turns,
so a burst of new requests makes few reads, each of many of them. A line is
also read whole now and then (``MAX_AGE``), in case a change was not
announced (another process, plain SQL).
"""

from __future__ import annotations

import asyncio
import bisect
import datetime as dt
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable

#: seconds after which a line is read whole again
MAX_AGE = 60.0


@dataclass(frozen=True)
class Row:
    """What a place reads of one allocation."""

    id: str
    group: str | None
    state: str
    #: when it joined the line (an admin's move sets it: ``queue_at``), aware
    order_at: dt.datetime
    priority: int
    #: what it waits for (``queuedesk.waits_for``)
    waits_for: str | None


def order_key(policy: str, row: Row) -> tuple:
    """The key ``ordering.order`` sorts by, for FIFO and priority."""
    if policy == "priority":
        return (-row.priority, row.order_at, row.id)
    return (row.order_at, row.id)


def incremental(policy: str) -> bool:
    """Whether a change moves only the requests it touches in a line of ``policy``."""
    return policy in ("fifo", "priority")


class Line:
    """One group's pending requests in queue order. Pure: no IO."""

    def __init__(self, group: str, policy: str, rows: Iterable[Row] = (),
                 ordered: bool = False, at: float = 0.0):
        self.group, self.policy, self.at = group, policy, at
        self._keys: list[tuple] = []
        self._ids: list[str] = []
        self._of: dict[str, tuple[tuple, str | None]] = {}
        rows = list(rows)
        if ordered:  # already in queue order (``drf``): positions as given
            self._keys = [(i, r.id) for i, r in enumerate(rows)]
            self._ids = [r.id for r in rows]
            self._of = {r.id: (k, r.waits_for) for k, r in zip(self._keys, rows)}
        else:
            for r in rows:
                self.apply(r.id, r)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, alloc_id: str) -> bool:
        return alloc_id in self._of

    def apply(self, alloc_id: str, row: Row | None) -> None:
        """``alloc_id`` is now as ``row`` says (None: gone): it leaves its
        place, and takes its new one while it is pending in this group."""
        old = self._of.pop(alloc_id, None)
        if old is not None:
            at = bisect.bisect_left(self._keys, old[0])
            del self._keys[at], self._ids[at]
        if row is not None and row.state == "pending" and row.group == self.group:
            key = order_key(self.policy, row)
            at = bisect.bisect_left(self._keys, key)
            self._keys.insert(at, key)
            self._ids.insert(at, alloc_id)
            self._of[alloc_id] = (key, row.waits_for)

    def place(self, alloc_id: str) -> dict | None:
        """Where ``alloc_id`` stands (1 = next in line), None when it is not in line."""
        found = self._of.get(alloc_id)
        if found is None:
            return None
        return {"resource_group": self.group,
                "position": bisect.bisect_left(self._keys, found[0]) + 1,
                "pending": len(self._ids), "waits_for": found[1]}

    def ids(self) -> list[str]:
        """The line, in queue order."""
        return list(self._ids)


#: reads (policy, rows in queue order) of a group's whole line; None: no such group
ReadLine = Callable[[str], Awaitable[tuple[str, list[Row]] | None]]
#: reads the rows of these allocations (those that exist)
ReadRows = Callable[[list[str]], Awaitable[list[Row]]]


class Lines:
    """The lines of every resource group, kept current by announced changes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._lines: dict[str, Line] = {}
        #: per group: ids changed since its line was last brought up to date
        self._dirty: dict[str, set[str]] = {}
        self._turns: dict[str, asyncio.Lock] = {}
        #: how many lines were read whole, and how many rows were read alone
        self.whole_reads = 0
        self.row_reads = 0

    def changed(self, ids: Iterable[str]) -> None:
        """These allocations changed (committed): every line reads them again."""
        ids = list(ids)
        for dirty in self._dirty.values():
            dirty.update(ids)

    async def place(self, group: str, alloc_id: str, read_line: ReadLine,
                    read_rows: ReadRows) -> dict | None:
        """``alloc_id``'s place in ``group``'s line, after reading what changed."""
        turn = self._turns.setdefault(group, asyncio.Lock())
        async with turn:
            line = self._lines.get(group)
            dirty = self._dirty.get(group, set())
            if line is not None and not dirty and alloc_id in line:
                return line.place(alloc_id)
            self._dirty[group] = set()  # what changes while reading is read next time
            if (line is None or not incremental(line.policy)
                    or self.clock() - line.at > MAX_AGE or len(dirty) > max(len(line), 256)):
                line = await self._read_whole(group, read_line)
                if line is None:
                    return None
            else:
                wanted = sorted(dirty | {alloc_id})
                rows = {r.id: r for r in await read_rows(wanted)}
                self.row_reads += len(wanted)
                for i in wanted:
                    line.apply(i, rows.get(i))
            return line.place(alloc_id)

    async def _read_whole(self, group: str, read_line: ReadLine) -> Line | None:
        self.whole_reads += 1
        at = self.clock()
        found = await read_line(group)
        if found is None:
            self._lines.pop(group, None)
            self._dirty.pop(group, None)
            return None
        policy, rows = found
        line = self._lines[group] = Line(group, policy, rows, ordered=not incremental(policy),
                                         at=at)
        return line
