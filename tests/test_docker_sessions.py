"""Compute sessions in real Docker containers, started through the real hub.

Two Docker engines on this machine are two nodes of the resource group
``dock`` (started by `make test`: scripts/start-docker.sh --engines 2; their
URLs in HUBGRID_TEST_DOCKER_HOSTS), on the hub shared with
tests/test_docker_isolation.py (tests/docker_fixtures.py). Each container has
a network of its own; its server listens on a Unix socket. The GPUs of node ``dock-a`` are declared (no NVIDIA
runtime here): sessions get the GPU environment, never device requests.
"""

from __future__ import annotations

import uuid

import pytest
import requests
from bs4 import BeautifulSoup

from docker_fixtures import HOSTS, IMAGE, SERVICE_CONFIG, MiB, held, opts
from hub_fixtures import _ok, launch_hub, stop_hub
from session_fixtures import (allocations, eventually, hub_log, run_in_terminal, server_of, spawn,
                              stop_server, wait_ready)


def test_a_session_gets_exactly_its_limits_as_a_user_without_privileges(dock):
    hub = dock.hub
    assert spawn(hub, "alice", "lim", **opts(cpu="1", mem="512M")).status_code in (201, 202)
    try:
        wait_ready(hub, "alice", "lim")
        a = held(hub, "alice", "lim")
        url, c = dock.container(a["id"])
        assert url == a["backend_url"]
        # the cgroup of the container holds exactly the granted memory
        limit = dock.exec(url, c["Id"], ["cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"])
        assert int(limit) == 512 * MiB == int(a["slots"]["mem"])
        assert dock.exec(url, c["Id"], ["id", "-u"]) == "1000"
        info = dock.engines[url].inspect_container(c["Id"])
        hc = info["HostConfig"]
        assert (hc["NanoCpus"], hc["Memory"], hc["PidsLimit"]) == (10**9, 512 * MiB, 4096)
        assert hc["Privileged"] is False and hc["CapDrop"] == ["ALL"]
        assert hc["SecurityOpt"] == ["no-new-privileges"]
        assert dock.network_mode(url, info) == "none"  # its own, or a sandbox's it joined
        # its only mounts: its own socket directory and its relay's, read-only
        # (tests/test_docker_isolation.py), and its live directory, empty and
        # read-only (tests/test_docker_live_mounts.py)
        assert not hc.get("Binds")
        assert sorted((m["Source"], m["Destination"], m["RW"]) for m in info["Mounts"]) == [
            (f"/run/hubgrid/live/{a['id']}", "/home/jovyan/mounted-folders", False),
            (f"/run/hubgrid/sessions/{a['id']}/relay", "/run/hubgrid-relay", False),
            (f"/run/hubgrid/sessions/{a['id']}/session", "/run/hubgrid", True)]
        labels = info["Config"]["Labels"]
        assert {k: labels.get(k) for k in ("hubgrid.allocation", "hubgrid.user", "hubgrid.domain",
                                           "hubgrid.project")} == {
            "hubgrid.allocation": a["id"], "hubgrid.user": "alice",
            "hubgrid.domain": "acme", "hubgrid.project": "ml"}
        env = dict(e.split("=", 1) for e in info["Config"]["Env"])
        assert env["NVIDIA_VISIBLE_DEVICES"] == "void" and env["HUBGRID_ALLOCATION"] == a["id"]
        # reachable through the hub's proxy only with the owner's credentials
        token = {"Authorization": f"token {hub.token('alice')}"}
        r = requests.get(f"{hub.url}/user/alice/lim/api/status", headers=token, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        stop_server(hub, "alice", "lim")
    assert dock.containers(allocation=a["id"]) == []
    [done] = allocations(hub, "alice", server="lim")
    assert done["state"] == "released"


def test_apps_are_listed_per_session_and_reached_through_the_proxy(dock):
    hub = dock.hub
    assert spawn(hub, "alice", "apps", **opts()).status_code in (201, 202)
    try:
        wait_ready(hub, "alice", "apps")
        a = hub.call("GET", f"allocations/{held(hub, 'alice', 'apps')['id']}", "alice").json()
        apps = {x["name"]: x["url"] for x in a["apps"]}
        assert set(apps) >= {"jupyterlab", "terminal", "files"}
        assert apps["files"] == "/user/alice/apps/files/"
        s = requests.Session()
        hub.sessions.append(s)  # closed with the hub
        s.headers["Authorization"] = f"token {hub.token('alice')}"
        # a terminal, then its page in JupyterLab
        r = s.post(f"{hub.url}/user/alice/apps/api/terminals", timeout=30)
        assert r.status_code == 200, r.text
        r = s.get(hub.url + apps["terminal"].replace("/terminals/1", f"/terminals/{r.json()['name']}"),
                  timeout=30)
        assert r.status_code == 200 and "JupyterLab" in r.text
        # its shell finds the image's `hubgrid` (a login shell: /etc/profile resets PATH)
        shown = run_in_terminal(hub, "alice", "apps", "command -v hubgrid")
        assert "/opt/hubgrid/venv/bin/hubgrid" in shown, shown
        # the files app runs in the container behind jupyter-server-proxy
        r = s.get(hub.url + apps["files"], timeout=60)
        assert r.status_code == 200 and "Directory listing" in r.text
    finally:
        stop_server(hub, "alice", "apps")


def test_a_second_user_can_neither_see_nor_reach_nor_stop_the_session(dock):
    hub = dock.hub
    assert spawn(hub, "alice", "mine", **opts()).status_code in (201, 202)
    try:
        wait_ready(hub, "alice", "mine")
        a = held(hub, "alice", "mine")
        for other in ("bob", "gina"):
            assert hub.hub_call("GET", "users/alice", user=other).status_code in (403, 404)
            r = hub.hub_call("DELETE", "users/alice/servers/mine", user=other)
            assert r.status_code in (403, 404), r.text
            r = requests.get(f"{hub.url}/user/alice/mine/api/status", timeout=30,
                             headers={"Authorization": f"token {hub.token(other)}"})
            assert r.status_code == 403, r.status_code
            assert hub.call("GET", f"allocations/{a['id']}", other).status_code == 404
            assert hub.call("GET", f"allocations/{a['id']}/logs", other).status_code == 404
            assert a["id"] not in {x["id"] for x in hub.call("GET", "allocations", other).json()}
        assert server_of(hub, "alice", "mine")["ready"]
        url, c = dock.container(a["id"])
        assert dock.engines[url].inspect_container(c["Id"])["State"]["Running"]
    finally:
        stop_server(hub, "alice", "mine")


def test_pending_until_capacity_frees_on_another_node_and_cancel_releases_once(dock):
    hub = dock.hub
    names = ("full1", "full2", "waits", "cancel")
    try:
        for s in names[:2]:
            assert spawn(hub, "alice", s, **opts(cpu="2")).status_code in (201, 202)
        for s in names[:2]:
            wait_ready(hub, "alice", s)
        nodes = {held(hub, "alice", s)["node"] for s in names[:2]}
        assert nodes == {"dock-a", "dock-b"}  # one per node: the group is full
        assert {u for u, _ in dock.containers(user="alice")} == set(HOSTS[:2])

        r = spawn(hub, "alice", "waits", **opts(cpu="2"))
        assert r.status_code == 202, r.text
        [p] = allocations(hub, "alice", "pending", "waits")
        assert p["reasons"]
        events = hub.hub_call("GET", "users/alice/servers/waits/progress", user="alice",
                              stream=True, timeout=30)
        assert any(b"pending: " in line for line, _ in zip(events.iter_lines(), range(20))
                   if line.startswith(b"data:") and b"pending" in line)
        events.close()
        freed = held(hub, "alice", "full1")["node"]
        stop_server(hub, "alice", "full1")
        wait_ready(hub, "alice", "waits")
        assert held(hub, "alice", "waits")["node"] == freed

        # cancel while pending: released (cancelled) once, nothing started
        assert spawn(hub, "alice", "cancel", **opts(cpu="2")).status_code == 202
        [p] = allocations(hub, "alice", "pending", "cancel")
        stop_server(hub, "alice", "cancel")
        [c] = allocations(hub, "alice", server="cancel")
        assert c["state"] == "cancelled" and c["id"] == p["id"]
        assert dock.containers(allocation=p["id"]) == []
        # the others still hold theirs
        assert {held(hub, "alice", s)["node"] for s in ("full2", "waits")} == {"dock-a", "dock-b"}
    finally:
        for s in names:
            if server_of(dock.hub, "alice", s) is not None:
                stop_server(dock.hub, "alice", s)


def test_batch_session_keeps_exit_code_and_output(dock):
    hub = dock.hub
    cmd = "echo hello from batch; echo oops >&2; exit 3"
    assert spawn(hub, "alice", "job", **opts(session_type="batch", command=cmd)).status_code in (201, 202)

    def ended():
        done = [a for a in allocations(hub, "alice", server="job") if a["state"] == "released"]
        return done[0] if done else None

    a = eventually(ended, timeout=120)
    assert a, hub_log(hub)
    assert a["exit_code"] == 3 and a["command"] == cmd and a["session_type"] == "batch"
    def pushed():
        r = hub.call("GET", f"allocations/{a['id']}/logs", "alice")
        return r if r.status_code == 200 and "hello from batch" in r.text else None

    # the service may release it from the container's exit event before the
    # spawner's poll pushes the last output: wait for that push
    log = eventually(pushed, timeout=30)
    assert log, hub_log(hub)
    assert "hello from batch" in log.text and "oops" in log.text
    assert "exited with code 3" in log.text
    assert eventually(lambda: dock.containers(allocation=a["id"]) == [], timeout=30)
    # the domain admin reads it too, after the session ended
    assert "hello from batch" in hub.call("GET", f"allocations/{a['id']}/logs", "ada").text


def test_hub_restart_keeps_sessions_and_releases_dead_ones(dock):
    hub = dock.hub
    for s in ("stay", "dies"):
        assert spawn(hub, "alice", s, **opts()).status_code in (201, 202)
    for s in ("stay", "dies"):
        wait_ready(hub, "alice", s)
    stay, dies = held(hub, "alice", "stay"), held(hub, "alice", "dies")
    stop_hub(hub)
    url, c = dock.container(dies["id"])
    dock.engines[url].kill(c["Id"])  # dies while the hub is down
    dock.hub = hub = launch_hub(hub.state, config="", ports=hub.ports,
                                service_config=SERVICE_CONFIG,
                                env_extra={"HUBGRID_SPAWNER": "docker", "HUBGRID_DOCKER_URL": HOSTS[0]})
    hub.tokens.clear()
    assert server_of(hub, "alice", "stay")["ready"]
    assert held(hub, "alice", "stay")["id"] == stay["id"]
    r = requests.get(f"{hub.url}/user/alice/stay/api/status", timeout=30,
                     headers={"Authorization": f"token {hub.token('alice')}"})
    assert r.status_code == 200
    # its way out is back too: the new hub serves its relay (the hubgrid API, its token)
    shown = run_in_terminal(hub, "alice", "stay", "hubgrid me --json | head -c 300")
    assert '"alice"' in shown, shown
    assert eventually(lambda: allocations(hub, "alice", "released", "dies"), timeout=60)
    assert eventually(lambda: server_of(hub, "alice", "dies") is None, timeout=30)

    # killed from outside while the hub runs: noticed at the next poll
    url, c = dock.container(stay["id"])
    dock.engines[url].kill(c["Id"])
    assert eventually(lambda: allocations(hub, "alice", "released", "stay"), timeout=60)
    assert eventually(lambda: dock.containers(user="alice") == [], timeout=60)


def test_gpu_shares_from_the_spawn_page_and_the_api(dock):
    hub = dock.hub
    browser = hub.login("alice").session
    form = browser.get(f"{hub.url}/hub/spawn/alice/g1", timeout=60)
    assert form.status_code == 200 and 'name="gpu_shares"' in form.text
    page = BeautifulSoup(form.text, "html.parser")
    offered = {name: [o["value"] for o in page.select(f"select[name={name}] option")]
               for name in ("project", "resource_group", "image")}
    assert offered["project"] == ["ml"] and "dock" in offered["resource_group"]
    assert IMAGE in offered["image"]
    assert page.select_one("#hg-quota tr[data-project=ml]") is not None
    r = browser.post(f"{hub.url}/hub/spawn/alice/g1", timeout=120, data={
        "project": "ml", "resource_group": "dock", "image": IMAGE, "cpu": "0.5", "mem": "512M",
        "gpu": "0", "gpu_shares": "0.5", "session_type": "interactive", "command": "",
        "_xsrf": browser.cookies.get("_xsrf")})
    assert r.status_code == 200, r.text[:500]
    assert spawn(hub, "alice", "g2", **opts(cpu="0.5", gpu_shares="0.5")).status_code in (201, 202)
    try:
        for s in ("g1", "g2"):
            wait_ready(hub, "alice", s)
            a = held(hub, "alice", s)
            assert a["node"] == "dock-a" and len(a["gpus"]) == 1 and a["gpus"][0]["share"] == "0.5"
            url, c = dock.container(a["id"])
            info = dock.engines[url].inspect_container(c["Id"])
            env = dict(e.split("=", 1) for e in info["Config"]["Env"])
            index = str(a["gpus"][0]["index"])
            # the node's device by NVML id; inside the container it is device 0
            assert (env["NVIDIA_VISIBLE_DEVICES"], env["CUDA_VISIBLE_DEVICES"],
                    env["HUBGRID_GPU_MEMORY_FRACTION"]) == (index, "0", "0.5")
            assert not info["HostConfig"].get("DeviceRequests")  # declared GPUs, no runtime
    finally:
        for s in ("g1", "g2"):
            if server_of(hub, "alice", s) is not None:
                stop_server(hub, "alice", s)


BAD = {
    "unknown image": ("alice", opts(image="nosuch/image:1"), "image"),
    "more than any node has": ("alice", opts(cpu="64"), "largest node"),
    "a project that is not mine": ("alice", opts(project="lab"), "project"),
    "a group not granted": ("gina", opts(project="lab"), "dock"),
    "shares and whole GPUs": ("alice", opts(gpu=1, gpu_shares="0.5"), "gpu"),
    "a batch session without command": ("alice", opts(session_type="batch"), "command"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_options_are_refused_and_leave_nothing(dock, case):
    hub = dock.hub
    user, options, word = BAD[case]
    server = "bad" + uuid.uuid4().hex[:6]
    before = {a["id"] for a in allocations(hub, user)}
    r = spawn(hub, user, server, **options)
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    assert word in r.json()["message"].lower()
    assert eventually(lambda: server_of(hub, user, server) is None
                      or not server_of(hub, user, server)["pending"], timeout=30)
    assert dock.containers(user=user) == []
    new = [a for a in allocations(hub, user) if a["id"] not in before]
    assert all(a["state"] not in ("allocated", "pending") for a in new), new


# ---------------------------------------------------------------- vfolder mounts

def _folder(hub, user, name) -> str:
    r = hub.call("POST", "vfolders", user, json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _upload(hub, user, folder, path, data: bytes):
    r = hub.call("PUT", f"vfolders/{folder}/upload?path={path}", user, data=data)
    assert r.status_code == 201, r.text


def test_vfolders_mount_with_the_users_permission_and_nothing_else(dock):
    hub = dock.hub
    mine, dot = _folder(hub, "alice", "data"), _folder(hub, "alice", ".dotfiles")
    bobs, ginas = _folder(hub, "bob", "bobs"), _folder(hub, "gina", "secret")
    _upload(hub, "alice", mine, "hello.txt", b"hello from alice\n")
    _upload(hub, "bob", bobs, "readme.txt", b"bob's notes\n")
    _upload(hub, "gina", ginas, "key.txt", b"gina's secret\n")
    r = hub.call("POST", f"vfolders/{bobs}/invitations", "bob", json={"user": "alice",
                                                                     "permission": "ro"})
    assert r.status_code == 201, r.text
    assert hub.call("POST", f"invitations/{r.json()['id']}/accept", "alice").status_code == 200
    # another domain's folder cannot be mounted: refused, nothing started
    r = spawn(hub, "alice", "vfx", **opts(vfolders=["secret"]))
    assert r.status_code >= 400 and "secret" in r.text, r.text
    assert server_of(hub, "alice", "vfx") is None and dock.containers(user="alice") == []
    assert spawn(hub, "alice", "vf", **opts(vfolders=["data", "bobs"])).status_code in (201, 202)
    try:
        wait_ready(hub, "alice", "vf")
        a = held(hub, "alice", "vf")
        assert {(m["name"], m["mode"]) for m in a["mounts"]} == {
            ("data", "rw"), ("bobs", "ro"), (".dotfiles", "rw")}
        assert all("path" not in m for m in a["mounts"])  # no host paths for users
        url, c = dock.container(a["id"])
        run = ["sh", "-c"]
        assert dock.exec(url, c["Id"], ["cat", "/home/jovyan/data/hello.txt"]) == "hello from alice"
        dock.exec(url, c["Id"], run + ["echo written > /home/jovyan/data/new.txt"])
        assert dock.exec(url, c["Id"], ["cat", "/home/jovyan/bobs/readme.txt"]) == "bob's notes"
        out = dock.exec(url, c["Id"], run + ["touch /home/jovyan/bobs/x 2>&1; echo rc=$?"])
        assert "Read-only file system" in out and out.endswith("rc=1"), out
        assert dock.exec(url, c["Id"], run + ["test -d /home/jovyan/.dotfiles && echo yes"]) == "yes"
        # gina's folder is nowhere in the container
        sources = {m["Source"] for m in dock.engines[url].inspect_container(c["Id"])["Mounts"]}
        sources.remove(f"/run/hubgrid/sessions/{a['id']}/session")  # its own socket directory
        sources.remove(f"/run/hubgrid/sessions/{a['id']}/relay")  # its relay's
        sources.remove(f"/run/hubgrid/live/{a['id']}")  # its live directory (empty)
        assert len(sources) == 3 and not any(ginas in s for s in sources)
        found = dock.exec(url, c["Id"], run + ["grep -rl 'gina' /home/jovyan 2>/dev/null; true"])
        assert found == ""
    finally:
        stop_server(hub, "alice", "vf")
    # what the session wrote is in alice's folder, read through the files API
    r = hub.call("GET", f"vfolders/{mine}/download?path=new.txt", "alice")
    assert (r.status_code, r.content) == (200, b"written\n")
    for user, folder in (("alice", mine), ("alice", dot), ("bob", bobs), ("gina", ginas)):
        assert hub.call("DELETE", f"vfolders/{folder}", user).status_code == 204
        assert hub.call("POST", f"vfolders/{folder}/purge", user).status_code == 204


def test_a_session_past_its_lifetime_is_warned_then_reclaimed_and_its_container_removed(dock):
    """Backend.AI #13273 (a lifetime that never expired), on a real container:
    the policy's max_session_lifetime from the start, a warning on the
    allocation while the server runs, then the hub stops it (a pass every
    second; the rules themselves: tests/test_reclaim_rules.py)."""
    hub = dock.hub
    name, policy = "life" + uuid.uuid4().hex[:6], "life-" + uuid.uuid4().hex[:6]
    _ok(hub.call("POST", "resource-policies", "admin", json={
        "name": policy, "max_session_lifetime": 12, "reclaim_warning": 4}), 201)
    _ok(hub.call("POST", "users", "admin", json={"name": name, "domain": "acme"}), 201)
    _ok(hub.call("PATCH", f"users/{name}", "admin", json={"resource_policy": policy}), 200)
    _ok(hub.call("PUT", f"domains/acme/projects/ml/members/{name}", "admin"), 201)
    assert spawn(hub, name, "short", **opts(cpu="0.5", mem="256M")).status_code in (201, 202)
    wait_ready(hub, name, "short")
    a = held(hub, name, "short")
    assert len(dock.containers(allocation=a["id"])) == 1

    def warned_while_running():
        notice = hub.call("GET", f"allocations/{a['id']}", name).json()["reclaim"]
        return notice if notice and server_of(hub, name, "short") is not None else None

    notice = eventually(warned_while_running, timeout=30, interval=0.3)
    assert notice and notice["rule"] == "lifetime", hub_log(hub)
    assert notice["numbers"]["max_session_lifetime"] == 12
    assert eventually(lambda: server_of(hub, name, "short") is None, timeout=40), hub_log(hub)
    assert eventually(lambda: dock.containers(allocation=a["id"]) == [], timeout=30)
    [done] = eventually(lambda: [x for x in allocations(hub, name, "released")
                                 if x["release_reason"].startswith("reclaimed (lifetime)")],
                        timeout=30) or [None]
    assert done and done["id"] == a["id"], allocations(hub, name)
    kinds = sorted(e["kind"] for e in hub.call(
        "GET", f"reclaim/events?allocation={a['id']}", name).json()["events"])
    assert kinds == ["reclaimed", "warning"]
