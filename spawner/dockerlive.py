"""The Docker spawner's live mounts: folders mounted into a running session
(spawner/livemounts.py does it on the node; quota_service/storage/livemounts.py
decides what).

At create, an isolated session on an engine of this machine gets its live
directory (read-only, ``rslave``) at ``live_mount_dir``; once it runs, the
spawner tells the service that the session can have folders mounted, and
every ``live_mount_interval`` seconds (and at each of the hub's polls) it
reads the session's mount list from the service, as permissions stand
now, and mounts, unmounts or remounts read-only what changed. The hub must
run as root in the engine's mount namespace; otherwise sessions start as
before and the service refuses "mount now" for them.
"""

from __future__ import annotations

import asyncio
import os
import posixpath

from traitlets import Float, Unicode, default
from traitlets.config import Configurable

from hub_ext.client import Refused, ServiceUnavailable

from .builders import Mount
from .livemounts import Node, plan


def container_mount(directory: str, target: str) -> Mount:
    """The session's live directory in its container: read-only (the
    session makes nothing there), mounts made later under it on the node
    propagate in (``rslave``), nothing goes back."""
    if not posixpath.isabs(target):
        raise ValueError(f"live_mount_dir {target!r} must be an absolute path")
    return Mount(directory, target, read_only=True, propagation="rslave")


class LiveMountsMixin(Configurable):
    """For HubgridDockerSpawner (first in its bases: its settings are the
    spawner's): folders mounted into its running session."""

    live_mount_root = Unicode(
        "/run/hubgrid/live",
        help="""Directory on the node of sessions' live directories (folders
        mounted while a session runs): ``<root>/<allocation>/``, made by the
        hub (root) and made a shared mount. Needs the hub to run as root on
        the engines' machine (isolated sessions). Empty: no live mounts, and
        "mount now" is refused (docs/sessions.md).""",
    ).tag(config=True)

    live_mount_dir = Unicode(
        help="""Where a session finds the folders mounted while it runs: each
        at ``<dir>/<name>``, read-only unless the user may write it. Default:
        ``mounted-folders`` in ``vfolder_mount_root``. Folders mounted at the
        start stay at ``<vfolder_mount_root>/<name>``.""",
    ).tag(config=True)

    live_mount_interval = Float(
        5.0,
        help="""How often (seconds) the spawner reads a running session's
        mount list from the service and applies it on the node: the most a
        "mount now", a revoked share or a trashed folder waits to reach the
        session. Each read is one small request to the service per session.""",
    ).tag(config=True)

    @default("live_mount_dir")
    def _default_live_mount_dir(self):
        return posixpath.join(self.vfolder_mount_root, "mounted-folders")

    #: the allocation whose live directory this session has ("": none)
    _live_alloc = ""
    _live_task: asyncio.Task | None = None

    @property
    def _live_node(self) -> Node | None:
        return Node(self.live_mount_root) if self._live_alloc and self.live_mount_root else None

    def _live_possible(self) -> bool:
        return bool(self._net and self.live_mount_root and os.geteuid() == 0
                    and not self.serving)

    async def _prepare_live_mounts(self) -> None:
        """The session's live directory, before its container is created;
        none (a warning) when the node cannot have one."""
        self._live_alloc = ""
        if not self._live_possible():
            return
        started = {posixpath.join(self.vfolder_mount_root, m["name"])
                   for m in self.allocation.get("mounts", [])}
        if self.live_mount_dir in started:
            self.log.warning("no live mounts for %s: a folder is mounted at %s",
                             self._log_name, self.live_mount_dir)
            return
        try:
            await asyncio.to_thread(Node(self.live_mount_root).prepare, self.allocation["id"])
        except (OSError, ValueError) as e:
            self.log.warning("no live mounts for %s: %s", self._log_name, e)
            return
        self._live_alloc = self.allocation["id"]

    def _live_mounts(self) -> tuple[Mount, ...]:
        node = self._live_node
        if node is None:
            return ()
        return (container_mount(node.directory(self._live_alloc), self.live_mount_dir),)

    async def _live_started(self) -> None:
        """The session runs: the service may take "mount now" for it."""
        if self._live_node is None or not self.allocation_id:
            return
        try:
            await self.hubgrid.live_mounts_on(self.allocation_id)
        except (Refused, ServiceUnavailable) as e:
            self.log.warning("live mounts of %s not announced: %s", self._log_name, e)
            return
        self._keep_live_mounts()

    def _keep_live_mounts(self) -> None:
        """Sync the live mounts every ``live_mount_interval`` (started once)."""
        if self._live_task is None or self._live_task.done():
            self._live_task = asyncio.ensure_future(self._live_loop())

    async def _live_loop(self) -> None:
        while self.allocation_id and self._live_node is not None:
            await self.sync_live_mounts()
            await asyncio.sleep(self.live_mount_interval)

    async def sync_live_mounts(self) -> None:
        """Apply the service's live mounts of the session on the node."""
        node, alloc = self._live_node, self.allocation_id
        if node is None or not alloc:
            return
        try:
            model = await self.hubgrid.mounts(alloc)
        except (Refused, ServiceUnavailable) as e:
            self.log.warning("live mounts of %s not read: %s", self._log_name, e)
            return
        wanted = [m for m in model["mounts"] if m.get("live")] if model["state"] == "allocated" \
            else []
        steps = plan(wanted, await asyncio.to_thread(node.present, alloc))
        for error in await asyncio.to_thread(node.apply, alloc, steps):
            self.log.warning("live mount of %s: %s", self._log_name, error)
        for step in steps:
            self.log.info("live mount of %s: %s %s", self._log_name, step.verb, step.name)

    async def _discard_live_mounts(self) -> None:
        """The session ended: its live mounts and directory go."""
        task, self._live_task = self._live_task, None
        if task is not None:
            task.cancel()
        node, alloc = self._live_node, self._live_alloc
        self._live_alloc = ""
        if node is not None:
            try:
                await asyncio.to_thread(node.discard, alloc)
            except (OSError, ValueError) as e:
                self.log.warning("live directory of %s not removed: %s", self._log_name, e)

    def get_env(self):
        env = super().get_env()
        if self._live_alloc:  # where the CLI and the Lab say a mounted folder is
            env["HUBGRID_LIVE_FOLDERS"] = self.live_mount_dir
        return env

    def get_state(self):
        state = super().get_state()
        if self._live_alloc:
            state["hubgrid_live_alloc"] = self._live_alloc
        return state

    def load_state(self, state):
        super().load_state(state)
        self._live_alloc = state.get("hubgrid_live_alloc", "")
