"""The embedded demo's spawner: local processes, with their output kept.

``HubgridLocalProcessSpawner`` runs each server as a local process, as
JupyterHub's ``SimpleLocalProcessSpawner`` does, and writes the process's
output (stdout and stderr) to a file of its own, so that the session's log
(``GET allocations/{id}/logs``, the Lab's Sessions panel) shows it as it does
for Docker and Slurm sessions. The file goes when the session has ended and
its output is with the service.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from jupyterhub.spawner import SimpleLocalProcessSpawner
from traitlets import Unicode, default

from .mixin import HubgridSpawnerMixin, read_from


class OutputKeepingLocalProcessSpawner(SimpleLocalProcessSpawner):
    """A local process whose output goes to ``<output_dir>/<allocation>.log``."""

    output_dir = Unicode(
        help="""Directory of the local sessions' output files (one per session,
        readable by the hub's user only, removed when the session has ended and
        its output is in the service's log). Default: ``local-sessions`` in the
        hub's working directory (its state directory under ``make run``).""",
    ).tag(config=True)

    @default("output_dir")
    def _default_output_dir(self):
        return os.path.abspath("local-sessions")

    def output_path(self) -> Path | None:
        alloc = getattr(self, "allocation_id", None)
        return Path(self.output_dir) / f"{alloc}.log" if alloc else None

    async def start(self):
        path = self.output_path()
        if path is None:
            return await super().start()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        saved = self.popen_kwargs
        self.popen_kwargs = {**saved, "stdout": fd, "stderr": subprocess.STDOUT}
        try:
            return await super().start()
        finally:  # the process holds its own copy
            self.popen_kwargs = saved
            os.close(fd)


class HubgridLocalProcessSpawner(HubgridSpawnerMixin, OutputKeepingLocalProcessSpawner):
    """Local processes, for the embedded demo only: NOT isolated (every server
    runs as the hub's user and sees the others); limits are advisory."""

    async def session_log(self, offset: int) -> bytes:
        path = self.output_path()
        return read_from(path, offset) if path is not None else b""

    async def session_ended(self) -> None:
        path = self.output_path()
        await super().session_ended()  # the rest of the output goes to the service
        try:
            if path is not None and path.stat().st_size <= self.log_offset:
                path.unlink()  # all of it is with the service (else kept: nothing is lost)
        except FileNotFoundError:
            pass
