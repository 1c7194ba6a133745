"""The uploads of one service process: plain (PUT) and tus, over the staging
files (``staging``), the tus state (``tus``) and the quota book."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import Conflict, NotFound
from .staging import BadUpload, QuotaBook, Reservation, Upload, check_target, sweep_staging
from .tree import FolderFS
from .tus import TusState, new_tus_id, tus_load, tus_offset, tus_remove, tus_save


@dataclass
class Pending:
    """An upload admitted (its bytes reserved) and being written."""

    upload: Upload
    reservation: Reservation
    parts: tuple[str, ...]
    overwrite: bool


class Uploads:
    """The uploads of this service process: the quota book, the staging files
    being written, and the staging sweep (of a staging directory at its first
    use after start, then at most every ``sweep_every`` seconds).

    ``access`` arguments are the vfolder core's FolderAccess (``folder_id``,
    ``root``, ``staging``, ``quota_key``, ``size_limit``, ``used``);
    ``usage_changed(folder_id, delta)`` records real usage.
    """

    def __init__(self, staging_max_age: float = 24 * 3600, tus_idle: float = 7 * 24 * 3600,
                 clock=None, sweep_every: float = 3600.0):
        import time

        self.book = QuotaBook()
        self.staging_max_age = staging_max_age
        self.tus_idle = tus_idle
        self.clock = clock or time.time
        self.busy: set[str] = set()
        self.sweep_every = sweep_every
        self._swept: dict[Path, float] = {}

    # plain uploads

    async def begin(self, access, parts: tuple[str, ...], length: int, overwrite: bool,
                    ) -> Pending:
        """Check the target, reserve ``length`` bytes, open the staging file.
        Nothing is written when this refuses."""
        if length < 0:
            raise BadUpload("the upload's length must be 0 or more bytes")
        self.sweep(access.staging)
        fs = FolderFS(access.root)
        check_target(fs, parts, overwrite)
        r = await self.book.reserve(access.quota_key, length, access.used, access.size_limit)
        try:
            upload = Upload.create(access.staging, length)
        except BaseException:
            self.book.release(r)
            raise
        self.busy.add(upload.name)
        return Pending(upload, r, parts, overwrite)

    async def finish(self, p: Pending, access, usage_changed) -> tuple[dict, int]:
        """Sync, move into place, record the usage, release: (entry, usage delta)."""
        try:
            if p.upload.offset != p.upload.length:
                raise BadUpload(f"the body has {p.upload.offset} of the declared "
                                f"{p.upload.length} bytes")
            await asyncio.get_running_loop().run_in_executor(None, p.upload.sync)
            entry, delta = p.upload.commit(FolderFS(access.root), p.parts, p.overwrite)
            usage_changed(access.folder_id, delta)
            return entry, delta
        finally:
            self.abort(p)

    def abort(self, p: Pending | None) -> None:
        """Remove the staging file and release the bytes (idempotent)."""
        if p is None:
            return
        p.upload.abort()
        self.busy.discard(p.upload.name)
        self.book.release(p.reservation)

    # tus uploads

    async def tus_create(self, access, owner: str, parts: tuple[str, ...], length: int,
                         overwrite: bool, created: str) -> TusState:
        """Check the target, reserve, write the state; an empty upload lands at once."""
        if length < 0:
            raise BadUpload("Upload-Length: must be 0 or more bytes")
        self.sweep(access.staging)
        check_target(FolderFS(access.root), parts, overwrite)
        state = TusState(id=new_tus_id(), folder_id=access.folder_id, owner=owner,
                         path="/".join(parts), length=length, overwrite=overwrite,
                         created=created)
        r = await self.book.reserve(access.quota_key, length, access.used, access.size_limit,
                                    token=f"tus:{state.id}")
        try:
            tus_save(access.staging, state)
        except BaseException:
            self.book.release(r)
            tus_remove(access.staging, state.id)
            raise
        return state

    def tus_get(self, access, owner: str, upload_id: str) -> TusState:
        """The caller's upload ``upload_id`` into this folder, or NotFound (also
        for someone else's upload: its existence is not revealed)."""
        self.sweep(access.staging)
        state = tus_load(access.staging, upload_id)
        if state is None or state.folder_id != access.folder_id or state.owner != owner:
            raise NotFound(f"no upload {upload_id[:40]!r} of yours in this folder")
        return state

    async def tus_reserve(self, access, state: TusState) -> Reservation:
        """The upload's reservation; made again after a restart (may be refused
        if the quota filled up meanwhile)."""
        token = f"tus:{state.id}"
        if self.book.holds(token):
            return Reservation(access.quota_key, token, state.length)
        return await self.book.reserve(access.quota_key, state.length, access.used,
                                       access.size_limit, token=token)

    def tus_open(self, access, state: TusState, offset: int, nbytes: int) -> Upload:
        """Open the upload to append ``nbytes`` at ``offset`` (must be the
        current one); one writer at a time."""
        if state.part_name in self.busy:
            raise Conflict("another request is writing this upload; wait for it to end")
        current = tus_offset(access.staging, state)
        if offset != current:
            raise Conflict(f"Upload-Offset: {offset}, but the upload has {current} bytes")
        if offset + nbytes > state.length:
            raise BadUpload(f"offset {offset} + {nbytes} bytes passes the upload's length "
                            f"{state.length}")
        upload = Upload.resume(access.staging, state.part_name, state.length)
        self.busy.add(state.part_name)
        return upload

    def tus_pause(self, upload: Upload) -> None:
        """A request ended (or broke) before the end: keep the bytes to resume."""
        upload.close()
        self.busy.discard(upload.name)

    async def tus_complete(self, access, state: TusState, upload: Upload,
                           usage_changed) -> tuple[dict, int]:
        """The last byte arrived: move the file into place (or fail and drop it)."""
        try:
            await asyncio.get_running_loop().run_in_executor(None, upload.sync)
            entry, delta = upload.commit(FolderFS(access.root), state.parts, state.overwrite)
            usage_changed(access.folder_id, delta)
            return entry, delta
        finally:
            self.busy.discard(upload.name)
            self.tus_end(access, state)

    def tus_end(self, access, state: TusState) -> None:
        """Forget the upload: files and reservation (termination, completion)."""
        tus_remove(access.staging, state.id)
        self.book.release(Reservation(access.quota_key, f"tus:{state.id}", state.length))

    # housekeeping

    def sweep(self, staging: Path, force: bool = False) -> list[str]:
        """Sweep ``staging`` if it is due (see :func:`plan_sweep`); returns the
        tus uploads it ended (their reservations are released)."""
        now = self.clock()
        last = self._swept.get(staging)
        if last is not None and now - last < self.sweep_every and not force:
            return []
        self._swept[staging] = now
        ended = sweep_staging(staging, now, self.staging_max_age, self.tus_idle,
                              frozenset(self.busy))
        for upload_id in ended:
            self.book.release_token(f"tus:{upload_id}")
        return ended
