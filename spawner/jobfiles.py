"""The files of a Slurm session, and how the hub reaches them.

Every session has three: ``<allocation>.log`` (the job's output, shipped to
the service as the session log), ``<allocation>.exit`` (a batch command's exit
code, written by hubgrid-session) and ``<allocation>.go`` (created by the hub
when a batch command may start).

:class:`HubJobFiles`: jobs that run as the hub's own user (the unmapped
default). The files live in one directory of the hub's (``job_log_dir``) and
the hub opens them itself.

:class:`UserJobFiles`: jobs that run as their user's Unix account (``unix_users``;
``exec_prefix`` such as ``sudo -E -u {username}``). The files live in a
directory of the user's own under their home (mode 0700, the log 0600), and
the hub touches them only through the same ``exec_prefix``, as that user: the
hub (root) never opens a path its user controls, where a symlink could point it
at any file of the machine, and a home on a root-squashed NFS works as well.
The commands run with a minimal environment (a process of the user's can be
read by the user, /proc/PID/environ).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import stat
from pathlib import Path

from .mixin import read_from

EXTS = ("log", "exit", "go")


def quiet_env() -> dict[str, str]:
    """The environment of a command the hub runs as a user: the search path,
    the locale and Slurm's own variables, none of the hub's secrets."""
    keep = ("PATH", "LANG", "LC_ALL")
    return {k: v for k, v in os.environ.items() if k in keep or k.startswith("SLURM_")}


def unreadable_part(path: str | os.PathLike, executable: bool = False) -> str:
    """The first part of ``path`` that other users cannot reach: a directory
    on the way they cannot enter (o+x), or the file itself they cannot read
    (o+r; also run, o+x, when ``executable``); "" when they can."""
    target = Path(path).resolve()
    for part in reversed(target.parents):
        if not os.stat(part).st_mode & stat.S_IXOTH:
            return str(part)
    need = stat.S_IROTH | (stat.S_IXOTH if executable else 0)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return str(target)
    return "" if mode & need == need else str(target)


def run_by_others(path: str | os.PathLike) -> str:
    """:func:`unreadable_part` of a program and of the interpreter its ``#!``
    line names (a venv's script: the venv's python, and the Python that made
    the venv, where the symlinks lead)."""
    if not os.path.isabs(path):
        path = shutil.which(path) or path
    part = unreadable_part(path, executable=True)
    if part:
        return part
    try:
        with open(path, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return str(path)
    words = first[2:].decode(errors="replace").split() if first.startswith(b"#!") else []
    return unreadable_part(words[0], executable=True) if words else ""


class HubJobFiles:
    """``<directory>/<allocation>.*``, opened by the hub itself."""

    def __init__(self, directory: str | os.PathLike, allocation: str):
        self.directory, self.allocation = Path(directory).resolve(), allocation

    def path(self, ext: str) -> str:
        return str(self.directory / f"{self.allocation}.{ext}")

    async def prepare(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    async def read(self, ext: str, offset: int = 0) -> bytes:
        return read_from(self.path(ext), offset)

    async def size(self, ext: str) -> int | None:
        try:
            return os.stat(self.path(ext)).st_size
        except FileNotFoundError:
            return None

    async def touch(self, ext: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        Path(self.path(ext)).touch()

    async def remove(self) -> None:
        for ext in EXTS:
            try:
                os.unlink(self.path(ext))
            except FileNotFoundError:
                pass


class UserJobFiles(HubJobFiles):
    """``<home>/<dir>/<allocation>.*``, reached as the user (``prefix``: the
    spawner's exec_prefix, formatted for this user)."""

    def __init__(self, prefix: str, directory: str | os.PathLike, allocation: str):
        # not resolved here: the hub may not enter the user's directory
        self.prefix, self.directory, self.allocation = prefix, Path(directory), allocation

    async def _run(self, *argv: str) -> bytes:
        proc = await asyncio.create_subprocess_shell(
            f"{self.prefix} {shlex.join(argv)}", env=quiet_env(),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"{self.prefix} {argv[0]}: exit status {proc.returncode}: "
                               f"{err.decode(errors='replace').strip()}")
        return out

    async def prepare(self) -> None:
        # the directory the user's own (0700), the log created empty (0600):
        # Slurm then appends the job's output to it, keeping its mode
        await self._run("sh", "-c", 'umask 077 && mkdir -p -- "$1" && chmod 700 -- "$1" '
                        '&& : > "$2"', "sh", str(self.directory), self.path("log"))

    async def read(self, ext: str, offset: int = 0) -> bytes:
        return await self._run("sh", "-c", '[ ! -e "$1" ] || exec tail -c "+$2" -- "$1"',
                               "sh", self.path(ext), str(offset + 1))

    async def size(self, ext: str) -> int | None:
        out = await self._run("sh", "-c", '[ ! -e "$1" ] || exec stat -c %s -- "$1"',
                              "sh", self.path(ext))
        return int(out) if out.strip() else None

    async def touch(self, ext: str) -> None:
        await self._run("touch", "--", self.path(ext))

    async def remove(self) -> None:
        await self._run("rm", "-f", "--", *(self.path(ext) for ext in EXTS))
