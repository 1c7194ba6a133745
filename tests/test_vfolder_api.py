"""The vfolder endpoints over HTTP, through the service's real app
(tests/service_app.py) on SQLite and PostgreSQL: the permission matrix of
every endpoint, creation and its refusals, hosts, audit and session mounts.

Matrix callers (see tests/vfolder_world.py): alice owns the user folder and
is a member of acme/ml; mia is another member of acme/ml; carl, dora and
erin are invited to alice's folder with ro, rw and wd; bob is another user
of acme; gina a user of globex; ada the domain admin of acme; root a
superadmin. The project folder belongs to acme/ml (members rw).
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from quota_service.core.foldermodels import VFolder
from quota_service.core.models import Allocation, AuditEntry
from service_app import served  # noqa: F401
from vfolder_world import Folders, add_extra_users

CALLERS = {"owner": "alice", "project member": "mia", "invitee ro": "carl",
           "invitee rw": "dora", "invitee wd": "erin", "same domain": "bob",
           "other domain": "gina", "domain admin": "ada", "superadmin": "root"}


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def api(served, tmp_path):  # noqa: F811
    """The served service with the extra users, and a manager driver over its storage."""
    add_extra_users(served.world)
    driver = Folders(served.world, tmp_path / "unused")
    driver.hosts = served.svc.vfolder_hosts_resolved
    driver.set_policy("default")
    served.folders = driver
    return served


# -- setups: fresh targets per caller, as path parts ---------------------------

def user_folder(f: Folders) -> dict:
    return {"id": f.matrix_folders(uniq("data"), uniq("shared"))["user"]}


def project_folder(f: Folders) -> dict:
    return {"id": f.matrix_folders(uniq("data"), uniq("shared"))["project"]}


def trashed_user_folder(f: Folders) -> dict:
    parts = user_folder(f)
    f.trash("alice", parts["id"])
    return parts


def invitation_for_bob(f: Folders) -> dict:
    parts = user_folder(f)
    inv = f.invite("alice", parts["id"], "bob", "rw")
    return {**parts, "inv": inv["id"]}


def nothing(f: Folders) -> dict:
    return {}


def expect(default: int, **by_caller: int) -> dict[str, int]:
    unknown = set(by_caller) - set(CALLERS.values())
    assert not unknown, unknown
    return {u: by_caller.get(u, default) for u in CALLERS.values()}


WD = dict(alice=200, erin=200, ada=200, root=200)
SEES = dict(alice=200, carl=200, dora=200, erin=200, ada=200, root=200)

# (id, method, path template, body, setup, expected status per caller)
CASES = [
    ("list-hosts", "GET", "vfolder-hosts", None, nothing, expect(200)),
    ("list-folders", "GET", "vfolders", None, nothing, expect(200)),
    ("list-trashed-folders", "GET", "vfolders?status=trashed", None, trashed_user_folder,
     expect(200)),
    ("create-folder", "POST", "vfolders", lambda: {"name": uniq("f")}, nothing, expect(201)),
    ("create-project-folder", "POST", "vfolders",
     lambda: {"name": uniq("p"), "project": "ml", "permission": "ro"}, nothing,
     expect(404, alice=403, mia=403, ada=201, root=201)),
    ("get-folder", "GET", "vfolders/{id}", None, user_folder, expect(404, **SEES)),
    ("get-project-folder", "GET", "vfolders/{id}", None, project_folder,
     expect(404, alice=200, mia=200, ada=200, root=200)),
    ("get-trashed-folder", "GET", "vfolders/{id}", None, trashed_user_folder,
     expect(404, **WD)),
    ("rename-folder", "PATCH", "vfolders/{id}", lambda: {"name": uniq("r")}, user_folder,
     expect(404, carl=403, dora=403, **WD)),
    ("rename-project-folder", "PATCH", "vfolders/{id}", lambda: {"name": uniq("r")},
     project_folder, expect(404, alice=403, mia=403, ada=200, root=200)),
    ("trash-folder", "DELETE", "vfolders/{id}", None, user_folder,
     expect(404, carl=403, dora=403, alice=204, erin=204, ada=204, root=204)),
    ("trash-project-folder", "DELETE", "vfolders/{id}", None, project_folder,
     expect(404, alice=403, mia=403, ada=204, root=204)),
    ("restore-folder", "POST", "vfolders/{id}/restore", None, trashed_user_folder,
     expect(404, **WD)),
    ("restore-active-folder", "POST", "vfolders/{id}/restore", None, user_folder,
     expect(404, carl=409, dora=409, alice=409, erin=409, ada=409, root=409)),
    ("purge-folder", "POST", "vfolders/{id}/purge", None, trashed_user_folder,
     expect(404, alice=204, erin=204, ada=204, root=204)),
    ("invite", "POST", "vfolders/{id}/invitations", {"user": "bob", "permission": "ro"},
     user_folder, expect(404, carl=403, dora=403, alice=201, erin=201, ada=201, root=201)),
    ("invite-to-project-folder", "POST", "vfolders/{id}/invitations",
     {"user": "bob", "permission": "ro"}, project_folder,
     expect(404, alice=403, mia=403, ada=422, root=422)),
    ("list-shares", "GET", "vfolders/{id}/shares", None, user_folder,
     expect(404, carl=403, dora=403, **WD)),
    ("revoke-share", "DELETE", "vfolders/{id}/shares/dora", None, user_folder,
     expect(404, carl=403, alice=204, dora=204, erin=204, ada=204, root=204)),
    ("list-invitations", "GET", "invitations", None, invitation_for_bob, expect(200)),
    ("list-sent-invitations", "GET", "invitations?direction=sent", None, invitation_for_bob,
     expect(200)),
    ("accept-invitation", "POST", "invitations/{inv}/accept", None, invitation_for_bob,
     expect(404, alice=403, bob=200, ada=403, root=403)),
    ("reject-invitation", "POST", "invitations/{inv}/reject", None, invitation_for_bob,
     expect(404, alice=403, bob=200, ada=403, root=403)),
    ("cancel-invitation", "DELETE", "invitations/{inv}", None, invitation_for_bob,
     expect(404, alice=204, bob=403, ada=204, root=204)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
async def test_every_endpoint_answers_each_caller_as_the_rules_say(api, case):
    _id, method, template, body, setup, expected = case
    wrong = {}
    for role, caller in CALLERS.items():
        path = template.format(**setup(api.folders))
        payload = body() if callable(body) else body
        resp, data = await api.call(method, path, caller, json_body=payload)
        if resp.code != expected[caller]:
            wrong[f"{role} ({caller})"] = (resp.code, expected[caller], str(data)[:200])
        elif resp.code >= 400:
            assert data["status"] == resp.code and data["message"], data
    assert wrong == {}


def test_the_matrix_covers_every_vfolder_operation_but_the_files_api():
    import re

    from quota_service.api import routes, vfolders as handlers
    from quota_service.api.openapi import implemented_verbs

    covered = set()
    for _id, method, template, *_ in CASES:
        path = template.split("?")[0].replace("{id}", "([^/]+)").replace("{inv}", "([^/]+)")
        covered.add((method.lower(), path.replace("/dora", "/([^/]+)")))
    # the route table's named groups, unnamed
    wanted = {(verb, re.sub(r"\(\?P<\w+>", "(", route)) for route, handler in routes.API
              if handler.__module__ == handlers.__name__ for verb in implemented_verbs(handler)}
    assert wanted - covered == set()


# -- creating ------------------------------------------------------------------------

async def test_a_created_folder_has_its_location_its_model_and_its_directory(api):
    resp, f = await api.call("POST", "vfolders", "alice",
                             json_body={"name": ".dotfiles", "usage_mode": "data"})
    assert resp.code == 201
    assert resp.headers["Location"] == f"{api.svc.api_prefix}vfolders/{f['id']}"
    assert {k: f[k] for k in ("name", "host", "owner", "usage_mode", "permission",
                              "project_permission", "status", "auto_mount", "usage_bytes",
                              "trashed_at")} == {
        "name": ".dotfiles", "host": "local", "owner": {"kind": "user", "user": "alice",
                                                        "domain": "acme"},
        "usage_mode": "data", "permission": "wd", "project_permission": None,
        "status": "active", "auto_mount": True, "usage_bytes": 0, "trashed_at": None}
    assert (api.svc.vfolder_hosts_resolved["local"].path / f["id"]).is_dir()
    resp, got = await api.call("GET", f"vfolders/{f['id']}", "alice")
    assert got == f


@pytest.mark.parametrize("name, words", [
    ("a/b", "'/'"), (".", "not allowed"), ("..", "not allowed"), ("", "empty"),
    ("x" * 65, "longer than 64"), ("nul\x00", "control character"), ("tab\t", "control"),
    (" lead", "whitespace"), ("trail ", "whitespace"), ("line\u2028sep", "control"),
])
async def test_a_bad_name_is_refused_and_nothing_is_left_behind(api, name, words):
    resp, data = await api.call("POST", "vfolders", "alice", json_body={"name": name})
    assert resp.code == 422 and words in data["message"], data
    assert api.world.count(VFolder) == 0 and api.folders.dirs() == []


async def test_names_are_nfc_normalised_so_look_alike_spellings_collide(api):
    resp, f = await api.call("POST", "vfolders", "alice", json_body={"name": "cafe\u0301"})
    assert resp.code == 201 and f["name"] == "caf\u00e9"
    resp, data = await api.call("POST", "vfolders", "alice", json_body={"name": "caf\u00e9"})
    assert resp.code == 409 and "already have a vfolder named 'café'" in data["message"]
    assert api.world.count(VFolder) == 1 and len(api.folders.dirs()) == 1


async def test_the_count_limit_allows_exactly_the_limit_and_refuses_one_more(api):
    api.folders.set_policy("default", max_vfolder_count=2)
    for name in ("one", "two"):
        resp, _ = await api.call("POST", "vfolders", "alice", json_body={"name": name})
        assert resp.code == 201
    resp, data = await api.call("POST", "vfolders", "alice", json_body={"name": "three"})
    assert resp.code == 422
    assert data["message"] == ("vfolder count limit reached: user alice has 2 folder(s), at "
                               "most 2 (resource policy 'default'; trashed folders count "
                               "until purged)")
    assert api.world.count(VFolder) == 2 and len(api.folders.dirs()) == 2
    resp, _ = await api.call("POST", "vfolders", "bob", json_body={"name": "three"})
    assert resp.code == 201  # the limit is per user


async def test_hosts_show_capabilities_and_only_superadmins_see_paths(api):
    resp, hosts = await api.call("GET", "vfolder-hosts", "alice")
    assert hosts == [{"name": "local", "capabilities": ["usage"]}]
    resp, hosts = await api.call("GET", "vfolder-hosts", "root")
    assert hosts[0]["path"] == str(api.svc.vfolder_hosts_resolved["local"].path)


async def test_an_unknown_or_unallowed_host_is_refused_alike(api):
    api.folders.set_domain("acme", allowed_vfolder_hosts=["elsewhere"])
    for host in ("local", "nosuch"):
        resp, data = await api.call("POST", "vfolders", "alice",
                                    json_body={"name": "x", "host": host})
        assert resp.code == 422
        assert data["message"] == (f"host: storage host {host!r} is not available to you "
                                   "(available: none)")
    assert api.world.count(VFolder) == 0


async def test_vfolder_writes_are_audited_with_the_folder_and_its_domain(api):
    """Each action reads as what it did: DELETE only moves the folder to the
    trash (``vfolder.trash``); ``vfolder.purge`` is deleting it for good."""
    resp, f = await api.call("POST", "vfolders", "alice", json_body={"name": "data"})
    await api.call("PATCH", f"vfolders/{f['id']}", "alice", json_body={"name": "data2"})
    await api.call("DELETE", f"vfolders/{f['id']}", "gina")
    await api.call("DELETE", f"vfolders/{f['id']}", "alice")
    await api.call("POST", f"vfolders/{f['id']}/restore", "alice")
    await api.call("DELETE", f"vfolders/{f['id']}", "alice")
    await api.call("POST", f"vfolders/{f['id']}/purge", "alice")
    await api.call("GET", "me", "root")  # the records are written after each answer
    with api.svc.session_factory() as s:
        rows = [(e.action, e.actor, e.target, e.domain, e.outcome, e.status)
                for e in s.scalars(sa.select(AuditEntry).where(
                    AuditEntry.action.like("vfolder%")).order_by(AuditEntry.id))]
    assert rows == [
        ("vfolder.create", "alice", f["id"], "acme", "success", 201),
        ("vfolder.rename", "alice", f["id"], "acme", "success", 200),
        ("vfolder.trash", "gina", f["id"], None, "denied", 404),
        ("vfolder.trash", "alice", f["id"], "acme", "success", 204),
        ("vfolder.restore", "alice", f["id"], "acme", "success", 200),
        ("vfolder.trash", "alice", f["id"], "acme", "success", 204),
        ("vfolder.purge", "alice", f["id"], "acme", "success", 204),
    ]
    assert api.folders.dirs() == []


# -- sessions mount their folders ---------------------------------------------------------

SESSION = {"user": "alice", "project": "ml", "resource_group": "gpu",
           "slots": {"cpu": "1", "mem": "1G"}}


@pytest.fixture
def gpu(api, cluster):
    cluster.add_group("gpu", {"node-1": ()})
    return api


async def test_a_session_mounts_what_it_asks_for_and_every_dot_folder(gpu):
    f = gpu.folders
    data = f.create("alice", "data")
    dot = f.create("alice", ".config")
    shared = f.create("bob", "papers")
    f.share("bob", shared["id"], "alice", "ro")
    f.create("ada", ".team", project="ml", permission="ro")
    f.create("ada", ".web-only", project="web", permission="rw")
    resp, a = await gpu.call("POST", "internal/allocations", "internal",
                             json_body={**SESSION, "vfolders": ["papers", data["id"]]})
    assert resp.code == 201, a
    root = gpu.svc.vfolder_hosts_resolved["local"].path
    assert [(m["name"], m["mode"]) for m in a["mounts"]] == [
        ("papers", "ro"), ("data", "rw"), (".config", "rw"), (".team", "ro")]
    assert a["mounts"][2] == {"folder": dot["id"], "name": ".config",
                              "path": str(root / dot["id"]), "mode": "rw"}
    resp, again = await gpu.call("GET", f"internal/allocations/{a['id']}", "internal")
    assert again["mounts"] == a["mounts"]
    resp, public = await gpu.call("GET", f"allocations/{a['id']}", "alice")
    assert public["mounts"] == [{k: m[k] for k in ("folder", "name", "mode")}
                                for m in a["mounts"]]
    assert "path" not in str(public["mounts"])


@pytest.mark.parametrize("ask, words", [
    (["nosuch"], "no vfolder 'nosuch' you may mount in this project"),
    (["web-data"], "no vfolder 'web-data' you may mount"),
    (["old"], "'old' is in the trash"),
    (["data", "data"], "'data' is asked for twice"),
])
async def test_a_session_asking_for_a_folder_it_may_not_mount_is_refused_and_nothing_written(
        gpu, ask, words):
    f = gpu.folders
    f.create("alice", "data")
    f.create("ada", "web-data", project="web")
    old = f.create("alice", "old")
    f.trash("alice", old["id"])
    resp, data = await gpu.call("POST", "internal/allocations", "internal",
                                json_body={**SESSION, "vfolders": ask})
    assert resp.code == 422 and words in data["message"], data
    assert gpu.world.count(Allocation) == 0
