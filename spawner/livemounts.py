"""Folders mounted into a running Docker session ("live mounts"), on the node.

A container's mounts are fixed when it is created; a folder made or shared
later reaches a running session by mount propagation. Each session gets,
at create, one more bind mount: its live directory on the node,
``<live root>/<allocation>/`` (root's, mode 0755: the session cannot write
it), at ``live_mount_dir`` in the container, read-only, with propagation
``rslave``. The live root is a shared mount on the node (made one here,
idempotently), so a folder bound at ``<live root>/<allocation>/<name>``
later appears at ``<live_mount_dir>/<name>`` in that session, and goes
when it is unmounted there. Nothing propagates back: the session's side
is a slave, and the session may not mount anyway (no capabilities).

Whatever a session can write is hostile (docs/architecture.md). Nothing
here opens, mounts onto or unmounts a path a session can create or
replace: the mount point is made by root in the session's live directory,
which only root writes (checked: no link, root's, not group/other
writable), and reached through that directory's fd; the folder's
directory is opened component by component without following any link
(``O_PATH | O_NOFOLLOW``), and that very directory is bound: a link
planted in a folder, or a folder swapped for a link, is never followed.
The bind is made detached (``open_tree``), made read-only and
nosuid/nodev (``mount_setattr``) and only then attached (``move_mount``):
a read-only folder is never writable in the session, not even for an
instant. Linux 5.12 or later.

``plan`` is pure (what to mount and unmount, from the service's list and
what the node has); ``Node`` does it on this machine's mount namespace,
which must be the engine's (an engine on this machine, as isolated
sessions need). Files a session holds open stay usable until it closes
them (an unmount is lazy): a revoke stops new opens, not open ones.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import posixpath
import re
from dataclasses import dataclass

from .sockpin import private_dir

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

# the new mount API's syscalls have one number on every architecture
_OPEN_TREE, _MOVE_MOUNT, _MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
_AT_EMPTY_PATH = 0x1000
_MOVE_MOUNT_F_EMPTY_PATH, _MOVE_MOUNT_T_EMPTY_PATH = 0x4, 0x40
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
_MS_BIND, _MS_REC, _MS_SHARED = 0x1000, 0x4000, 1 << 20
_MNT_DETACH = 2
_ALLOCATION = re.compile(r"^[a-z0-9-]{1,64}$")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def check_name(name: str) -> str:
    """A folder's name as a mount point in the live directory, or ValueError."""
    if not name or "/" in name or "\0" in name or name in (".", "..") or len(name) > 255:
        raise ValueError(f"vfolder name {name!r} cannot be a mount point")
    return name


@dataclass(frozen=True)
class Step:
    verb: str  # mount | unmount
    name: str
    path: str = ""
    read_only: bool = True


def plan(wanted: list[dict], present: dict[str, bool]) -> list[Step]:
    """The steps that make the live directory hold ``wanted`` (the service's
    live mounts: ``{"name", "path", "mode"}``) from ``present`` (name ->
    read-only, as mounted now): unmounts first (a folder gone, or whose mode
    changed: mounted again), then mounts, each by name. Entries whose name
    cannot be a mount point are left out."""
    want: dict[str, dict] = {}
    for m in wanted:
        try:
            want.setdefault(check_name(m["name"]), m)
        except ValueError:
            continue
    steps = [Step("unmount", n) for n, ro in sorted(present.items())
             if n not in want or (want[n]["mode"] != "rw") != ro]
    gone = {s.name for s in steps}
    steps += [Step("mount", n, m["path"], m["mode"] != "rw") for n, m in want.items()
              if n not in present or n in gone]
    return steps


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounted(mountinfo: str, directory: str) -> dict[str, bool]:
    """What is mounted in ``directory`` (name -> read-only), from the text
    of /proc/self/mountinfo."""
    out = {}
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 6:
            continue
        point = _unescape(fields[4])
        if posixpath.dirname(point) == directory:
            out[posixpath.basename(point)] = "ro" in fields[5].split(",")
    return out


def is_shared_mount(mountinfo: str, path: str) -> bool:
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 6 and _unescape(fields[4]) == path:
            optional = fields[6:fields.index("-")] if "-" in fields else []
            if any(f.startswith("shared:") for f in optional):
                return True
    return False


def _open_nofollow(path: str) -> int:
    """An O_PATH fd of the directory ``path``, reached component by
    component without following any link."""
    if not posixpath.isabs(path):
        raise ValueError(f"{path!r} is not an absolute path")
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in [p for p in path.split("/") if p]:
            if part in (".", ".."):
                raise OSError(errno.EPERM, f"{path}: '.' or '..' in the path")
            nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                          dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


@dataclass(frozen=True)
class Node:
    """The live directories under ``root`` on this machine (root only)."""

    root: str

    def directory(self, allocation: str) -> str:
        if not _ALLOCATION.match(allocation):
            raise ValueError(f"allocation id {allocation!r} cannot name a directory")
        return posixpath.join(self.root, allocation)

    def prepare(self, allocation: str) -> str:
        """Make the live root a shared mount (once) and the session's live
        directory (root's, 0755); its path."""
        os.makedirs(posixpath.dirname(self.root), mode=0o755, exist_ok=True)
        private_dir(self.root, 0o755, make=True)
        with open("/proc/self/mountinfo") as f:
            info = f.read()
        if not is_shared_mount(info, self.root):
            if self.root not in {_unescape(line.split(" ")[4]) for line in info.splitlines()}:
                _check(_libc.mount(self.root.encode(), self.root.encode(), None, _MS_BIND, None),
                       f"bind {self.root}")
            _check(_libc.mount(None, self.root.encode(), None, _MS_SHARED | _MS_REC, None),
                   f"make {self.root} shared")
        d = self.directory(allocation)
        private_dir(d, 0o755, make=True)
        return d

    def present(self, allocation: str) -> dict[str, bool]:
        with open("/proc/self/mountinfo") as f:
            return mounted(f.read(), self.directory(allocation))

    def apply(self, allocation: str, steps: list[Step]) -> list[str]:
        """Do ``steps``; what failed, in words (the rest is done)."""
        errors = []
        for step in steps:
            try:
                if step.verb == "mount":
                    self.bind(allocation, step.name, step.path, step.read_only)
                else:
                    self.unbind(allocation, step.name)
            except (OSError, ValueError) as e:
                errors.append(f"{step.verb} {step.name!r}: {e}")
        return errors

    def bind(self, allocation: str, name: str, source: str, read_only: bool) -> None:
        d = self.directory(allocation)
        private_dir(d)  # root's, no link, only root writes it
        dir_fd = os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        src = target = tree = -1
        try:
            src = _open_nofollow(source)
            try:
                os.mkdir(check_name(name), 0o755, dir_fd=dir_fd)
            except FileExistsError:
                pass
            target = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                             dir_fd=dir_fd)
            syscall = _libc.syscall
            tree = _check(syscall(_OPEN_TREE, src, b"", _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC
                                  | _AT_EMPTY_PATH), f"open_tree {source}")
            attr = _MountAttr(_MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV
                              | (_MOUNT_ATTR_RDONLY if read_only else 0), 0, 0, 0)
            _check(syscall(_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH, ctypes.byref(attr),
                           ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {source}")
            _check(syscall(_MOVE_MOUNT, tree, b"", target, b"",
                           _MOVE_MOUNT_F_EMPTY_PATH | _MOVE_MOUNT_T_EMPTY_PATH),
                   f"move_mount {source}")
        finally:
            for fd in (tree, target, src, dir_fd):
                if fd >= 0:
                    os.close(fd)

    def unbind(self, allocation: str, name: str) -> None:
        d = self.directory(allocation)
        private_dir(d)  # the path below is root's all the way: safe to use by name
        point = posixpath.join(d, check_name(name))
        if _libc.umount2(point.encode(), _MNT_DETACH) < 0 and ctypes.get_errno() != errno.EINVAL:
            _check(-1, f"unmount {point}")
        try:
            os.rmdir(point)
        except FileNotFoundError:
            pass

    def discard(self, allocation: str) -> None:
        """Unmount everything of the session and remove its live directory."""
        d = self.directory(allocation)
        try:
            private_dir(d)
        except FileNotFoundError:
            return
        for name in self.present(allocation):
            self.unbind(allocation, name)
        for name in os.listdir(d):  # mount points left empty
            try:
                os.rmdir(posixpath.join(d, name))
            except OSError:
                pass
        try:
            os.rmdir(d)
        except OSError:
            pass
