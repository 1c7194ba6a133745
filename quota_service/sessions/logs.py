"""Per-session logs: one file per allocation, capped, purged after retention.

The spawner sends a session's output as it comes (``append``); the file
keeps at most ``max_bytes``: when an append would pass the cap, the oldest
bytes are dropped and a line at the top says so. Rewrites go through a
temporary file and ``os.replace``, so a crash leaves the old file or the
new one, never half of one. Bytes are stored as they come (any encoding);
readers decode them.

``to_purge`` decides which logs the retention rule deletes; it is pure.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..scheduling import ledger
from ..core.authz import Principal
from ..core.errors import Gone, NotFound
from ..core.models import Allocation
from ..core.orm import aware

TRUNCATED = b"[hubgrid: older output was dropped to keep this log within "
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


def marker(max_bytes: int) -> bytes:
    return TRUNCATED + str(max_bytes).encode() + b" bytes]\n"


def without_marker(data: bytes) -> bytes:
    """The log's content without a truncation line at its top."""
    if data.startswith(TRUNCATED):
        return data.partition(b"\n")[2]
    return data


def appended(current: bytes, data: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """The file after appending ``data``: (content, truncated). Pure.

    Up to ``max_bytes`` the bytes are kept whole; past it, the truncation
    line and the newest bytes that fit beside it, ``max_bytes`` in all."""
    whole = current + data
    if len(whole) <= max_bytes:
        return whole, False
    line = marker(max_bytes)
    keep = max_bytes - len(line)
    return line + without_marker(whole)[-keep:], True


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
        path = self.path(alloc_id)
        try:
            with open(path, "rb") as f:
                if tail is not None:
                    size = f.seek(0, os.SEEK_END)
                    f.seek(max(size - tail, 0))
                return f.read()
        except FileNotFoundError:
            return b""

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
             retention_days: int) -> bytes:
    """The log of an allocation the caller may see (as ``GET allocations/{id}``:
    its owner, also through their keypairs, admins of its domain, superadmins)."""
    a = ledger.visible_allocation(s, p, _allocation_id(alloc_id))
    if a.log_purged_at is not None:
        raise _gone(a, retention_days)
    return store.read(a.id, tail)


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
