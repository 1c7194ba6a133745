"""The tree under one folder's root (:class:`FolderFS`), never leaving it.

Symlinks are never followed, anywhere: a path is walked one directory at a
time with ``open(name, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)`` and the
last name is worked on relative to its parent's descriptor, so no check can
be raced by swapping a directory for a link. A symlink a session made
inside the folder is listed as a symlink, can be moved or deleted (the link
itself), and is never read through. Paths come parsed (``storage.paths``).
"""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..core.errors import Conflict, NotFound
from .modes import Owner, folder_owner, settle_at
from .paths import BadPath, show


class DeleteFailed(Conflict):
    """A tree delete stopped part-way; ``freed`` bytes were deleted before it did."""

    def __init__(self, message: str, freed: int):
        super().__init__(message)
        self.freed = freed



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

    def owner(self) -> Owner:
        """Who gets the entries the service writes here (``storage.modes``)."""
        return folder_owner(os.stat(self.root), os.geteuid())

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
        owner = self.owner()
        if not parents:
            with self.parent(parts) as (fd, name):
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                except FileExistsError:
                    raise Conflict(f"{show(parts)} already exists") from None
                settle_at(fd, name, owner)
            return self.stat(parts)
        if not parts:
            raise BadPath("path: names the folder itself; name a directory inside it")
        for i in range(len(parts)):
            with self.parent(parts[:i + 1]) as (fd, name):
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                    settle_at(fd, name, owner)
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
                    self._settle_moved(dfd, dname, sst)
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
            self._settle_moved(dfd, dname, sst)
            return file_bytes(dst_st)

    def _settle_moved(self, dfd: int, name: str, st: os.stat_result) -> None:
        """A moved entry the service wrote itself (one stored before uploads
        were settled: ``root:root 0600``) gets the folder's owner and mode; a
        session's own entries keep theirs."""
        if st.st_uid == os.geteuid():
            settle_at(dfd, name, self.owner())

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
