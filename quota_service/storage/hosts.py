"""Storage hosts of virtual folders: named roots on the filesystem.

A host is a directory: a local one, or any shared filesystem (NFS, CephFS)
mounted at the same path on every node. A folder's files live in
``<host path>/<folder id>`` (ids, never names: a rename is a database change
only); ``<host path>/.staging`` holds partial uploads, on the same
filesystem as every folder so a finished upload is moved in with one
``rename``, and outside every folder so it never counts or shows.

Capabilities of a host:

- ``usage``, always: a folder's usage is measured by walking its tree
  (``os.scandir``, symlinks never followed) and adding the apparent size
  (``st_size``) of its regular files, each hard-linked inode once.
- ``quota``, when the host's path is on XFS mounted with project quotas
  (``prjquota``/``pquota``) and ``xfs_quota`` is installed: the folders of one
  owner form one XFS project whose hard block limit is the owner's
  ``max_vfolder_size``, so the kernel refuses writes past it even from
  inside sessions. The ``xfs_quota`` command lines are built by the pure
  functions below; real XFS cannot run in this repository's test machine,
  so they are tested as data.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..core.names import ENTITY_NAME
from .modes import DIR_MODE

STAGING = ".staging"
#: XFS project ids of hubgrid: base + 2 * user id (user folders) or
#: base + 2 * project id + 1 (project folders); override per host with
#: ``xfs_project_base`` when other XFS projects live on the filesystem
DEFAULT_XFS_PROJECT_BASE = 1_000_000
#: the mode of a folder's directory: the session's group may write; the
#: setgid bit keeps new files in that group (the same as every directory the
#: service makes inside a folder: ``storage.modes``)
FOLDER_MODE = DIR_MODE


class HostConfigError(ValueError):
    """``vfolder_hosts`` is not usable as configured."""


@dataclass(frozen=True)
class Mount:
    """One line of /proc/self/mountinfo that matters here."""

    point: str
    fstype: str
    options: frozenset[str]


@dataclass(frozen=True)
class Host:
    name: str
    path: Path
    #: XFS project quotas are enforced on this host
    quota: bool = False
    #: the XFS mount point holding ``path`` (when ``quota``)
    mount_point: str = ""
    xfs_project_base: int = DEFAULT_XFS_PROJECT_BASE
    fstype: str = ""

    @property
    def capabilities(self) -> list[str]:
        return ["usage"] + (["quota"] if self.quota else [])

    @property
    def staging(self) -> Path:
        return self.path / STAGING

    def folder_dir(self, folder_id: str) -> Path:
        return self.path / folder_id


# --- configuration ----------------------------------------------------------------

def check_host_config(hosts: dict) -> dict[str, dict]:
    """``{"name": {"path": "/abs/dir", "quota": bool?, "xfs_project_base": int?}}``,
    checked (HostConfigError names the problem)."""
    if not isinstance(hosts, dict) or not hosts:
        raise HostConfigError("vfolder_hosts: give at least one host, e.g. "
                              "{'local': {'path': '/srv/hubgrid/vfolders'}}")
    out = {}
    for name, spec in hosts.items():
        if not isinstance(name, str) or not ENTITY_NAME.fullmatch(name):
            raise HostConfigError(f"vfolder_hosts: host name {name!r} is not valid: use 1 to 64 "
                                  "lowercase letters, digits, '-' or '_'")
        if not isinstance(spec, dict) or not isinstance(spec.get("path"), str):
            raise HostConfigError(f"vfolder_hosts[{name!r}]: needs a 'path'")
        unknown = sorted(set(spec) - {"path", "quota", "xfs_project_base"})
        if unknown:
            raise HostConfigError(f"vfolder_hosts[{name!r}]: unknown key(s) {', '.join(unknown)}")
        if not os.path.isabs(spec["path"]):
            raise HostConfigError(f"vfolder_hosts[{name!r}]: path {spec['path']!r} must be absolute")
        if "quota" in spec and not isinstance(spec["quota"], bool):
            raise HostConfigError(f"vfolder_hosts[{name!r}]: quota must be true or false")
        base = spec.get("xfs_project_base", DEFAULT_XFS_PROJECT_BASE)
        if isinstance(base, bool) or not isinstance(base, int) or not 1 <= base < 2**31 - 2**24:
            raise HostConfigError(f"vfolder_hosts[{name!r}]: xfs_project_base must be an "
                                  "integer from 1 to 2**31 - 2**24")
        out[name] = dict(spec)
    return out


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of ``/proc/self/mountinfo`` (mount point, type, all options)."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, rest = left.split(), right.split()
        if len(fields) < 6 or len(rest) < 3:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        options = set(fields[5].split(",")) | set(rest[2].split(","))
        mounts.append(Mount(point, rest[0], frozenset(options)))
    return mounts


def mount_of(path: str, mounts: Iterable[Mount]) -> Mount | None:
    """The mount holding ``path`` (an absolute, resolved path): the last
    mounted one of the longest matching mount points."""
    best = None
    for m in mounts:
        point = m.point.rstrip("/") or "/"
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best.point.rstrip("/") or "/")):
            best = m
    return best


def project_quota_usable(mount: Mount | None, has_tool: bool) -> bool:
    """XFS with project quotas on, and xfs_quota installed."""
    return (has_tool and mount is not None and mount.fstype == "xfs"
            and bool({"prjquota", "pquota"} & mount.options))


def resolve_hosts(config: dict, mountinfo: str | None = None,
                  has_xfs_quota: bool | None = None) -> dict[str, Host]:
    """The hosts of ``config`` (see ``check_host_config``) with their
    capabilities detected, their directories and staging directories created."""
    config = check_host_config(config)
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            mountinfo = ""
    if has_xfs_quota is None:
        has_xfs_quota = shutil.which("xfs_quota") is not None
    mounts = parse_mountinfo(mountinfo)
    hosts = {}
    for name, spec in config.items():
        path = Path(spec["path"])
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
        path = path.resolve()
        (path / STAGING).mkdir(mode=0o700, exist_ok=True)
        mount = mount_of(str(path), mounts)
        quota = project_quota_usable(mount, has_xfs_quota) and spec.get("quota", True)
        hosts[name] = Host(name=name, path=path, quota=quota,
                           mount_point=mount.point if mount else "",
                           fstype=mount.fstype if mount else "",
                           xfs_project_base=spec.get("xfs_project_base",
                                                     DEFAULT_XFS_PROJECT_BASE))
    return hosts


def host_model(host: Host, with_path: bool) -> dict:
    model = {"name": host.name, "capabilities": host.capabilities}
    if with_path:
        model.update(path=str(host.path), fstype=host.fstype, mount_point=host.mount_point)
    return model


# --- folder directories -----------------------------------------------------------

def make_folder_dir(host: Host, folder_id: str, uid: int | None, gid: int | None) -> Path:
    """Create the folder's directory (mode 2770; owned by ``uid:gid`` when the
    service runs as root). Refuses an existing one: ids are fresh."""
    path = host.folder_dir(folder_id)
    path.mkdir(mode=0o700)
    try:
        if os.geteuid() == 0 and uid is not None and gid is not None:
            os.chown(path, uid, gid, follow_symlinks=False)  # just made: never a link
        os.chmod(path, FOLDER_MODE)
    except BaseException:
        path.rmdir()
        raise
    return path


def remove_tree(host: Host, folder_id: str) -> None:
    """Delete a folder's directory tree (symlinks are removed, never followed)."""
    path = host.folder_dir(folder_id)
    if path.parent != host.path or not folder_id or "/" in folder_id or folder_id.startswith("."):
        raise ValueError(f"not a folder directory: {path}")
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def measure(path: Path) -> int:
    """Bytes used by the tree at ``path``: the apparent size (``st_size``) of
    its regular files, each inode once; symlinks are not followed (nor
    counted); entries that vanish during the walk are skipped."""
    total = 0
    seen: set[tuple[int, int]] = set()
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            it = os.scandir(current)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(Path(entry.path))
                elif stat.S_ISREG(st.st_mode):
                    key = (st.st_dev, st.st_ino)
                    if st.st_nlink > 1:
                        if key in seen:
                            continue
                        seen.add(key)
                    total += st.st_size
    return total


# --- XFS project quotas (pure command builders) -----------------------------------

def xfs_project_id(host: Host, quota_key: str, owner_id: int) -> int:
    """The XFS project of an owner's folders on ``host``: one per user, one per project."""
    kind = quota_key.split(":", 1)[0]
    return host.xfs_project_base + 2 * owner_id + (1 if kind == "project" else 0)


def xfs_setup_commands(host: Host, folder_dir: Path, project_id: int) -> list[list[str]]:
    """Put a new folder's directory into the owner's XFS project."""
    return [["xfs_quota", "-x", "-c", f"project -s -p {folder_dir} {project_id}",
             host.mount_point]]


def xfs_limit_commands(host: Host, project_id: int, limit: int | None) -> list[list[str]]:
    """Set the project's hard block limit to ``limit`` bytes (None: no limit, 0 in XFS)."""
    return [["xfs_quota", "-x", "-c", f"limit -p bhard={limit or 0} {project_id}",
             host.mount_point]]


def xfs_report_command(host: Host) -> list[str]:
    """Block usage in bytes of every project of the host's filesystem."""
    return ["xfs_quota", "-x", "-c", "report -p -b -N -n", host.mount_point]


def parse_xfs_report(text: str) -> dict[int, int]:
    """``{project id: bytes used}`` from ``report -p -b -N -n`` (1 KiB blocks)."""
    used = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("#") and parts[0][1:].isdigit() \
                and parts[1].isdigit():
            used[int(parts[0][1:])] = int(parts[1]) * 1024
    return used


Runner = Callable[[list[str]], None]


def run_command(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


@dataclass
class QuotaApplier:
    """Runs the XFS commands of a new folder on hosts with the ``quota``
    capability (tests replace ``runner``)."""

    runner: Runner = field(default=run_command)

    def new_folder(self, host: Host, folder_dir: Path, quota_key: str, owner_id: int,
                   limit: int | None) -> list[list[str]]:
        if not host.quota:
            return []
        project_id = xfs_project_id(host, quota_key, owner_id)
        commands = (xfs_setup_commands(host, folder_dir, project_id)
                    + xfs_limit_commands(host, project_id, limit))
        for argv in commands:
            self.runner(argv)
        return commands
