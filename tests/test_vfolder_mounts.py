"""Which folders a session mounts: the pure resolution as data, and the
ledger resolving them for a user and a project before anything is written."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.scheduling import ledger
from quota_service.storage import mounts
from quota_service.core.errors import Invalid
from quota_service.core.models import Allocation
from quota_service.core.schemas import InternalAllocationCreate
from vfolder_world import folders  # noqa: F401

C = mounts.Candidate


def cand(id_, name, perm="wd", kind="own", active=True):
    return C(id_, name, f"/vf/{id_}", perm, kind, active)


def mounted(result):
    return [(m["folder"], m["name"], m["mode"]) for m in result]


@pytest.mark.parametrize("candidates, requested, expected", [
    ([], [], []),
    ([cand("a", "data")], [], []),
    ([cand("a", "data")], ["data"], [("a", "data", "rw")]),
    ([cand("a", "data")], ["a"], [("a", "data", "rw")]),
    ([cand("a", "data", "ro", "shared")], ["data"], [("a", "data", "ro")]),
    ([cand("a", "data", "rw", "project")], ["data"], [("a", "data", "rw")]),
    ([cand("a", ".cfg"), cand("b", "data")], ["data"], [("b", "data", "rw"), ("a", ".cfg", "rw")]),
    ([cand("a", ".cfg"), cand("b", ".cfg", "ro", "shared")], [], [("a", ".cfg", "rw")]),
    ([cand("b", ".cfg", "ro", "shared"), cand("c", ".cfg", "rw", "project")], [],
     [("c", ".cfg", "rw")]),
    ([cand("a", ".cfg"), cand("b", ".cfg", "ro", "shared")], ["b"], [("b", ".cfg", "ro")]),
    ([cand("a", ".old", active=False)], [], []),
    ([cand("a", "data"), cand("b", "data", "ro", "shared")], ["b"], [("b", "data", "ro")]),
    ([cand("b", "z"), cand("a", "y")], ["z", "y"], [("b", "z", "rw"), ("a", "y", "rw")]),
])
def test_resolution(candidates, requested, expected):
    assert mounted(mounts.resolve(candidates, requested)) == expected


@pytest.mark.parametrize("candidates, requested, words", [
    ([], ["data"], "no vfolder 'data' you may mount in this project"),
    ([cand("a", "data", active=False)], ["data"], "'data' is in the trash"),
    ([cand("a", "data", active=False)], ["a"], "'a' is in the trash"),
    ([cand("a", "data"), cand("b", "data", "ro", "shared")], ["data"],
     "'data' names 2 folders you may mount (a, b): ask for one by its id"),
    ([cand("a", "data"), cand("b", "data", "ro", "shared")], ["a", "b"],
     "two folders would mount at 'data' (a, b)"),
    ([cand("a", "data")], ["data", "a"], "'data' is asked for twice"),
    ([], ["x" * 300], "no vfolder '" + "x" * 64 + "...'"),
])
def test_refusals(candidates, requested, words):
    with pytest.raises(Invalid) as e:
        mounts.resolve(candidates, requested)
    assert words in e.value.message


def test_the_path_is_the_folders_directory_and_users_never_see_it():
    [m] = mounts.resolve([cand("a", "data")], ["data"])
    assert m == {"folder": "a", "name": "data", "path": "/vf/a", "mode": "rw"}
    assert mounts.public([m]) == [{"folder": "a", "name": "data", "mode": "rw"}]


def submit(cluster, folders, user, project, asked):  # noqa: F811
    body = InternalAllocationCreate.model_validate(
        {"user": user, "project": project, "resource_group": "gpu",
         "slots": {"cpu": "1"}, "vfolders": asked})
    with db.ledger_transaction(cluster.world.session_factory) as s:
        return ledger.submit(s, cluster.principal(user), body, cluster.now, cluster.strategy,
                             origin="hub", hosts=folders.hosts, mount_paths=True)


def test_a_session_sees_only_its_projects_folders_and_shared_ones(cluster, folders):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    cluster.join("alice", "acme", "web")
    folders.create("ada", ".ml-env", project="ml", permission="ro")
    web = folders.create("ada", "web-data", project="web", permission="rw")
    other = folders.create("bob", "bobs")
    folders.share("bob", other["id"], "alice", "wd")
    a = submit(cluster, folders, "alice", "ml", ["bobs"])
    assert [(m["name"], m["mode"]) for m in a["mounts"]] == [("bobs", "rw"), (".ml-env", "ro")]
    b = submit(cluster, folders, "alice", "web", ["web-data"])
    assert [(m["name"], m["path"]) for m in b["mounts"]] == [
        ("web-data", str(folders.hosts["local"].folder_dir(web["id"])))]
    with pytest.raises(Invalid, match="no vfolder 'web-data'"):
        submit(cluster, folders, "alice", "ml", ["web-data"])
    assert cluster.count() == 2


def test_admins_mount_only_what_they_own_or_share(cluster, folders):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    cluster.join("ada", "acme", "ml")
    folders.create("alice", ".alices")
    with pytest.raises(Invalid, match="no vfolder '.alices'"):
        submit(cluster, folders, "ada", "ml", [".alices"])
    assert submit(cluster, folders, "ada", "ml", [])["mounts"] == []


def test_the_mounts_are_stored_on_the_allocation(cluster, folders):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    f = folders.create("alice", ".env")
    a = submit(cluster, folders, "alice", "ml", [])
    with cluster.world.session_factory() as s:
        stored = s.scalar(sa.select(Allocation.mounts).where(Allocation.id == a["id"]))
    assert stored == [{"folder": f["id"], "name": ".env",
                       "path": str(folders.hosts["local"].folder_dir(f["id"])), "mode": "rw"}]
    assert cluster.get(a["id"])["mounts"] == [{"folder": f["id"], "name": ".env", "mode": "rw"}]
