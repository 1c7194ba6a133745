"""The files of a virtual folder on disk: safe paths, listing, moves, deletes, uploads.

No database and no HTTP here: the handlers (``handlers/files.py``) resolve
the caller's access to a folder and call these functions with the folder's
root and staging directories.

Paths. A user path is text relative to the folder's root, ``/`` between
names. :func:`parse_path` turns it into a tuple of names or refuses it:
NUL and other control characters, bidi overrides, backslashes, a leading
``/``, empty names (``a//b``; one trailing ``/`` is dropped), ``.`` and
``..`` anywhere (``a/./b`` is refused, not normalised: a path has one
spelling), names whose NFKC form is ``.``/``..`` or holds a ``/`` (ONE DOT
LEADER, fullwidth solidus, ...), names over 255 bytes, paths over 4096
bytes or 64 levels. Text is normalised to NFC first, so an NFD name and its
NFC twin are the same file. Percent-decoding is the handler's job and
happens exactly once: ``%2e%2e`` reaching this module is a plain name.

Symlinks are never followed, anywhere: :class:`FolderFS` walks a path one
directory at a time with ``open(name, O_DIRECTORY | O_NOFOLLOW,
dir_fd=parent)`` and works on the last name relative to its parent's
descriptor, so no check can be raced by swapping a directory for a link.
A symlink a session made inside the folder is listed as a symlink, can be
moved or deleted (the link itself), and is never read through.

Uploads are written to a uniquely named file in the staging directory
(same filesystem as the folder, outside every folder), fsync'ed, and moved
into place when complete -- a hard link (fails if the name exists) or,
with ``overwrite``, a rename (never over a directory). An aborted upload
removes its staging file. Quota: :class:`QuotaBook` reserves an upload's
declared size before the first byte is written.
"""

from __future__ import annotations

import asyncio
import base64
import ctypes
import datetime as dt
import errno
import json
import os
import re
import secrets
import stat
import unicodedata
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator

from .errors import ApiError, Conflict, NotFound

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
MAX_DEPTH = 64

# bidi embeddings, overrides and isolates: names that display as another name
_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))
_REFUSED_CATEGORIES = ("Cc", "Cs", "Zl", "Zp")


class BadPath(ApiError):
    status = 400
    reason = "bad-path"


class QuotaExceeded(ApiError):
    status = 413
    reason = "quota-exceeded"


class BadUpload(ApiError):
    """An upload's body disagrees with what it declared."""

    status = 400
    reason = "bad-upload"


class DeleteFailed(Conflict):
    """A tree delete stopped part-way; ``freed`` bytes were deleted before it did."""

    def __init__(self, message: str, freed: int):
        super().__init__(message)
        self.freed = freed


# --- paths ----------------------------------------------------------------

def show(parts: tuple[str, ...]) -> str:
    """A parsed path as the user would write it (the root is ``/``)."""
    return "/".join(parts) or "/"


def parse_path(text: str, *, root_ok: bool = False) -> tuple[str, ...]:
    """A user path -> its names (``()`` is the folder's root), or BadPath."""
    if not isinstance(text, str):
        raise BadPath("path: must be text")
    for ch in text:
        if unicodedata.category(ch) in _REFUSED_CATEGORIES or ord(ch) in _BIDI:
            raise BadPath(f"path: contains the control character U+{ord(ch):04X}")
    if "\\" in text:
        raise BadPath("path: backslashes are not allowed ('/' separates names)")
    text = unicodedata.normalize("NFC", text)
    if text.startswith("/"):
        raise BadPath("path: must be relative to the folder (no leading '/')")
    if len(text.encode()) > MAX_PATH_BYTES:
        raise BadPath(f"path: longer than {MAX_PATH_BYTES} bytes")
    if text.endswith("/"):
        text = text[:-1]  # 'dir/' names the directory 'dir'
    if text == "":
        if root_ok:
            return ()
        raise BadPath("path: names the folder itself; name a file or directory inside it")
    parts = tuple(text.split("/"))
    if len(parts) > MAX_DEPTH:
        raise BadPath(f"path: deeper than {MAX_DEPTH} levels")
    for part in parts:
        if part == "":
            raise BadPath("path: empty name (two '/' in a row)")
        if part in (".", ".."):
            raise BadPath("path: '.' and '..' are not allowed")
        folded = unicodedata.normalize("NFKC", part)
        if folded in (".", "..") or "/" in folded or "\\" in folded:
            raise BadPath(f"path: the name {part!r} looks like '.', '..' or a path separator")
        if len(part.encode()) > MAX_NAME_BYTES:
            raise BadPath(f"path: a name is longer than {MAX_NAME_BYTES} bytes")
    return parts


# --- the folder's tree ----------------------------------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _entry(name: str, st: os.stat_result) -> dict:
    kind = _kind(st.st_mode)
    mtime = dt.datetime.fromtimestamp(st.st_mtime_ns // 10**9, dt.timezone.utc)
    return {"name": name, "type": kind, "size": st.st_size if kind == "file" else None,
            "mtime": mtime.isoformat()}


def file_bytes(st: os.stat_result) -> int:
    """What removing a name frees of its folder's usage: a regular file's
    size when this is its last link (usage counts each inode once)."""
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_nlink <= 1 else 0


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


_libc = None


def _rename_noreplace(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """rename that fails with FileExistsError if ``dst`` exists (renameat2
    RENAME_NOREPLACE; a check-then-rename where the kernel lacks it)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(_libc, "renameat2", None)
    if fn is not None:
        if fn(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), 1) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err), dst)
    if _lstat(dst_fd, dst) is not None:
        raise FileExistsError(errno.EEXIST, "exists", dst)
    os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)


@dataclass(frozen=True)
class FolderFS:
    """The tree under one folder's root, never leaving it."""

    root: Path

    @contextmanager
    def directory(self, parts: tuple[str, ...]) -> Iterator[int]:
        """A descriptor of the directory ``parts``, reached without following links."""
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for i, part in enumerate(parts):
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    raise NotFound(f"no such directory: {show(parts[:i + 1])}") from None
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    st = _lstat(fd, part)
                    what = "a symlink (not followed)" if st and stat.S_ISLNK(st.st_mode) \
                        else "not a directory"
                    raise Conflict(f"{show(parts[:i + 1])} is {what}") from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def parent(self, parts: tuple[str, ...]) -> Iterator[tuple[int, str]]:
        """(descriptor of the parent directory, last name) of a non-root path."""
        if not parts:
            raise BadPath("path: names the folder itself; name a file or directory inside it")
        with self.directory(parts[:-1]) as fd:
            yield fd, parts[-1]

    def stat(self, parts: tuple[str, ...]) -> dict:
        """The entry ``parts`` names (a symlink is described, not followed)."""
        if not parts:
            with self.directory(()) as fd:
                return _entry("", os.fstat(fd))
        with self.parent(parts) as (fd, name):
            st = _lstat(fd, name)
            if st is None:
                raise NotFound(f"no such file or directory: {show(parts)}")
            return _entry(name, st)

    def list(self, parts: tuple[str, ...]) -> list[dict]:
        """The entries of directory ``parts``, by name."""
        with self.directory(parts) as fd:
            with os.scandir(fd) as it:
                entries = []
                for e in it:
                    try:
                        entries.append(_entry(e.name, e.stat(follow_symlinks=False)))
                    except FileNotFoundError:
                        continue  # deleted while listing
        return sorted(entries, key=lambda e: e["name"])

    def mkdir(self, parts: tuple[str, ...], parents: bool = False) -> dict:
        """Make directory ``parts``; with ``parents`` its missing parents too,
        and an existing directory is fine (``mkdir -p``)."""
        if not parents:
            with self.parent(parts) as (fd, name):
                try:
                    os.mkdir(name, dir_fd=fd)
                except FileExistsError:
                    raise Conflict(f"{show(parts)} already exists") from None
            return self.stat(parts)
        if not parts:
            raise BadPath("path: names the folder itself; name a directory inside it")
        for i in range(len(parts)):
            with self.parent(parts[:i + 1]) as (fd, name):
                try:
                    os.mkdir(name, dir_fd=fd)
                except FileExistsError:
                    st = _lstat(fd, name)
                    if st is None or not stat.S_ISDIR(st.st_mode):
                        what = "a symlink" if st and stat.S_ISLNK(st.st_mode) else "not a directory"
                        raise Conflict(f"{show(parts[:i + 1])} exists and is {what}") from None
        return self.stat(parts)

    def move(self, src: tuple[str, ...], dst: tuple[str, ...], overwrite: bool = False) -> int:
        """Rename ``src`` to ``dst`` inside the folder; returns the bytes freed
        (the size of a file ``dst`` replaced, with ``overwrite``). A symlink
        moves as a link. A directory is never replaced."""
        if not src or not dst:
            raise BadPath("path: cannot move the folder itself or onto it")
        if dst[:len(src)] == src:
            raise Conflict(f"cannot move {show(src)} into itself")
        with self.parent(src) as (sfd, sname), self.parent(dst) as (dfd, dname):
            sst = _lstat(sfd, sname)
            if sst is None:
                raise NotFound(f"no such file or directory: {show(src)}")
            dst_st = _lstat(dfd, dname)
            if dst_st is None:
                try:
                    _rename_noreplace(sfd, sname, dfd, dname)
                    return 0
                except FileExistsError:
                    dst_st = _lstat(dfd, dname)
                    if dst_st is None:  # it came and went: let the caller retry
                        raise Conflict(f"{show(dst)} changed during the move; try again") from None
            if not overwrite:
                raise Conflict(f"{show(dst)} exists; overwrite=true replaces it")
            if stat.S_ISDIR(dst_st.st_mode):
                raise Conflict(f"{show(dst)} is a directory; a directory is never replaced")
            if stat.S_ISDIR(sst.st_mode):
                raise Conflict(f"cannot replace the file {show(dst)} with a directory")
            try:
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            except (IsADirectoryError, NotADirectoryError):
                raise Conflict(f"{show(dst)} changed during the move; try again") from None
            return file_bytes(dst_st)

    def delete(self, parts: tuple[str, ...], recursive: bool = False) -> int:
        """Delete a file, a symlink (the link, not its target) or a directory
        (with ``recursive`` its whole tree, links not followed); returns the
        bytes freed. A part-way failure raises DeleteFailed with what was freed."""
        with self.parent(parts) as (fd, name):
            st = _lstat(fd, name)
            if st is None:
                raise NotFound(f"no such file or directory: {show(parts)}")
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=fd)
                return file_bytes(st)
            if not recursive:
                try:
                    os.rmdir(name, dir_fd=fd)
                except OSError as e:
                    if e.errno != errno.ENOTEMPTY:
                        raise
                    raise Conflict(f"{show(parts)} is not empty; recursive=true deletes it "
                                   "with everything inside") from None
                return 0
            freed = [0]
            try:
                _rmtree(fd, name, freed, 0)
            except OSError as e:
                raise DeleteFailed(f"deleting {show(parts)} stopped part-way: {e.strerror}",
                                   freed[0]) from None
            except DeleteFailed as e:
                raise DeleteFailed(f"deleting {show(parts)} stopped part-way: {e.message}",
                                   freed[0]) from None
            return freed[0]

    def open_read(self, parts: tuple[str, ...]) -> tuple[int, os.stat_result]:
        """A read descriptor of the regular file ``parts`` and its stat; the
        caller closes it. A symlink, FIFO or device is refused."""
        with self.parent(parts) as (fd, name):
            try:
                rfd = os.open(name, _READ_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                raise NotFound(f"no such file: {show(parts)}") from None
            except OSError as e:
                if e.errno == errno.ELOOP:
                    raise Conflict(f"{show(parts)} is a symlink (not followed)") from None
                raise
        st = os.fstat(rfd)
        if not stat.S_ISREG(st.st_mode):
            os.close(rfd)
            raise Conflict(f"{show(parts)} is not a regular file")
        os.set_blocking(rfd, True)
        return rfd, st


MAX_TREE_DEPTH = 512


def _rmtree(parent_fd: int, name: str, freed: list[int], depth: int) -> None:
    if depth > MAX_TREE_DEPTH:
        raise DeleteFailed(f"the tree is deeper than {MAX_TREE_DEPTH} levels", 0)
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    try:
        with os.scandir(fd) as it:
            entries = list(it)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                _rmtree(fd, e.name, freed, depth + 1)
            else:
                st = e.stat(follow_symlinks=False)
                os.unlink(e.name, dir_fd=fd)
                freed[0] += file_bytes(st)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)


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


# --- tus uploads: state on disk --------------------------------------------

_TUS_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class TusState:
    """A tus upload, as stored next to its bytes (``tus-<id>.json``)."""

    id: str
    folder_id: str
    owner: str
    path: str  # the parsed target path, '/'-joined
    length: int
    overwrite: bool
    created: str

    @property
    def part_name(self) -> str:
        return f"tus-{self.id}.part"

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("/"))


def new_tus_id() -> str:
    return secrets.token_hex(16)


def tus_save(staging: Path, state: TusState) -> None:
    """Write the state (atomically) and create the empty part file."""
    data = json.dumps(asdict(state)).encode()
    with _staging_dir(staging) as sfd:
        tmp = f"tus-{state.id}.json.tmp"
        fd = os.open(tmp, _STAGING_FLAGS, 0o600, dir_fd=sfd)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.close(os.open(state.part_name, _STAGING_FLAGS, 0o666, dir_fd=sfd))
        os.rename(tmp, f"tus-{state.id}.json", src_dir_fd=sfd, dst_dir_fd=sfd)
        os.fsync(sfd)


def tus_load(staging: Path, upload_id: str) -> TusState | None:
    """The state of upload ``upload_id``, or None (no such upload, or a malformed id)."""
    if not _TUS_ID.fullmatch(upload_id):
        return None
    try:
        with _staging_dir(staging) as sfd:
            fd = os.open(f"tus-{upload_id}.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=sfd)
            with os.fdopen(fd, "rb") as f:
                return TusState(**json.loads(f.read()))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def tus_offset(staging: Path, state: TusState) -> int:
    with _staging_dir(staging) as sfd:
        return os.stat(state.part_name, dir_fd=sfd, follow_symlinks=False).st_size


def tus_remove(staging: Path, upload_id: str) -> None:
    """Forget a tus upload: its state first (so no half-state remains), then its bytes."""
    with _staging_dir(staging) as sfd:
        for name in (f"tus-{upload_id}.json", f"tus-{upload_id}.part"):
            try:
                os.unlink(name, dir_fd=sfd)
            except FileNotFoundError:
                pass


def encode_metadata(meta: dict[str, str]) -> str:
    """The Upload-Metadata header for ``meta`` (for clients and tests)."""
    return ",".join(f"{k} {base64.b64encode(v.encode()).decode()}" for k, v in meta.items())


def parse_metadata(header: str) -> dict[str, str]:
    """Upload-Metadata: ``key base64,key2 base64`` -> {key: text}; BadUpload if malformed."""
    out: dict[str, str] = {}
    for item in filter(None, (i.strip() for i in header.split(","))):
        key, _, value = item.partition(" ")
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", key) or key in out:
            raise BadUpload(f"Upload-Metadata: bad or repeated key {key[:64]!r}")
        try:
            out[key] = base64.b64decode(value.strip(), validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            raise BadUpload(f"Upload-Metadata: the value of {key!r} is not base64 of UTF-8 "
                            "text") from None
    return out


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


# --- the uploads of one service process ---------------------------------------

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
