"""Folders mounted into a running Docker session through the real hub and
the real engine, without a restart (spawner/livemounts.py): a folder made
after the start is mounted and written from inside, and what was written is
in the folder (the files API); the container and its home stay; a ro share
stays read-only; a revoked share and a trashed folder disappear from the
session; another tenant's folder is never mounted; the session's live
directory goes with it. Uses the shared Docker hub (docker_fixtures.py)."""

from __future__ import annotations

import os

from docker_fixtures import held, opts
from session_fixtures import eventually, hub_log, spawn, stop_server, wait_ready

LIVE = "/home/jovyan/mounted-folders"


def _folder(hub, user, name) -> str:
    r = hub.call("POST", "vfolders", user, json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _share(hub, owner, folder, user, permission):
    r = hub.call("POST", f"vfolders/{folder}/invitations", owner,
                 json={"user": user, "permission": permission})
    assert r.status_code == 201, r.text
    assert hub.call("POST", f"invitations/{r.json()['id']}/accept", user).status_code == 200


def test_a_folder_made_after_the_start_is_used_in_the_running_session(dock):
    hub = dock.hub
    assert spawn(hub, "alice", "live", **opts()).status_code in (201, 202)
    folders = []
    try:
        wait_ready(hub, "alice", "live")
        a = held(hub, "alice", "live")
        url, c = dock.container(a["id"])
        sh = lambda cmd: dock.exec(url, c["Id"], ["sh", "-c", cmd])  # noqa: E731
        sh("echo mine > /home/jovyan/home-file.txt")
        mounts = f"allocations/{a['id']}/mounts"
        assert eventually(lambda: hub.call("GET", mounts, "alice").json()["live_mounts"],
                          timeout=30), hub_log(hub)
        # folders made (and shared) after the start
        later = _folder(hub, "alice", "later")
        ro, rw = _folder(hub, "bob", "bob-ro"), _folder(hub, "bob", "bob-rw")
        ginas = _folder(hub, "gina", "ginas")
        _share(hub, "bob", ro, "alice", "ro")
        _share(hub, "bob", rw, "alice", "rw")
        folders = [("alice", later), ("bob", ro), ("bob", rw), ("gina", ginas)]
        for name in ("later", "bob-ro", "bob-rw"):
            r = hub.call("POST", mounts, "alice", json={"folder": name})
            assert r.status_code == 202, r.text
        # another tenant's folder, by id: refused, and bob may not mount into alice's session
        r = hub.call("POST", mounts, "alice", json={"folder": ginas})
        assert r.status_code == 422, r.text
        r = hub.call("POST", mounts, "bob", json={"folder": "bob-rw"})
        assert r.status_code == 404, r.text

        def listed():
            return sh(f"ls {LIVE}").split()
        assert eventually(lambda: listed() == ["bob-ro", "bob-rw", "later"], timeout=30), \
            (listed(), hub_log(hub))
        sh(f"echo from-the-session > {LIVE}/later/note.txt")
        sh(f"echo rw-ok > {LIVE}/bob-rw/x.txt")
        out = sh(f"touch {LIVE}/bob-ro/x 2>&1; echo rc=$?")
        assert "Read-only file system" in out and out.endswith("rc=1"), out
        # the session cannot plant anything where the folders are mounted
        out = sh(f"ln -s / {LIVE}/evil 2>&1; mkdir {LIVE}/ginas 2>&1; echo rc=$?")
        assert out.endswith("rc=1") and "Read-only" in out, out
        r = hub.call("GET", f"vfolders/{later}/download?path=note.txt", "alice")
        assert (r.status_code, r.content) == (200, b"from-the-session\n")
        r = hub.call("GET", f"vfolders/{rw}/download?path=x.txt", "bob")
        assert (r.status_code, r.content) == (200, b"rw-ok\n")
        # no restart: the same container, its home as it was
        assert dock.container(a["id"])[1]["Id"] == c["Id"]
        assert sh("cat /home/jovyan/home-file.txt") == "mine"
        # a revoked share and a trashed folder disappear from the running session
        assert hub.call("DELETE", f"vfolders/{ro}/shares/alice", "bob").status_code in (200, 204)
        assert hub.call("DELETE", f"vfolders/{later}", "alice").status_code == 204
        assert eventually(lambda: listed() == ["bob-rw"], timeout=30), (listed(), hub_log(hub))
        body = hub.call("GET", mounts, "alice").json()
        assert [(m["name"], m["mode"], m.get("live")) for m in body["mounts"]] == [
            ("bob-rw", "rw", True)]
    finally:
        stop_server(hub, "alice", "live")
    a_id = a["id"]
    assert eventually(lambda: not os.path.exists(f"/run/hubgrid/live/{a_id}"), timeout=30)
    with open("/proc/self/mountinfo") as f:
        assert f"/run/hubgrid/live/{a_id}/" not in f.read()
    for owner, folder in folders:
        hub.call("DELETE", f"vfolders/{folder}", owner)
        hub.call("POST", f"vfolders/{folder}/purge", owner)
