"""What changed that queue decisions read, since a given moment.

Every write that may change a queue decision is noted here (by the
waiters' registry's SQLAlchemy hooks, ``waiters.Waiters.watch``): the
allocations that started or ended (their ids), or "anything" (a limit, a
grant, a node, an image, a membership changed: every decision may differ).
A note is made when the write is flushed and again once it committed, so a
pass that read the log before the commit cannot take the old world for
current. ``seq`` counts the notes (the queue's ``generation``); a pass keeps
the ``seq`` it started at and asks the next time what changed ``since`` then:
the allocations whose owners' limits and whose group's capacity moved
(``rejudge`` turns them into what they free and take), or None when every
decision must be made again.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Iterable

#: notes kept; a pass older than them judges everybody again
KEEP = 20_000
#: allocation ids kept in all; past them, "anything changed"
KEEP_IDS = 50_000


class ChangeLog:
    """Notes of decisive changes, numbered; safe from any thread."""

    def __init__(self, keep: int = KEEP, keep_ids: int = KEEP_IDS):
        self._lock = threading.Lock()
        self._keep, self._keep_ids = keep, keep_ids
        self.seq = 0
        #: (seq, ids, or None: anything)
        self._notes: deque[tuple[int, frozenset[str] | None]] = deque()
        self._ids = 0

    def note(self, ids: Iterable[str] | None) -> int:
        """Note a change of these allocations (None: of anything); the new ``seq``."""
        ids = None if ids is None else frozenset(ids)
        with self._lock:
            self.seq += 1
            self._notes.append((self.seq, ids))
            self._ids += len(ids or ())
            while len(self._notes) > self._keep or self._ids > self._keep_ids:
                _, gone = self._notes.popleft()
                self._ids -= len(gone or ())
            return self.seq

    def since(self, seq: int | None) -> frozenset[str] | None:
        """The allocations changed after ``seq`` (empty: nothing changed);
        None when anything may have (or ``seq`` is None, or older than the
        notes kept)."""
        if seq is None:
            return None
        with self._lock:
            if seq == self.seq:
                return frozenset()
            if seq > self.seq or not self._notes or self._notes[0][0] > seq + 1:
                return None
            out: set[str] = set()
            for at, ids in reversed(self._notes):
                if at <= seq:
                    break
                if ids is None:
                    return None
                out |= ids
            return frozenset(out)
