"""Per-session logs: one file per allocation, capped, purged after retention.

The spawner sends a session's output as it comes (``append``); the file
keeps at most ``max_bytes``: when an append would pass the cap, the oldest
bytes are dropped and a line at the top says so. Rewrites go through a
temporary file and ``os.replace``, so a crash leaves the old file or the
new one, never half of one. Bytes are stored as they come (any encoding);
readers decode them.

Positions: every byte a session ever wrote has a number, from 0, that a
truncation never changes (the truncation line says how many bytes were
dropped before what the file keeps). A reader that follows a log asks for
what came after the last byte it has (``LogStore.view(offset=...)``) and
never reads what it has already seen.

``to_purge`` decides which logs the retention rule deletes; it is pure.
"""

from __future__ import annotations

import codecs
import datetime as dt
import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..scheduling import ledger
from ..core.authz import Principal
from ..core.errors import ApiError, Gone, NotFound
from ..core.models import Allocation
from ..core.orm import aware

TRUNCATED = b"[hubgrid: older output was dropped to keep this log within "
_DROPPED = re.compile(rb" \(([0-9]{1,20}) bytes dropped\)\]$")
#: a truncation line is shorter than this
HEAD_BYTES = 256
MIN_BYTES = 4096


def check_id(alloc_id: str) -> str:
    """An allocation id as the ledger makes them (a canonical uuid), so it
    can name a file; ValueError otherwise."""
    try:
        canonical = str(uuid.UUID(alloc_id))
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"{alloc_id!r} is not an allocation id") from None
    if canonical != alloc_id:
        raise ValueError(f"{alloc_id!r} is not an allocation id")
    return alloc_id


def marker(max_bytes: int, dropped: int) -> bytes:
    """The line at the top of a truncated log: the cap, and how many bytes
    of output came before the first one the file keeps."""
    return TRUNCATED + b"%d bytes (%d bytes dropped)]\n" % (max_bytes, dropped)


def split_marker(head: bytes) -> tuple[int, int]:
    """(bytes dropped, length of the truncation line) of a log that starts
    with ``head``; (0, 0) when nothing was dropped. A line without a count
    (written before counts were kept) counts as nothing dropped."""
    if not head.startswith(TRUNCATED):
        return 0, 0
    end = head.find(b"\n")
    if end < 0:
        return 0, 0
    found = _DROPPED.search(head[:end])
    return (int(found.group(1)) if found else 0), end + 1


def without_marker(data: bytes) -> bytes:
    """The log's content without a truncation line at its top."""
    return data[split_marker(data)[1]:]


def appended(current: bytes, data: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """The file after appending ``data``: (content, truncated). Pure.

    Up to ``max_bytes`` the bytes are kept whole; past it, the truncation
    line and the newest bytes that fit beside it, ``max_bytes`` in all."""
    whole = current + data
    if len(whole) <= max_bytes:
        return whole, False
    dropped, head = split_marker(current)
    body = whole[head:]
    line = marker(max_bytes, dropped)
    while True:  # the count's digits change the line's length: at most twice round
        keep = max_bytes - len(line)
        fitted = marker(max_bytes, dropped + len(body) - keep)
        if len(fitted) == len(line):
            return fitted + body[-keep:], True
        line = fitted


def utf8_end(data: bytes) -> int:
    """Where the last whole UTF-8 character of ``data`` ends: a character
    cut short at the end (up to 3 bytes) is left for the next read. The
    codec's incremental decoder keeps back what such a cut leaves."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    decoder.decode(data[-3:])  # a cut character's first byte is among the last 3
    return len(data) - len(decoder.getstate()[0])


def utf8_start(data: bytes) -> int:
    """Where the first whole character of ``data`` starts (a read that
    begins inside a character skips its continuation bytes, up to 3)."""
    for at in range(min(3, len(data))):
        if data[at] & 0xC0 != 0x80:
            return at
    return min(3, len(data))


@dataclass(frozen=True)
class LogView:
    """A read of a log: ``data``, and in output positions (every byte the
    session wrote, numbered from 0) ``start``, where its output begins (the
    first byte kept when older output was dropped) and ``end``, the position
    after its last byte: where the next read goes on."""

    data: bytes
    start: int
    end: int


@dataclass(frozen=True)
class LogStore:
    root: Path
    max_bytes: int

    def __post_init__(self):
        if self.max_bytes < MIN_BYTES:
            raise ValueError(f"a session log keeps at least {MIN_BYTES} bytes")

    def path(self, alloc_id: str) -> Path:
        return Path(self.root) / f"{check_id(alloc_id)}.log"

    def append(self, alloc_id: str, data: bytes) -> tuple[int, bool]:
        """Append ``data``; returns (size of the log now, whether it was truncated)."""
        path = self.path(alloc_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        size = path.stat().st_size if path.exists() else 0
        if size + len(data) <= self.max_bytes:
            with open(path, "ab") as f:
                f.write(data)
            return size + len(data), False
        content, _ = appended(path.read_bytes() if size else b"", data, self.max_bytes)
        self._replace(path, content)
        return len(content), True

    @staticmethod
    def _replace(path: Path, content: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def read(self, alloc_id: str, tail: int | None = None) -> bytes:
        """The log (its last ``tail`` bytes); empty when nothing was written."""
        return self.view(alloc_id, tail=tail).data

    def view(self, alloc_id: str, *, tail: int | None = None,
             offset: int | None = None) -> LogView:
        """The file (or its last ``tail`` bytes, a truncation line included),
        or with ``offset`` the output from that position on (from the first
        byte kept, when older output was dropped). One open file, so a
        rewrite in between is never half seen. ValueError for an offset
        past the end."""
        try:
            f = open(self.path(alloc_id), "rb")
        except FileNotFoundError:
            if offset:
                raise ValueError(f"offset {offset} is past the end of the log (0 bytes)") from None
            return LogView(b"", 0, 0)
        with f:
            dropped, head = split_marker(f.read(HEAD_BYTES))
            size = f.seek(0, os.SEEK_END)
            end = dropped + size - head
            if offset is None:
                at = f.seek(max(size - tail, 0) if tail is not None else 0)
                data = f.read()
                return LogView(data, dropped + max(at - head, 0), dropped + f.tell() - head)
            if offset > end:
                raise ValueError(f"offset {offset} is past the end of the log ({end} bytes)")
            start = max(offset, dropped)
            f.seek(head + start - dropped)
            data = f.read()
            return LogView(data, start, start + len(data))

    def delete(self, alloc_id: str) -> bool:
        try:
            self.path(alloc_id).unlink()
            return True
        except FileNotFoundError:
            return False


@dataclass(frozen=True)
class Ended:
    """What the retention rule reads of one allocation."""

    id: str
    released_at: dt.datetime | None
    log_purged_at: dt.datetime | None = None


def to_purge(allocations: Iterable[Ended], now: dt.datetime, retention_days: int) -> list[str]:
    """The ids whose logs are due: released more than ``retention_days``
    before ``now`` and not purged yet. 0 days: keep every log forever."""
    if retention_days <= 0:
        return []
    cutoff = now - dt.timedelta(days=retention_days)
    return [a.id for a in allocations
            if a.released_at is not None and a.log_purged_at is None
            and aware(a.released_at) < cutoff]


# --- the manager: who may read, and the retention pass ---------------------------

def _allocation_id(alloc_id: str) -> str:
    try:
        return check_id(alloc_id)
    except ValueError:
        raise NotFound(f"allocation {alloc_id!r} not found") from None


def _gone(a: Allocation, retention_days: int) -> Gone:
    when = aware(a.log_purged_at).date().isoformat()
    rule = (f"logs are kept {retention_days} days after their session ends"
            if retention_days > 0 else "by the log retention rule")
    return Gone(f"the log of allocation {a.id} was purged on {when}: {rule}")


def read_log(s: Session, p: Principal, store: LogStore, alloc_id: str, tail: int | None,
             retention_days: int, offset: int | None = None) -> LogView:
    """The log of an allocation the caller may see (as ``GET allocations/{id}``:
    its owner, also through their keypairs, admins of its domain, superadmins),
    in whole characters (``whole_characters``)."""
    a = ledger.visible_allocation(s, p, _allocation_id(alloc_id))
    if a.log_purged_at is not None:
        raise _gone(a, retention_days)
    try:
        view = store.view(a.id, tail=tail, offset=offset)
    except ValueError as e:
        raise ApiError(f"offset: {e}") from None
    return whole_characters(view, writing=a.released_at is None)


def whole_characters(view: LogView, writing: bool) -> LogView:
    """A read without the pieces of characters at its edges: a start inside
    a character (a tail, dropped output) skips to the next one; while the
    session may still write, a character cut at the end waits for the next
    read (its position is not passed), so a follower never splits one."""
    first = utf8_start(view.data)
    last = utf8_end(view.data) if writing else len(view.data)
    last = max(last, first)
    return LogView(view.data[first:last], view.start + first, view.end - (len(view.data) - last))


def append_log(s: Session, store: LogStore, alloc_id: str, data: bytes,
               retention_days: int) -> tuple[int, bool]:
    """Append the spawner's output to an allocation's log (in any state, so
    the last words of a session that just ended are kept)."""
    a = ledger.get_allocation(s, _allocation_id(alloc_id))
    if a.log_purged_at is not None:
        raise _gone(a, retention_days)
    if not data:
        return len(store.read(a.id)), False
    return store.append(a.id, data)


def purge(s: Session, store: LogStore, now: dt.datetime, retention_days: int) -> list[str]:
    """Delete the logs the retention rule says are due and mark them purged.
    Files go first: a crash in between deletes them again next time rather
    than leaving a file no pass would ever look at."""
    rows = s.execute(select(Allocation.id, Allocation.released_at, Allocation.log_purged_at)
                     .where(Allocation.released_at.is_not(None),
                            Allocation.log_purged_at.is_(None)))
    due = to_purge((Ended(*row) for row in rows), now, retention_days)
    for alloc_id in due:
        store.delete(alloc_id)
    for i in range(0, len(due), 500):
        s.execute(update(Allocation).where(Allocation.id.in_(due[i:i + 500]))
                  .values(log_purged_at=now))
    return due
