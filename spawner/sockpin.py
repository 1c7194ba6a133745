"""A session's socket, pinned where only the hub writes: the one way the hub,
the proxy and the gateway's haproxy reach a session's server.

Whatever runs outside a session treats everything the session can write as
hostile. A session's server binds its socket in a directory the session
owns (it must: binding makes a name there), so that name can be swapped
for anything at any moment: a link to the node's Docker socket, or to
another session's socket. Every ``connect`` by that name would follow it.

So nothing outside connects by that name. Once the socket is there, the
hub opens it without following links (``O_PATH | O_NOFOLLOW`` through the
directory's own fd), checks what it opened (a socket, owned by the
directory's owner, with no other name), and makes a hard link to exactly
that inode (``linkat`` through ``/proc/self/fd``) in a directory only root
writes: the pin. Clients connect to the pin, which the session can neither
replace nor point elsewhere; a session that swaps its own name afterwards
changes nothing that is reached (and is stopped by its spawner's poll,
:func:`current`).

The relay's socket goes the other way (the hub binds, the session
connects): it lives in a directory only root writes, and its owner and mode
are set through an fd that follows no link (:func:`own_socket`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat

_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class PinError(Exception):
    """What a session left where its socket should be is not its own socket."""


def private_dir(path: str, mode: int = 0o755, make: bool = False) -> None:
    """Check (``make``: make first, when missing) that ``path`` is a directory
    only this process's user writes: no link, owned by it, not writable by
    its group or others. OSError (EPERM) saying why otherwise."""
    if make:
        try:
            os.mkdir(path, mode)
            os.chmod(path, mode)  # whatever the umask
        except FileExistsError:
            pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise OSError(errno.EPERM, f"{path} is not a directory that only uid {os.geteuid()} "
                      "may write (a link, another owner, or group/other-writable)")


def _open_dir(directory: str) -> int:
    return os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def _link(fd: int, target: str) -> None:
    """Hard-link the inode behind ``fd`` at ``target`` (replacing what is
    there: ``target``'s directory is root's)."""
    tmp = f"{target}.new"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    if _libc.linkat(_AT_FDCWD, f"/proc/self/fd/{fd}".encode(), _AT_FDCWD,
                    os.fsencode(tmp), _AT_SYMLINK_FOLLOW) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot link the session's socket at {target}: {os.strerror(err)}"
                      + (" (the pin must be on the sessions' filesystem)"
                         if err == errno.EXDEV else ""))
    os.replace(tmp, target)


def pin(directory: str, name: str, target: str) -> bool:
    """Pin the socket ``name`` of ``directory`` (which a session writes) at
    ``target`` (in a directory it cannot): True once pinned (also when it
    already was), False while there is nothing there yet. PinError when
    what is there is not the session's own fresh socket: a link, something
    other than a socket, another owner, or a socket with other names (a
    hard link of someone else's)."""
    try:
        dfd = _open_dir(directory)
    except FileNotFoundError:
        return False
    try:
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            return False
        try:
            owner = os.fstat(dfd)
            if owner.st_mode & 0o022:
                raise PinError(f"{directory} may be written by others than its owner")
            st = os.fstat(fd)
            if not stat.S_ISSOCK(st.st_mode):
                raise PinError(f"{directory}/{name} is not a socket "
                               f"({'a link' if stat.S_ISLNK(st.st_mode) else 'another file type'})")
            if st.st_uid != owner.st_uid:
                raise PinError(f"{directory}/{name} belongs to uid {st.st_uid}, not to the "
                               f"session's uid {owner.st_uid}")
            try:
                have = os.stat(target, follow_symlinks=False)
            except FileNotFoundError:
                have = None
            if have is not None and (have.st_dev, have.st_ino) == (st.st_dev, st.st_ino):
                return True  # pinned before (a hub that restarted)
            if st.st_nlink != 1:
                raise PinError(f"{directory}/{name} has {st.st_nlink} names: not a socket "
                               "the session made")
            _link(fd, target)
            return True
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def current(directory: str, name: str, target: str) -> bool | None:
    """Whether the session's ``name`` still is the socket pinned at
    ``target``: None when nothing is pinned yet, False when the session
    removed or replaced it (its server is then out of reach). Only
    ``lstat``: nothing of the session's is opened or followed."""
    try:
        pinned = os.stat(target, follow_symlinks=False)
    except FileNotFoundError:
        return None
    try:
        dfd = _open_dir(directory)
    except FileNotFoundError:
        return False
    try:
        there = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    finally:
        os.close(dfd)
    return (there.st_dev, there.st_ino) == (pinned.st_dev, pinned.st_ino) \
        and stat.S_ISSOCK(there.st_mode)


def own_socket(path: str, uid: int, gid: int, mode: int) -> None:
    """Give the socket this process bound at ``path`` (in a directory only
    root writes: :func:`private_dir`) to ``uid``:``gid`` with ``mode``,
    through an fd that follows no link: a link found there instead is
    refused (PinError), never followed."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise PinError(f"{path} is not the socket just bound")
        # /proc/self/fd/N names the inode the fd holds, whatever its name now is
        os.chown(f"/proc/self/fd/{fd}", uid, gid)
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)
