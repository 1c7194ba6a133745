"""Folders mounted into a running session ("mount now"): the pure rules
(storage/livemounts.py) as data, and ``allocations/<id>/mounts`` through the
real tornado app against every kind of caller. alice's hub session in
acme/ml can have folders mounted while it runs; folders are made after it
started."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from ledger_world import Cluster
from quota_service.core.errors import Conflict, Invalid
from quota_service.core.foldermodels import VFolder
from quota_service.core.models import Allocation, AuditEntry
from quota_service.storage import livemounts
from quota_service.storage.mounts import Candidate
from service_app import served  # noqa: F401
from vfolder_world import Folders, add_extra_users


# --- the pure rules ---------------------------------------------------------

def cand(id_, name, perm="wd", kind="own", active=True):
    return Candidate(id_, name, f"/vf/{id_}", perm, kind, active)


START = {"folder": "s", "name": "start", "path": "/vf/s", "mode": "rw"}


def test_a_folder_mounted_now_is_checked_as_at_a_start_and_marked_live():
    out = livemounts.add([START], [cand("a", "data", "ro", "shared")], "data")
    assert out == [START, {"folder": "a", "name": "data", "path": "/vf/a", "mode": "ro",
                           "live": True}]


@pytest.mark.parametrize("candidates, asked, error, words", [
    ([], "data", Invalid, "no vfolder 'data'"),
    ([cand("a", "data", active=False)], "data", Invalid, "in the trash"),
    ([cand("s", "start")], "start", Conflict, "mounted in this session already"),
    ([cand("b", "start")], "start", Conflict, "another folder is mounted at 'start'"),
])
def test_what_cannot_be_mounted_now_says_why(candidates, asked, error, words):
    with pytest.raises(error) as e:
        livemounts.add([START], candidates, asked)
    assert words in e.value.message


def test_live_mounts_follow_the_permission_as_it_stands_and_start_mounts_stay():
    live = [START, {"folder": "a", "name": "a", "path": "/vf/a", "mode": "rw", "live": True},
            {"folder": "b", "name": "b", "path": "/vf/b", "mode": "rw", "live": True},
            {"folder": "c", "name": "c", "path": "/vf/c", "mode": "ro", "live": True}]
    now = [cand("a", "a", "ro", "shared"), cand("b", "b", active=False), cand("c", "c", "rw")]
    assert livemounts.effective(live, now) == [
        START, {"folder": "a", "name": "a", "path": "/vf/a", "mode": "ro", "live": True},
        {"folder": "c", "name": "c", "path": "/vf/c", "mode": "rw", "live": True}]


# --- through the API ----------------------------------------------------------

@pytest.fixture
def started(served):  # noqa: F811
    """alice's two running hub sessions ("live": its spawner will say it can
    mount while it runs; "fixed": a Slurm-like one that never does); folders made after the start: alice's ``notes``, bob's ``bobs``
    shared with alice ro, acme/ml's ``ml-data`` (members rw), bob's
    ``private`` and gina's ``theirs`` (globex)."""
    add_extra_users(served.world)
    f = Folders(served.world, served.svc.vfolder_hosts_resolved["local"].path)
    f.hosts = served.svc.vfolder_hosts_resolved
    f.set_policy("default")
    c = Cluster(served.world)
    c.add_group("gpu", {"n1": ()}, cpu="8", domains=("acme", "globex"))
    live = c.submit("alice", "ml", "gpu", slots={"cpu": "1"})
    fixed = c.submit("alice", "ml", "gpu", slots={"cpu": "1"})
    with served.world.tx() as s:
        for alloc_id in (live["id"], fixed["id"]):
            s.get(Allocation, alloc_id).origin = "hub"
    served.svc.clock = lambda: c.now + dt.timedelta(seconds=1)
    served.ids = {"live": live["id"], "fixed": fixed["id"]}
    served.folders = {"notes": f.create("alice", "notes")["id"],
                      "bobs": f.create("bob", "bobs")["id"],
                      "ml-data": f.create("ada", "ml-data", project="ml", permission="rw")["id"],
                      "private": f.create("bob", "private")["id"],
                      "theirs": f.create("gina", "theirs")["id"]}
    f.share("bob", served.folders["bobs"], "alice", "ro")
    served.driver = f
    return served


@pytest.fixture
async def world(started):
    """... and the live session's spawner said it can mount while it runs."""
    resp, body = await started.call("PUT", f"internal/allocations/{started.ids['live']}/mounts",
                                    "internal", json_body={"live_mounts": True})
    assert resp.code == 200 and body == {"live_mounts": True}, body
    return started


async def mount(w, who, folder, which="live"):
    return await w.call("POST", f"allocations/{w.ids[which]}/mounts", who,
                        json_body={"folder": folder})


async def spawner_view(w, which="live"):
    resp, body = await w.call("GET", f"internal/allocations/{w.ids[which]}/mounts", "internal")
    assert resp.code == 200, body
    return {m["name"]: m for m in body["mounts"]}


@pytest.mark.parametrize("who, status", [
    ("alice", 202),  # the owner
    ("bob", 404),  # another user of her domain does not find the session
    ("ada", 403),  # her domain's admin sees it but does not act as its owner
    ("gus", 404),  # another domain's admin does not find it
    ("root", 403),  # a superadmin neither
])
async def test_only_the_sessions_owner_mounts_a_folder_into_it(world, who, status):
    resp, body = await mount(world, who, "notes")
    assert resp.code == status, body
    mounted = await spawner_view(world)
    assert ("notes" in mounted) == (status == 202)
    if status != 202:
        assert body["message"]
        return
    assert body == {"folder": world.folders["notes"], "name": "notes", "mode": "rw",
                    "live": True}
    assert mounted["notes"]["path"] == str(
        world.svc.vfolder_hosts_resolved["local"].folder_dir(world.folders["notes"]))


async def test_every_mount_and_refusal_is_in_the_access_log(world):
    await mount(world, "alice", "notes")
    await mount(world, "ada", "notes")
    with world.world.tx() as s:
        rows = s.scalars(sa.select(AuditEntry).where(
            AuditEntry.action == "allocation-mounts.create").order_by(AuditEntry.id)).all()
        seen = [(r.actor, r.outcome, r.target, r.detail) for r in rows]
    assert seen[0] == ("alice", "success", world.ids["live"],
                       f"folder: notes ({world.folders['notes']}); mode: rw")
    assert seen[1][:3] == ("ada", "denied", world.ids["live"])


async def test_the_owner_mounts_what_a_start_would_mount_and_nothing_else(world):
    for folder, status, words in [
            ("bobs", 202, ""), ("ml-data", 202, ""),
            ("private", 422, "no vfolder 'private'"),  # bob's, not shared
            (world.folders["theirs"], 422, "no vfolder"),  # another tenant's, by id
            ("..", 422, "no vfolder '..'"),
            ("bobs", 409, "mounted in this session already")]:
        resp, body = await mount(world, "alice", folder)
        assert resp.code == status, (folder, body)
        assert words in body.get("message", ""), body
    mounted = await spawner_view(world)
    assert {n: m["mode"] for n, m in mounted.items()} == {"bobs": "ro", "ml-data": "rw"}
    resp, body = await world.call("GET", f"allocations/{world.ids['live']}/mounts", "alice")
    assert body["live_mounts"] is True
    assert all("path" not in m for m in body["mounts"])


async def test_a_session_that_cannot_mount_while_it_runs_is_refused_with_the_way_out(world):
    resp, body = await mount(world, "alice", "notes", which="fixed")
    assert resp.code == 409 and "Folders to mount" in body["message"], body
    world.driver.now = world.svc.clock()
    resp, _ = await world.call("DELETE", f"internal/allocations/{world.ids['live']}?reason=x",
                               "internal")
    assert resp.code == 200
    resp, body = await mount(world, "alice", "notes")
    assert resp.code == 409 and "not running" in body["message"], body


async def test_a_revoked_share_a_trashed_folder_and_a_downgrade_reach_the_spawner(world):
    for folder in ("notes", "bobs", "ml-data"):
        assert (await mount(world, "alice", folder))[0].code == 202
    resp, _ = await world.call("DELETE", f"vfolders/{world.folders['bobs']}/shares/alice", "bob")
    assert resp.code in (200, 204)
    resp, _ = await world.call("DELETE", f"vfolders/{world.folders['notes']}", "alice")
    assert resp.code in (200, 204)
    with world.world.tx() as s:  # the project folder becomes ro for members
        s.get(VFolder, world.folders["ml-data"]).project_permission = "ro"
    mounted = await spawner_view(world)
    assert {n: m["mode"] for n, m in mounted.items()} == {"ml-data": "ro"}
    resp, body = await world.call("GET", f"allocations/{world.ids['live']}/mounts", "alice")
    assert [(m["name"], m["mode"]) for m in body["mounts"]] == [("ml-data", "ro")]
    # the share comes back: only a new mount puts it into the session again
    world.driver.share("bob", world.folders["bobs"], "alice", "rw")
    assert "bobs" not in await spawner_view(world)


async def test_only_the_hub_says_that_a_session_can_mount_while_it_runs(started):
    for who in ("alice", "ada", "root"):
        resp, body = await started.call("PUT", f"internal/allocations/{started.ids['live']}/mounts",
                                        who, json_body={"live_mounts": True})
        assert resp.code in (401, 403), (who, body)
    resp, body = await mount(started, "alice", "notes")
    assert resp.code == 409 and "Folders to mount" in body["message"], body


# --- the hubgrid CLI in the session -------------------------------------------------

async def hubgrid_cli(w, user, *argv, **extra_env):
    import asyncio
    import io

    from jupyterlab_hubgrid.cli import main

    access, secret = w.auth(user).removeprefix("Keypair ").split(":", 1)
    env = {"HUBGRID_API_URL": w.api, "HUBGRID_ACCESS_KEY": access,
           "HUBGRID_SECRET_KEY": secret, **extra_env}
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(main, list(argv), env=env, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


async def test_hubgrid_folders_mount_mounts_into_this_session_and_says_why_not(world):
    session = {"HUBGRID_ALLOCATION": world.ids["live"],
               "HUBGRID_LIVE_FOLDERS": "/home/jovyan/mounted-folders"}
    code, out, err = await hubgrid_cli(world, "alice", "folders", "mount", "bobs", **session)
    assert (code, err) == (0, ""), err
    assert out == ("mounting bobs (read-only) in the session at "
                   "/home/jovyan/mounted-folders/bobs: it appears within seconds\n")
    assert "bobs" in await spawner_view(world)
    code, out, err = await hubgrid_cli(world, "alice", "folders", "mount", "bobs", **session)
    assert code == 1 and "mounted in this session already" in err and err.count("\n") == 1
    code, out, err = await hubgrid_cli(world, "alice", "folders", "mount", "notes",
                                       "--session", world.ids["fixed"])
    assert code == 1 and "Folders to mount" in err, err
    code, out, err = await hubgrid_cli(world, "alice", "folders", "mount", "notes")
    assert code == 2 and "not in a hubgrid session" in err, err


async def test_a_share_revoked_while_it_is_being_mounted_never_stays_mounted(world):
    import asyncio

    for round_ in range(5):
        world.driver.share("bob", world.folders["private"], "alice", "rw")
        posted, revoked = await asyncio.gather(
            mount(world, "alice", "private"),
            world.call("DELETE", f"vfolders/{world.folders['private']}/shares/alice", "bob"))
        assert revoked[0].code in (200, 204)
        # whichever came first, the spawner is never told to keep it
        assert posted[0].code in (202, 422), posted
        assert "private" not in await spawner_view(world), round_
