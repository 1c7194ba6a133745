"""Owner and mode of what the service writes into a folder: one rule, one place.

Sessions mount a folder's directory and run as the folder's owner
(``vfolder_uid``:``vfolder_gid``, jovyan 1000:100 by default; the folder's
directory is chowned to it and has mode 2770). The service itself runs as
root with ``umask 077`` (scripts/run.sh), so a file it creates would be
``root:root 0600`` -- unreadable in the session. So every file and
directory the service puts into a folder (an upload, PUT or tus, when it
lands; a directory it makes; an entry of its own it moves) is *settled*:

- owner and group: those of the folder's root directory, when the service
  runs as root (it alone may chown); otherwise left as made (the root's
  setgid bit gives new entries its group);
- mode: :data:`FILE_MODE` for a regular file, :data:`DIR_MODE` for a
  directory, set with ``fchmod`` -- never left to the umask.

It is done on a descriptor opened without following links, so a session
cannot make the service chown or chmod anything but the entry itself.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

#: a file the service writes: read and write for the folder's owner and group
FILE_MODE = 0o660
#: a directory: the same plus search; setgid keeps new entries in the group
DIR_MODE = 0o2770

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


@dataclass(frozen=True)
class Owner:
    """Who gets what the service writes into one folder (-1: keep as made)."""

    uid: int = -1
    gid: int = -1

    @property
    def changes(self) -> bool:
        return (self.uid, self.gid) != (-1, -1)


def folder_owner(root: os.stat_result, euid: int) -> Owner:
    """The owner of new entries of a folder whose root directory is ``root``,
    for a service running as ``euid``: the root's uid and gid as root, else
    nothing to change (only root may give a file away)."""
    if euid != 0:
        return Owner()
    return Owner(root.st_uid, root.st_gid)


def mode_for(st_mode: int) -> int | None:
    """The mode an entry of this type gets (None: not a file or directory --
    a symlink or special file is never touched)."""
    if stat.S_ISREG(st_mode):
        return FILE_MODE
    if stat.S_ISDIR(st_mode):
        return DIR_MODE
    return None


def settle(fd: int, owner: Owner) -> None:
    """Give the open file or directory ``fd`` its owner and mode."""
    mode = mode_for(os.fstat(fd).st_mode)
    if mode is None:
        return
    if owner.changes:
        os.fchown(fd, owner.uid, owner.gid)
    os.fchmod(fd, mode)  # after chown, which may clear set-id bits


def settle_at(dir_fd: int, name: str, owner: Owner) -> None:
    """:func:`settle` the entry ``name`` of directory ``dir_fd``; a symlink
    or special file (or a name gone meanwhile) is left alone."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if mode_for(st.st_mode) is None:
        return
    try:
        fd = os.open(name, _OPEN | (os.O_DIRECTORY if stat.S_ISDIR(st.st_mode) else 0),
                     dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        if e.errno == errno.ELOOP:  # swapped for a symlink meanwhile
            return
        raise
    try:
        if os.fstat(fd).st_ino == st.st_ino:
            settle(fd, owner)
    finally:
        os.close(fd)
