"""The vfolder managers without HTTP, on SQLite and PostgreSQL: access, the
folder verbs, names, hosts, quotas, usage and sharing (tests/vfolder_world.py)."""

from __future__ import annotations

import os

import pytest

from quota_service import storage, vfolders
from quota_service.errors import Conflict, Denied, Hidden, Invalid, NotFound
from quota_service.models import VFolderInvitation, VFolderShare
from vfolder_world import INVITEES, folders  # noqa: F401

# --------------------------------------------------------------- access


def test_access_gives_the_folder_directory_staging_and_quota_of_its_owner(folders):  # noqa: F811
    folders.set_policy("default", max_vfolder_size=10_000)
    f = folders.create("alice", "data")
    other = folders.create("alice", "other")
    with folders.tx() as s:
        vfolders.add_usage(s, other["id"], 1234)
    a = folders.access("alice", f["id"], "delete")
    host = folders.hosts["local"]
    assert a == vfolders.FolderAccess(
        folder_id=f["id"], name="data", root=host.path / f["id"], staging=host.path / ".staging",
        perm="wd", quota_key="user:alice", size_limit=10_000, used=1234)
    assert a.root.is_dir() and a.staging.is_dir()
    assert os.stat(a.root).st_dev == os.stat(a.staging).st_dev
    assert oct(os.stat(a.root).st_mode & 0o7777) == oct(storage.FOLDER_MODE)


@pytest.mark.parametrize("caller, perm", [("alice", "wd"), *INVITEES.items(), ("ada", "wd"),
                                          ("root", "wd")])
def test_access_says_what_each_caller_may_do(folders, caller, perm):  # noqa: F811
    ids = folders.matrix_folders()
    a = folders.access(caller, ids["user"], "read")
    assert a.perm == perm
    for need, least in vfolders.NEEDS.items():
        if vfolders.RANK[perm] >= vfolders.RANK[least]:
            assert folders.access(caller, ids["user"], need).perm == perm
        else:
            with pytest.raises(Denied, match=f"your permission on vfolder 'data' is {perm}"):
                folders.access(caller, ids["user"], need)


@pytest.mark.parametrize("caller", ["bob", "mia", "gina", "gus"])
def test_access_hides_the_folder_from_everybody_else(folders, caller):  # noqa: F811
    ids = folders.matrix_folders()
    with pytest.raises(Hidden, match="not found"):
        folders.access(caller, ids["user"], "read")


def test_project_folders_give_members_the_chosen_permission_and_outsiders_nothing(folders):  # noqa: F811
    ids = folders.matrix_folders()
    for member in ("alice", "mia"):
        assert folders.access(member, ids["project"], "write").perm == "rw"
        with pytest.raises(Denied):
            folders.access(member, ids["project"], "delete")
    a = folders.access("mia", ids["project"], "read")
    assert a.quota_key == "project:acme/ml" and a.size_limit is None
    for outsider in ("bob", "carl", "gina"):
        with pytest.raises(Hidden):
            folders.access(outsider, ids["project"], "read")


def test_a_trashed_folder_is_hidden_from_access_even_to_its_owner(folders):  # noqa: F811
    f = folders.create("alice", "data")
    folders.trash("alice", f["id"])
    with pytest.raises(Hidden):
        folders.access("alice", f["id"], "read")


@pytest.mark.parametrize("bad", ["", "x", "../etc", "0" * 31, "G" * 32, "0" * 33])
def test_access_to_a_malformed_id_is_a_404(folders, bad):  # noqa: F811
    with pytest.raises(Hidden):
        folders.access("root", bad, "read")


def test_add_usage_keeps_the_cache_and_never_goes_below_zero(folders):  # noqa: F811
    f = folders.create("alice", "data")
    with folders.tx() as s:
        vfolders.add_usage(s, f["id"], 2**40 + 7)
        vfolders.add_usage(s, f["id"], -7)
    assert folders.get("alice", f["id"])["usage_bytes"] == 2**40
    with folders.tx() as s:
        vfolders.add_usage(s, f["id"], -(2**41))
    assert folders.get("alice", f["id"])["usage_bytes"] == 0
