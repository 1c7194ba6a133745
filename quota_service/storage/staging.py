"""Staged uploads and quota reservations.

An upload is written to a uniquely named file in the staging directory
(same filesystem as the folder, outside every folder), fsync'ed, and moved
into place when complete -- a hard link (fails if the name exists) or,
with ``overwrite``, a rename (never over a directory). An aborted upload
removes its staging file. :class:`QuotaBook` reserves an upload's declared
size before the first byte is written. The staging sweep removes what a
crash left behind and tus uploads idle for too long.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..core.errors import ApiError, Conflict
from .modes import settle_at
from .paths import show
from .tree import _DIR_FLAGS, FolderFS, _entry, _lstat, file_bytes


class QuotaExceeded(ApiError):
    status = 413
    reason = "quota-exceeded"


class BadUpload(ApiError):
    """An upload's body disagrees with what it declared."""

    status = 400
    reason = "bad-upload"



# --- quota reservations ---------------------------------------------------

@dataclass(frozen=True)
class Reservation:
    key: str
    token: str
    nbytes: int


class QuotaBook:
    """Bytes promised to uploads in flight, per quota key, in this process.

    ``reserve`` admits an upload only if ``used + in flight + nbytes <=
    limit``. When an upload completes, the caller first records the real
    usage (``folder_usage_changed``), then releases: for that instant the
    bytes count twice, never zero times. Callers read ``used`` right before
    ``reserve`` with no ``await`` in between, so a completion cannot slip
    between the read and the check.
    """

    def __init__(self):
        self._lock = asyncio.Lock()
        self._held: dict[str, dict[str, int]] = {}

    def in_flight(self, key: str) -> int:
        return sum(self._held.get(key, {}).values())

    def holds(self, token: str) -> bool:
        return any(token in held for held in self._held.values())

    async def reserve(self, key: str, nbytes: int, used: int, limit: int | None,
                      token: str | None = None) -> Reservation:
        async with self._lock:
            flight = self.in_flight(key)
            if limit is not None and used + flight + nbytes > limit:
                raise QuotaExceeded(
                    f"vfolder quota: used {used} + in flight {flight} + upload {nbytes} "
                    f"> limit {limit} bytes",
                    detail={"used": used, "in_flight": flight, "upload": nbytes, "limit": limit},
                )
            token = token or secrets.token_hex(12)
            self._held.setdefault(key, {})[token] = nbytes
            return Reservation(key, token, nbytes)

    def release_token(self, token: str) -> None:
        for key, held in list(self._held.items()):
            if token in held:
                self.release(Reservation(key, token, held[token]))

    def release(self, r: Reservation | None) -> None:
        """Give the bytes back (idempotent)."""
        if r is None:
            return
        held = self._held.get(r.key, {})
        held.pop(r.token, None)
        if not held:
            self._held.pop(r.key, None)


# --- uploads --------------------------------------------------------------

_STAGING_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Upload:
    """The bytes of one upload in the staging directory, appended in order.

    ``write`` refuses bytes past the declared ``length``; ``commit`` moves the
    complete file into the folder; ``abort`` removes it. Made with
    :meth:`create` (a new file) or :meth:`resume` (a tus upload's file).
    """

    def __init__(self, staging: Path, name: str, length: int, fd: int, offset: int):
        self.staging = staging
        self.name = name
        self.length = length
        self.offset = offset
        self._fd: int | None = fd

    @classmethod
    def create(cls, staging: Path, length: int, name: str | None = None) -> Upload:
        name = name or f"put-{secrets.token_hex(16)}.part"
        with _staging_dir(staging) as sfd:
            fd = os.open(name, _STAGING_FLAGS, 0o666, dir_fd=sfd)
        return cls(staging, name, length, fd, 0)

    @classmethod
    def resume(cls, staging: Path, name: str, length: int) -> Upload:
        with _staging_dir(staging) as sfd:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=sfd)
        return cls(staging, name, length, fd, os.fstat(fd).st_size)

    @property
    def open(self) -> bool:
        return self._fd is not None

    def write(self, chunk: bytes) -> None:
        if self._fd is None:
            raise BadUpload("the upload is closed")
        if self.offset + len(chunk) > self.length:
            raise BadUpload(f"the body is longer than the declared {self.length} bytes")
        view = memoryview(chunk)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self.offset += n

    def sync(self) -> None:
        """Flush to disk and close (keeps the staging file)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        """Close without flushing (keeps the staging file: a tus upload to resume)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def commit(self, fs: FolderFS, parts: tuple[str, ...], overwrite: bool) -> tuple[dict, int]:
        """Move the complete, synced file to ``parts``: (its entry, usage delta).

        Without ``overwrite`` an existing name is a Conflict (a hard link,
        which fails atomically if the name exists); with it a file or symlink
        is replaced (atomic rename), a directory never. The staging file is
        gone afterwards either way.
        """
        if self.offset != self.length:
            raise BadUpload(f"the upload has {self.offset} of its {self.length} bytes")
        self.sync()
        try:
            with _staging_dir(self.staging) as sfd, fs.parent(parts) as (dfd, name):
                old = _lstat(dfd, name)
                if old is not None and not overwrite:
                    raise Conflict(f"{show(parts)} exists; overwrite=true replaces it")
                if old is not None and stat.S_ISDIR(old.st_mode):
                    raise Conflict(f"{show(parts)} is a directory; a directory is never replaced")
                # owner and mode before it shows in the folder (storage.modes)
                settle_at(sfd, self.name, fs.owner())
                try:
                    if overwrite:
                        os.rename(self.name, name, src_dir_fd=sfd, dst_dir_fd=dfd)
                    else:
                        os.link(self.name, name, src_dir_fd=sfd, dst_dir_fd=dfd,
                                follow_symlinks=False)
                except FileExistsError:
                    raise Conflict(f"{show(parts)} exists; overwrite=true replaces it") from None
                except (IsADirectoryError, NotADirectoryError):
                    raise Conflict(f"{show(parts)} is a directory; a directory is never "
                                   "replaced") from None
                os.fsync(dfd)
                entry = _entry(name, os.stat(name, dir_fd=dfd, follow_symlinks=False))
        finally:
            self.abort()
        return entry, self.length - (file_bytes(old) if old is not None else 0)

    def abort(self) -> None:
        """Close and remove the staging file (idempotent)."""
        self.close()
        try:
            with _staging_dir(self.staging) as sfd:
                os.unlink(self.name, dir_fd=sfd)
        except FileNotFoundError:
            pass


@contextmanager
def _staging_dir(staging: Path) -> Iterator[int]:
    fd = os.open(staging, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def check_target(fs: FolderFS, parts: tuple[str, ...], overwrite: bool) -> None:
    """Refuse an upload to ``parts`` early, before any byte is taken: a
    missing parent directory, a directory there, an existing name without
    ``overwrite``. ``commit`` checks again."""
    with fs.parent(parts) as (fd, name):
        st = _lstat(fd, name)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        raise Conflict(f"{show(parts)} is a directory; a directory is never replaced")
    if not overwrite:
        raise Conflict(f"{show(parts)} exists; overwrite=true replaces it")



# --- sweeping the staging directory -----------------------------------------

_STAGING_NAME = re.compile(r"(put-[0-9a-f]{32}\.part|tus-([0-9a-f]{32})\.(part|json|json\.tmp))")


def plan_sweep(entries: Iterable[tuple[str, float]], now: float, max_age: float,
               tus_idle: float, busy: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """Which staging files to delete: (names, tus upload ids they end).

    ``entries`` are (name, mtime) of the directory's files; ``now`` and the
    ages in seconds. A tus upload (state and part) goes once idle for
    ``tus_idle`` (its newest file). Anything else of ours -- a plain upload's
    file, a tus part without state, a half-written state -- goes once older
    than ``max_age`` (a crash's leftovers). Names in ``busy`` (uploads this
    process is writing) and names not ours are kept.
    """
    tus: dict[str, dict[str, float]] = {}
    loose: list[tuple[str, float]] = []
    for name, mtime in entries:
        m = _STAGING_NAME.fullmatch(name)
        if m is None or name in busy:
            continue
        if m.group(2):
            tus.setdefault(m.group(2), {})[name] = mtime
        else:
            loose.append((name, mtime))
    names = [name for name, mtime in loose if now - mtime > max_age]
    ended = []
    for upload_id, files in sorted(tus.items()):
        if any(f"tus-{upload_id}.{ext}" in busy for ext in ("part", "json")):
            continue
        if f"tus-{upload_id}.json" in files:
            if now - max(files.values()) > tus_idle:
                names += sorted(files)
                ended.append(upload_id)
        else:
            names += sorted(n for n, mtime in files.items() if now - mtime > max_age)
    return names, ended


def sweep_staging(staging: Path, now: float, max_age: float, tus_idle: float,
                  busy: frozenset[str] = frozenset()) -> list[str]:
    """Delete what :func:`plan_sweep` says; returns the tus upload ids ended."""
    with _staging_dir(staging) as sfd:
        with os.scandir(sfd) as it:
            entries = [(e.name, e.stat(follow_symlinks=False).st_mtime) for e in it
                       if e.is_file(follow_symlinks=False)]
        names, ended = plan_sweep(entries, now, max_age, tus_idle, busy)
        for name in names:
            try:
                os.unlink(name, dir_fd=sfd)
            except FileNotFoundError:
                pass
    return ended
