"""Folders mounted into a running session ("mount now"; storage/livemounts.py).

``allocations/<id>/mounts``: the session's folders as permissions stand
now (GET: whoever sees the session), and a folder mounted now (POST: its
owner only). ``internal/allocations/<id>/mounts``: the same list with host
paths, for the spawner that applies it on the node (PUT: the spawner says
it can, once the session's live directory is in place)."""

from __future__ import annotations

from ..core.errors import Conflict, NotFound
from ..core.models import Allocation
from typing import Annotated

from pydantic import Field, StrictBool, StrictStr

from ..core.schemas import Body, parse
from ..scheduling import ledger
from ..storage import livemounts, mounts
from .base import APIHandler


class LiveMountCreate(Body):
    """A folder to mount into a running session, by name or id."""

    folder: Annotated[StrictStr, Field(min_length=1, max_length=64)]


class AllocationMountsHandler(APIHandler):
    """The session's mounted folders; mount one now."""

    resource = "allocation-mounts"
    bodies = {"post": LiveMountCreate}
    success = {"post": "202"}  # recorded: its spawner mounts it within its poll

    async def get(self, allocation_id):
        """The session's folders (``live``: mounted while it ran) and whether it can mount more."""
        def read(s):
            a = ledger.visible_allocation(s, self.principal, allocation_id)
            return {"live_mounts": bool(a.live_mounts) and a.state == "allocated",
                    "mounts": mounts.public(livemounts.current(s, a, self.vfolder_hosts))}

        self.finish_json(await self.db(read))

    async def post(self, allocation_id):
        """Mount a folder (name or id) into the running session: checked as a start checks it."""
        body = parse(LiveMountCreate, self.json_body())
        self.audit_target = allocation_id
        hosts = self.vfolder_hosts

        def write(s):
            # locked: two mounts at once each add to the list the other wrote
            a = s.get(Allocation, allocation_id, with_for_update=True)
            if a is None:
                raise NotFound(f"allocation {allocation_id!r} not found")
            owner = ledger.seen_by(s, self.principal, a)
            self.audit_domain = owner.domain.name
            return livemounts.mount_now(s, self.principal, a, owner.name, owner.domain.name,
                                        body.folder, hosts)

        mount = await self.db(write)
        self.audit_detail = f"folder: {mount['name']} ({mount['folder']}); mode: {mount['mode']}"
        self.finish_json(mount, 202)


class LiveMountsOn(Body):
    """The spawner says it can mount folders into the session while it runs."""

    live_mounts: StrictBool


class InternalMountsHandler(APIHandler):
    """The session's mounts with host paths, as permissions stand now; its
    spawner says whether it can mount more while the session runs."""

    caller_kind = "internal"
    bodies = {"put": LiveMountsOn}

    async def put(self, allocation_id):
        """Whether the session's spawner can mount folders into it while it runs."""
        body = parse(LiveMountsOn, self.json_body())

        def write(s):
            a = ledger.get_allocation(s, allocation_id)
            if a.state != "allocated":
                raise Conflict(f"session {a.id} is not running ({a.state})")
            a.live_mounts = body.live_mounts
            return {"live_mounts": a.live_mounts}

        self.finish_json(await self.db(write))

    async def get(self, allocation_id):
        """The allocation's mounts with host paths; live ones as permissions stand now."""
        hosts = self.vfolder_hosts

        def read(s):
            a = ledger.get_allocation(s, allocation_id)
            return {"state": a.state, "live_mounts": bool(a.live_mounts),
                    "mounts": livemounts.current(s, a, hosts)}

        self.finish_json(await self.db(read))
