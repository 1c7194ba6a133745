"""A vfolder world on top of the ``tenancy`` world, and a driver for the managers.

Extra users of acme (made here, so the shared world stays as it is):
carl, dora and erin (users in no project: the invitees of alice's folders
with ro, rw and wd) and mia (user, member of acme/ml like alice).

:class:`Folders` runs each manager the way the service does: in its own
transaction, with the storage host ``local`` in the test's tmp_path and a
fixed clock. Import the fixture into a test module::

    from vfolder_world import folders  # noqa: F401
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa

from quota_service.storage import hosts as storage, folders as vfolders, shares as vshares
from quota_service.tenancy import accounts as manager
from quota_service.core.foldermodels import VFolder
from quota_service.core.models import Domain, Project, ResourcePolicy, User
from quota_service.core.schemas import InvitationCreate, UserCreate, VFolderCreate

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
EXTRA_USERS = {"carl": (), "dora": (), "erin": (), "mia": ("ml",)}
INVITEES = {"carl": "ro", "dora": "rw", "erin": "wd"}


def add_extra_users(world) -> None:
    root = world.principal("root")
    with world.tx() as s:
        for name, projects in EXTRA_USERS.items():
            manager.create_user(s, root, UserCreate(name=name, domain="acme"))
            for project in projects:
                manager.add_member(s, root, "acme", project, name)


@dataclass
class Folders:
    world: object  # conftest.World
    root: Path
    now: dt.datetime = T0
    commands: list = field(default_factory=list)

    def __post_init__(self):
        self.hosts = storage.resolve_hosts({"local": {"path": str(self.root / "local")},
                                            "fast": {"path": str(self.root / "fast")}},
                                           mountinfo="", has_xfs_quota=False)

    @property
    def storage(self) -> vfolders.Storage:
        return vfolders.Storage(hosts=self.hosts, default_host="local",
                                quota=storage.QuotaApplier(runner=self.commands.append))

    def p(self, name: str):
        return self.world.principal(name)

    def tx(self):
        return self.world.tx()

    # --- the verbs ---------------------------------------------------------

    def create(self, user: str, name: str, **fields) -> dict:
        body = VFolderCreate.model_validate({"name": name, **fields})
        with self.tx() as s:
            return vfolders.create(s, self.p(user), body, self.now, self.storage)

    def get(self, user: str, folder_id: str) -> dict:
        with self.tx() as s:
            return vfolders.get(s, self.p(user), folder_id)

    def list(self, user: str, **kw) -> list[dict]:
        with self.tx() as s:
            return vfolders.list_folders(s, self.p(user), **kw)

    def names(self, user: str, **kw) -> list[str]:
        return [f["name"] for f in self.list(user, **kw)]

    def access(self, user: str, folder_id: str, need: str):
        with self.tx() as s:
            return vfolders.access(s, self.p(user), folder_id, need, self.hosts)

    def trash(self, user: str, folder_id: str) -> None:
        with self.tx() as s:
            vfolders.trash(s, self.p(user), folder_id, self.now)

    def restore(self, user: str, folder_id: str) -> dict:
        with self.tx() as s:
            return vfolders.restore(s, self.p(user), folder_id)

    def purge(self, user: str, folder_id: str) -> None:
        with self.tx() as s:
            vfolders.purge(s, self.p(user), folder_id, self.hosts)

    def rename(self, user: str, folder_id: str, name: str) -> dict:
        with self.tx() as s:
            return vfolders.rename(s, self.p(user), folder_id, name)

    def invite(self, user: str, folder_id: str, invitee: str, permission: str = "ro") -> dict:
        body = InvitationCreate(user=invitee, permission=permission)
        with self.tx() as s:
            return vshares.invite(s, self.p(user), folder_id, body, self.now)

    def answer(self, user: str, invitation_id: str, verb: str) -> dict:
        with self.tx() as s:
            return getattr(vshares, verb)(s, self.p(user), invitation_id, self.now)

    def share(self, owner: str, folder_id: str, invitee: str, permission: str) -> None:
        inv = self.invite(owner, folder_id, invitee, permission)
        self.answer(invitee, inv["id"], "accept")

    # --- the world ----------------------------------------------------------

    def set_policy(self, name: str = "default", **fields) -> None:
        with self.tx() as s:
            pol = s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == name))
            if pol is None:
                pol = ResourcePolicy(name=name)
                s.add(pol)
            for key, value in fields.items():
                setattr(pol, key, value)

    def set_project(self, domain: str, project: str, **fields) -> None:
        with self.tx() as s:
            proj = s.scalar(sa.select(Project).join(Domain).where(
                Domain.name == domain, Project.name == project))
            for key, value in fields.items():
                setattr(proj, key, value)

    def set_domain(self, domain: str, **fields) -> None:
        with self.tx() as s:
            d = s.scalar(sa.select(Domain).where(Domain.name == domain))
            for key, value in fields.items():
                setattr(d, key, value)

    def set_user(self, name: str, **fields) -> None:
        with self.tx() as s:
            u = s.scalar(sa.select(User).where(User.name == name))
            for key, value in fields.items():
                setattr(u, key, value)

    def count(self) -> int:
        return self.world.count(VFolder)

    def dirs(self, host: str = "local") -> list[str]:
        """The folder directories on a host (the staging directory aside)."""
        return sorted(p.name for p in self.hosts[host].path.iterdir() if p.name != ".staging")

    def matrix_folders(self, name: str = "data", project_name: str = "shared") -> dict[str, str]:
        """alice's folder ``name`` shared with carl (ro), dora (rw) and erin
        (wd), and the project folder ``project_name`` of acme/ml (members rw):
        ``{"user": id, "project": id}``."""
        mine = self.create("alice", name)
        for invitee, perm in INVITEES.items():
            self.share("alice", mine["id"], invitee, perm)
        project = self.create("ada", project_name, project="ml", permission="rw")
        return {"user": mine["id"], "project": project["id"]}


@pytest.fixture
def folders(tenancy, tmp_path) -> Folders:
    add_extra_users(tenancy)
    driver = Folders(tenancy, tmp_path / "storage")
    # an unlimited default policy, every user's
    driver.set_policy("default")
    return driver
