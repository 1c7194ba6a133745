"""The vfolder managers without HTTP, on SQLite and PostgreSQL: access, the
folder verbs, names, hosts, quotas, usage and sharing (tests/vfolder_world.py)."""

from __future__ import annotations

import os

import pytest

from quota_service.storage import hosts as storage, folders as vfolders
from quota_service.core.errors import Conflict, Denied, Hidden, Invalid, NotFound
from quota_service.core.foldermodels import VFolderInvitation, VFolderShare
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


# --------------------------------------------------------------- names

@pytest.mark.parametrize("name, stored", [
    ("data", "data"), (".dotfiles", ".dotfiles"), ("...", "..."), ("a..b", "a..b"),
    ("x" * 64, "x" * 64), ("cafe\u0301", "caf\u00e9"), ("Ünïcode Ordner", "Ünïcode Ordner"),
])
def test_good_folder_names_are_kept_nfc_normalised(name, stored):
    from quota_service.core.names import check_folder_name

    assert check_folder_name(name) == stored


@pytest.mark.parametrize("name, words", [
    ("", "empty"), ("x" * 65, "longer than 64"), ("a/b", "'/'"), ("/", "'/'"),
    (".", "not allowed"), ("..", "not allowed"), ("a\x00b", "control"), ("a\nb", "control"),
    ("\x7f", "control"), ("a\u2029", "control"), (" a", "whitespace"), ("a\u00a0", "whitespace"),
    ("\ud800", "control"), ("back\\slash", "'\\\\'"), ("\u202egnp.txt", "U\\+202E"),
])
def test_bad_folder_names_are_refused_with_the_reason(name, words):
    from quota_service.core.names import check_folder_name

    with pytest.raises(ValueError, match=words):
        check_folder_name(name)


# --------------------------------------------------------------- listing

@pytest.mark.parametrize("caller, names", [
    ("alice", ["data", "mine", "shared"]), ("mia", ["shared"]), ("carl", ["data"]),
    ("bob", ["bobs"]), ("gina", ["globex-lab"]), ("gus", ["globex-lab"]),
    ("ada", ["bobs", "data", "mine", "shared", "web-only"]),
    ("root", ["bobs", "data", "globex-lab", "mine", "shared", "web-only"]),
])
def test_each_caller_lists_exactly_the_folders_they_may_see(folders, caller, names):  # noqa: F811
    folders.matrix_folders()
    folders.create("alice", "mine")
    folders.create("bob", "bobs")
    folders.create("ada", "web-only", project="web")
    folders.create("gus", "globex-lab", project="lab")
    assert folders.names(caller) == names


def test_trashed_folders_are_listed_only_with_status_and_only_to_wd_holders(folders):  # noqa: F811
    ids = folders.matrix_folders()
    folders.trash("alice", ids["user"])
    assert folders.names("alice") == ["shared"]
    assert folders.names("alice", status="trashed") == ["data"]
    assert folders.names("alice", status="all") == ["data", "shared"]
    assert folders.names("erin", status="trashed") == ["data"]
    assert folders.names("carl", status="all") == []
    with pytest.raises(Invalid, match="status"):
        folders.list("alice", status="gone")


def test_the_project_filter_narrows_to_one_visible_project(folders):  # noqa: F811
    folders.matrix_folders()
    folders.create("ada", "web-only", project="web")
    assert folders.names("ada", project="web") == ["web-only"]
    assert folders.names("root", project="acme/ml") == ["shared"]
    with pytest.raises(Hidden):
        folders.list("alice", project="web")
    with pytest.raises(Hidden):
        folders.list("gina", project="acme/ml")


# --------------------------------------------------------------- quotas

def test_user_count_limit_counts_trashed_folders_and_purging_frees_a_place(folders):  # noqa: F811
    folders.set_policy("default", max_vfolder_count=2)
    one = folders.create("alice", "one")
    folders.create("alice", "two")
    folders.trash("alice", one["id"])
    with pytest.raises(Invalid, match=r"user alice has 2 folder\(s\), at most 2"):
        folders.create("alice", "three")
    assert folders.count() == 2 and len(folders.dirs()) == 2
    folders.purge("alice", one["id"])
    assert folders.create("alice", "three")["name"] == "three"


def test_a_limit_of_zero_refuses_the_first_folder(folders):  # noqa: F811
    folders.set_policy("default", max_vfolder_count=0)
    with pytest.raises(Invalid, match="at most 0"):
        folders.create("alice", "one")
    assert folders.count() == 0 and folders.dirs() == []


def test_project_count_limit_is_the_projects_own(folders):  # noqa: F811
    folders.set_policy("default", max_vfolder_count=0)
    folders.set_project("acme", "ml", max_vfolder_count=1)
    folders.create("ada", "one", project="ml")
    with pytest.raises(Invalid, match=r"project acme/ml has 1 folder\(s\), at most 1 "
                                      r"\(project acme/ml"):
        folders.create("ada", "two", project="ml")
    folders.create("ada", "two", project="web")
    assert folders.count() == 2 and len(folders.dirs()) == 2


def test_a_missing_resource_policy_allows_no_folder(folders):  # noqa: F811
    folders.set_user("alice", resource_policy="gone")
    with pytest.raises(Invalid, match="'gone' \\(missing\\)"):
        folders.create("alice", "one")


def test_the_size_limit_and_usage_of_all_an_owners_folders_go_together(folders):  # noqa: F811
    folders.set_project("acme", "ml", max_vfolder_size=2**40)
    a = folders.create("ada", "a", project="ml")
    b = folders.create("ada", "b", project="ml")
    with folders.tx() as s:
        vfolders.add_usage(s, a["id"], 5)
        vfolders.add_usage(s, b["id"], 7)
    got = folders.access("mia", a["id"], "read")
    assert (got.quota_key, got.size_limit, got.used) == ("project:acme/ml", 2**40, 12)


def test_measure_scans_the_tree_and_caches_the_usage(folders):  # noqa: F811
    f = folders.create("alice", "data")
    root = folders.hosts["local"].folder_dir(f["id"])
    (root / "sub").mkdir()
    (root / "sub" / "a").write_bytes(b"x" * 1000)
    (root / "b").write_bytes(b"y" * 24)
    with folders.tx() as s:
        assert vfolders.measure(s, f["id"], folders.hosts, folders.now) == 1024
    got = folders.get("alice", f["id"])
    assert got["usage_bytes"] == 1024 and got["usage_measured_at"] == folders.now.isoformat()


def test_usage_scans_never_follow_symlinks_and_count_hard_links_once(tmp_path):
    (tmp_path / "big").write_bytes(b"z" * 5000)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_bytes(b"a" * 100)
    os.link(tree / "f", tree / "hard")
    (tree / "link").symlink_to(tmp_path / "big")
    (tree / "dirlink").symlink_to(tmp_path)
    assert storage.measure(tree) == 100
    assert storage.measure(tmp_path / "nosuch") == 0


# --------------------------------------------------------------- hosts

@pytest.mark.parametrize("domain, project, policy, user_hosts, project_hosts", [
    ([], [], [], ["fast", "local"], ["fast", "local"]),
    (["local"], [], [], ["local"], ["local"]),
    (["local"], ["fast"], [], ["fast", "local"], ["fast", "local"]),
    ([], [], ["fast"], ["fast"], ["fast", "local"]),
    (["nosuch"], [], [], [], []),
    ([], ["fast", "nosuch"], [], ["fast"], ["fast"]),
])
def test_a_host_is_usable_when_the_union_of_the_lists_allows_it(
        folders, domain, project, policy, user_hosts, project_hosts):  # noqa: F811
    """Domain, project (alice is a member of ml) and user policy lists add up;
    when all are empty every configured host is allowed."""
    folders.set_domain("acme", allowed_vfolder_hosts=domain)
    folders.set_project("acme", "ml", allowed_vfolder_hosts=project)
    folders.set_policy("default", allowed_vfolder_hosts=policy)
    with folders.tx() as s:
        hosts = vfolders.list_hosts(s, folders.p("alice"), folders.hosts)
        assert [h["name"] for h in hosts] == user_hosts
        assert all("path" not in h for h in hosts)
        assert len(vfolders.list_hosts(s, folders.p("root"), folders.hosts)) == 2
    for host in ("fast", "local"):
        if host in project_hosts:
            folders.create("ada", f"on-{host}", project="ml", host=host)
        else:
            with pytest.raises(Invalid, match=f"storage host '{host}' is not available"):
                folders.create("ada", f"on-{host}", project="ml", host=host)
    assert sorted(folders.dirs("fast") + folders.dirs("local")) == sorted(
        f["id"] for f in folders.list("ada"))


# --------------------------------------------------------------- lifecycle

def test_a_folder_made_in_a_transaction_that_rolls_back_leaves_no_directory(folders):  # noqa: F811
    from quota_service.core.schemas import VFolderCreate

    with pytest.raises(RuntimeError):
        with folders.tx() as s:
            vfolders.create(s, folders.p("alice"), VFolderCreate(name="data"), folders.now,
                            folders.storage)
            assert len(folders.dirs()) == 1
            raise RuntimeError("the commit never comes")
    assert folders.count() == 0 and folders.dirs() == []


def test_rename_changes_only_the_name_and_refuses_a_taken_one(folders):  # noqa: F811
    f = folders.create("alice", "data")
    folders.create("alice", "taken")
    folders.create("bob", "free")
    with pytest.raises(Conflict, match="already has a vfolder named 'taken'"):
        folders.rename("alice", f["id"], "taken")
    got = folders.rename("alice", f["id"], "free")
    assert (got["id"], got["name"]) == (f["id"], "free")
    assert folders.dirs() == sorted(x["id"] for x in folders.list("root"))


def test_trash_restore_and_purge_a_folder_and_its_files(folders):  # noqa: F811
    f = folders.create("alice", "data")
    (folders.hosts["local"].folder_dir(f["id"]) / "file").write_text("x")
    with pytest.raises(Conflict, match="not in the trash"):
        folders.purge("alice", f["id"])
    folders.trash("alice", f["id"])
    assert folders.get("alice", f["id"])["trashed_at"] == folders.now.isoformat()
    assert folders.restore("alice", f["id"])["status"] == "active"
    folders.trash("alice", f["id"])
    folders.purge("alice", f["id"])
    assert folders.count() == 0 and folders.dirs() == []
    with pytest.raises(Hidden):
        folders.get("alice", f["id"])


def test_a_new_folder_on_an_xfs_quota_host_joins_its_owners_project(folders):  # noqa: F811
    import dataclasses

    folders.hosts["local"] = dataclasses.replace(folders.hosts["local"], quota=True,
                                                 mount_point="/srv")
    folders.set_policy("default", max_vfolder_size=10**9)
    f = folders.create("alice", "data")
    alice = folders.world.user("alice")
    project_id = storage.DEFAULT_XFS_PROJECT_BASE + 2 * alice.id
    assert folders.commands == [
        ["xfs_quota", "-x", "-c",
         f"project -s -p {folders.hosts['local'].folder_dir(f['id'])} {project_id}", "/srv"],
        ["xfs_quota", "-x", "-c", f"limit -p bhard=1000000000 {project_id}", "/srv"],
    ]


# --------------------------------------------------------------- sharing

def test_an_accepted_invitation_shares_the_folder_with_its_permission(folders):  # noqa: F811
    f = folders.create("alice", "data")
    inv = folders.invite("alice", f["id"], "bob", "rw")
    assert (inv["state"], inv["inviter"], inv["invitee"], inv["permission"]) == (
        "pending", "alice", "bob", "rw")
    with pytest.raises(Hidden):
        folders.get("bob", f["id"])
    with folders.tx() as s:
        from quota_service.storage import shares as vshares

        assert [i["id"] for i in vshares.list_invitations(s, folders.p("bob"))] == [inv["id"]]
        assert [i["id"] for i in vshares.list_invitations(s, folders.p("alice"), "sent")] == [
            inv["id"]]
        assert vshares.list_invitations(s, folders.p("alice")) == []
    assert folders.answer("bob", inv["id"], "accept")["state"] == "accepted"
    assert folders.get("bob", f["id"])["permission"] == "rw"
    with pytest.raises(Conflict, match="accepted, not pending"):
        folders.answer("bob", inv["id"], "reject")


def test_rejected_and_canceled_invitations_share_nothing(folders):  # noqa: F811
    f = folders.create("alice", "data")
    first = folders.invite("alice", f["id"], "bob")
    assert folders.answer("bob", first["id"], "reject")["state"] == "rejected"
    second = folders.invite("alice", f["id"], "bob")
    with pytest.raises(Denied, match="the invitee rejects it"):
        folders.answer("bob", second["id"], "cancel")
    folders.answer("alice", second["id"], "cancel")
    assert folders.world.count(VFolderShare) == 0
    with pytest.raises(Hidden):
        folders.get("bob", f["id"])


@pytest.mark.parametrize("invitee, error, words", [
    ("gina", Invalid, "no user 'gina' in domain 'acme'"),
    ("nosuch", Invalid, "no user 'nosuch' in domain 'acme'"),
    ("alice", Invalid, "'alice' owns vfolder 'data'"),
    ("carl", Conflict, "already shared with 'carl' (ro)"),
    ("bob", Conflict, "already has a pending invitation"),
])
def test_invitations_that_cannot_be_made_are_refused(folders, invitee, error, words):  # noqa: F811
    f = folders.create("alice", "data")
    folders.share("alice", f["id"], "carl", "ro")
    folders.invite("alice", f["id"], "bob")
    before = folders.world.count(VFolderInvitation)
    with pytest.raises(error) as e:
        folders.invite("alice", f["id"], invitee)
    assert words in e.value.message
    assert folders.world.count(VFolderInvitation) == before


def test_an_invitation_to_a_trashed_folder_cannot_be_accepted(folders):  # noqa: F811
    f = folders.create("alice", "data")
    inv = folders.invite("alice", f["id"], "bob")
    folders.trash("alice", f["id"])
    with pytest.raises(Conflict, match="in the trash"):
        folders.answer("bob", inv["id"], "accept")
    assert folders.world.count(VFolderShare) == 0


def test_a_share_is_revoked_by_wd_holders_or_left_by_its_user(folders):  # noqa: F811
    from quota_service.storage import shares as vshares

    ids = folders.matrix_folders()
    with folders.tx() as s:
        with pytest.raises(Denied):
            vshares.revoke(s, folders.p("carl"), ids["user"], "dora")
        vshares.revoke(s, folders.p("carl"), ids["user"], "carl")
        vshares.revoke(s, folders.p("erin"), ids["user"], "dora")
        with pytest.raises(NotFound, match="not shared with 'dora'"):
            vshares.revoke(s, folders.p("alice"), ids["user"], "dora")
        assert vshares.list_shares(s, folders.p("alice"), ids["user"]) == [
            {"user": "erin", "permission": "wd", "created_at": folders.now.isoformat()}]
    with pytest.raises(Hidden):
        folders.access("carl", ids["user"], "read")
