"""Login through the real hub: tenancy resolved, groups and roles mirrored,
refusals explained, and service-side changes reaching the hub without a
restart."""

from __future__ import annotations

import time
import uuid

import session_fixtures
from hub_fixtures import hub, world  # noqa: F401


def eventually(check, timeout=15.0, interval=0.25):
    return session_fixtures.eventually(check, timeout, interval)


def hub_group_members(hub, name):  # noqa: F811
    r = hub.hub_call("GET", f"groups/{name}")
    return set(r.json()["users"]) if r.status_code == 200 else None


def new_user(hub, domain="acme", role="user"):  # noqa: F811
    name = "u" + uuid.uuid4().hex[:8]
    r = hub.call("POST", "users", "admin", json={"name": name, "domain": domain, "role": role})
    assert r.status_code == 201, r.text
    return name


def test_projects_and_domains_are_mirrored_as_hub_groups(world):  # noqa: F811
    hub = world.hub
    hub.sync()
    assert hub_group_members(hub, "acme.ml") == {"alice"}
    assert hub_group_members(hub, "acme") >= {"ada", "alice"}
    assert hub_group_members(hub, "globex.lab") == {"gina"}
    props = hub.hub_call("GET", "groups/acme.ml").json()["properties"]
    assert props == {"hubgrid": "project"}


def test_superadmin_is_hub_admin_and_users_are_not(world):  # noqa: F811
    hub = world.hub
    hub.token("alice")
    assert hub.hub_call("GET", "users/admin").json()["admin"] is True
    alice = hub.hub_call("GET", "users/alice").json()
    assert alice["admin"] is False
    assert set(alice["roles"]) == {"user", "hubgrid-user"}


def test_domain_admin_hub_role_is_filtered_to_their_domain(world):  # noqa: F811
    hub = world.hub
    hub.token("ada")
    ada = hub.hub_call("GET", "users/ada").json()
    assert "hubgrid-domain-admin-acme" in ada["roles"]
    seen = {u["name"] for u in hub.hub_call("GET", "users", user="ada").json()}
    assert {"ada", "alice"} <= seen and not seen & {"gina", "gus", "admin"}
    assert hub.hub_call("GET", "users/gina", user="ada").status_code in (403, 404)
    assert hub.hub_call("GET", "users/alice", user="ada").status_code == 200


def test_first_login_joins_the_default_domain(hub):  # noqa: F811
    name = "n" + uuid.uuid4().hex[:8]
    r = hub.login(name)
    assert r.status_code == 302, r.text[:500]
    user = hub.call("GET", f"users/{name}", "admin").json()
    assert user["domain"] == "default" and user["role"] == "user"
    assert eventually(lambda: name in (hub_group_members(hub, "default") or set()))


def test_wrong_password_is_refused_and_logged(hub):  # noqa: F811
    name = "w" + uuid.uuid4().hex[:8]
    r = hub.login(name, password="not-the-password")
    assert r.status_code == 403
    log = hub.call("GET", f"audit?user={name}&action=login", "admin").json()["entries"]
    assert [e["outcome"] for e in log] == ["failure"]
    assert hub.call("GET", f"users/{name}", "admin").status_code == 404


def test_inactive_user_is_refused_with_a_clear_message(world):  # noqa: F811
    hub = world.hub
    name = new_user(hub)
    assert hub.call("PATCH", f"users/{name}", "admin", json={"active": False}).status_code == 200
    r = hub.login(name)
    assert r.status_code == 403
    assert "deactivated" in r.text
    log = hub.call("GET", f"audit?user={name}&action=login", "admin").json()["entries"]
    assert log[0]["outcome"] == "denied"


def test_user_of_an_inactive_domain_is_refused(world):  # noqa: F811
    hub = world.hub
    domain = "f" + uuid.uuid4().hex[:8]
    assert hub.call("POST", "domains", "admin", json={"name": domain}).status_code == 201
    name = new_user(hub, domain=domain)
    assert hub.call("PATCH", f"domains/{domain}", "admin", json={"active": False}).status_code == 200
    r = hub.login(name)
    assert r.status_code == 403
    assert domain in r.text and "is deactivated" in r.text


def test_removing_a_member_is_reflected_in_the_hub_without_restart(world):  # noqa: F811
    hub = world.hub
    name = new_user(hub)
    assert hub.call("PUT", f"domains/acme/projects/ml/members/{name}", "ada").status_code == 201
    assert eventually(lambda: name in (hub_group_members(hub, "acme.ml") or set()))
    assert hub.call("DELETE", f"domains/acme/projects/ml/members/{name}", "ada").status_code == 204
    assert eventually(lambda: name not in hub_group_members(hub, "acme.ml"))


def test_deleting_a_project_deletes_its_hub_group(world):  # noqa: F811
    hub = world.hub
    assert hub.call("POST", "domains/acme/projects", "ada", json={"name": "tmp-grp"}).status_code == 201
    assert eventually(lambda: hub_group_members(hub, "acme.tmp-grp") is not None)
    assert hub.call("DELETE", "domains/acme/projects/tmp-grp", "ada").status_code == 204
    assert eventually(lambda: hub_group_members(hub, "acme.tmp-grp") is None)


def test_hand_edits_of_managed_groups_are_undone(world):  # noqa: F811
    hub = world.hub
    r = hub.hub_call("POST", "groups/acme.ml/users", json={"users": ["gina"]})
    assert r.status_code == 200
    assert "gina" in hub_group_members(hub, "acme.ml")
    hub.sync()
    assert "gina" not in hub_group_members(hub, "acme.ml")


def test_unmanaged_hub_groups_are_left_alone(world):  # noqa: F811
    hub = world.hub
    assert hub.hub_call("POST", "groups/handmade", json={"users": ["gina"]}).status_code == 201
    hub.sync()
    assert hub_group_members(hub, "handmade") == {"gina"}


def test_deactivation_ends_hub_sessions_and_tokens(world):  # noqa: F811
    hub = world.hub
    name = new_user(hub)
    token = hub.token(name)
    browser = hub.login(name).session
    headers = {"Authorization": f"token {token}"}
    import requests

    assert requests.get(hub.hub_api + "user", headers=headers, timeout=30).status_code == 200
    assert browser.get(hub.url + "/hub/home", allow_redirects=False).status_code == 200
    assert hub.call("PATCH", f"users/{name}", "admin", json={"active": False}).status_code == 200
    # the service refuses at once: 403 (a deactivated user) while the hub
    # still knows the token, 401 once the mirror revoked it there (the mirror
    # runs beside this call, so either may come first)
    assert hub.call("GET", "me", f"token {token}").status_code in (401, 403)
    assert eventually(
        lambda: requests.get(hub.hub_api + "user", headers=headers, timeout=30).status_code == 403
    )
    # and the browser session must log in again (refused) after the refresh age
    def logged_out():
        r = browser.get(hub.url + "/hub/home", allow_redirects=False)
        return r.status_code == 302 and "/hub/login" in r.headers["Location"]

    assert eventually(logged_out)


def test_role_change_reaches_the_hub_without_relogin(world):  # noqa: F811
    hub = world.hub
    name = new_user(hub)
    token = hub.token(name)
    assert hub.call("PATCH", f"users/{name}", "ada", json={"role": "domain-admin"}).status_code == 200
    import requests

    def promoted():
        requests.get(hub.hub_api + "user", headers={"Authorization": f"token {token}"}, timeout=30)
        return "hubgrid-domain-admin-acme" in hub.hub_call("GET", f"users/{name}").json()["roles"]

    assert eventually(promoted)


def test_domain_admin_cannot_escalate(world):  # noqa: F811
    hub = world.hub
    name = new_user(hub)
    r = hub.call("PATCH", f"users/{name}", "ada", json={"role": "superadmin"})
    assert r.status_code == 403 and "superadmin" in r.json()["message"]
    r = hub.call("PATCH", f"users/{name}", "ada", json={"domain": "globex"})
    assert r.status_code == 403
    r = hub.call("PATCH", "users/admin", "ada", json={"active": False})
    assert r.status_code == 404
    assert hub.call("GET", f"users/{name}", "admin").json()["role"] == "user"


def test_a_new_user_logs_in_and_gets_jupyterlab(hub):  # noqa: F811
    """The embedded demo as a new user meets it: log in, pick a project on the
    spawn form, get a running lab on an allocation that ends with it."""
    name = "lab" + uuid.uuid4().hex[:6]
    browser = hub.login(name).session
    form = browser.get(hub.url + "/hub/spawn", timeout=60)
    assert form.status_code == 200
    assert 'name="project"' in form.text and '<option value="default" selected>' in form.text
    r = browser.post(hub.url + "/hub/spawn", timeout=60, data={
        "project": "default", "resource_group": "default", "cpu": "1", "mem": "1G",
        "gpu": "0", "gpu_shares": "0", "_xsrf": browser.cookies.get("_xsrf")})
    assert r.status_code == 200

    def lab_up():
        r = browser.get(f"{hub.url}/user/{name}/lab", timeout=30)
        return r.status_code == 200 and "JupyterLab" in r.text

    def allocations(state):
        return hub.call("GET", f"allocations?user={name}&state={state}", "admin").json()

    try:
        assert eventually(lab_up, timeout=60, interval=1)
        held = allocations("allocated")
        assert len(held) == 1 and held[0]["slots"] == {"cpu": "1", "mem": str(2**30)}
        # a mirror pass keeps what a running server holds
        time.sleep(1.2)
        assert held[0]["id"] not in hub.sync()["released"]
        assert allocations("allocated") == held
        # the server holds it: releasing it by API would free what it still uses
        r = hub.call("DELETE", f"allocations/{held[0]['id']}", name)
        assert r.status_code == 409 and "stop the server" in r.json()["message"]
    finally:
        hub.hub_call("DELETE", f"users/{name}/server")
    assert eventually(lambda: len(allocations("released")) == 1)
    assert allocations("allocated") == []


def test_a_spawn_over_quota_is_refused_with_the_reason_and_leaves_nothing(hub):  # noqa: F811
    name = "big" + uuid.uuid4().hex[:6]
    assert hub.login(name).status_code == 302
    r = hub.hub_call("POST", f"users/{name}/server",
                     json={"user_options": {"project": "default", "cpu": "100000"}})
    assert r.status_code in (400, 403, 500), r.text
    assert "largest node" in r.text
    assert hub.call("GET", f"allocations?user={name}", "admin").json() == []
    r = hub.hub_call("POST", f"users/{name}/server", json={"user_options": {"cpu": "-1"}})
    assert r.status_code == 400 and "invalid options" in r.text
    r = hub.hub_call("POST", f"users/{name}/server", json={"user_options": {"colour": "red"}})
    assert r.status_code == 400 and "unknown option" in r.text


def test_a_server_that_dies_by_itself_gives_its_allocation_back(hub):  # noqa: F811
    import os
    import signal

    import psutil

    name = "die" + uuid.uuid4().hex[:6]
    assert hub.login(name).status_code == 302
    r = hub.hub_call("POST", f"users/{name}/server",
                     json={"user_options": {"cpu": "0.5", "mem": "512M"}})
    assert r.status_code in (201, 202), r.text

    def server_pid():
        for proc in psutil.process_iter(["cmdline", "environ"]):
            env = proc.info.get("environ") or {}
            if env.get("JUPYTERHUB_USER") == name:
                return proc.pid
        return None

    def allocations(state):
        return hub.call("GET", f"allocations?user={name}&state={state}", "admin").json()

    pid = eventually(server_pid, timeout=60)
    assert pid and eventually(lambda: len(allocations("allocated")) == 1)
    env = psutil.Process(pid).environ()
    assert env["HUBGRID_ALLOCATION"] == allocations("allocated")[0]["id"]
    assert env["HUBGRID_PROJECT"] == "default"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "void"  # no GPU allocated: none visible
    os.kill(pid, signal.SIGKILL)
    assert eventually(lambda: len(allocations("released")) == 1, timeout=30)
    assert allocations("allocated") == []


def test_an_allocation_no_hub_server_holds_is_released_by_the_reconciler(hub):  # noqa: F811
    name = "orph" + uuid.uuid4().hex[:6]
    assert hub.login(name).status_code == 302
    r = hub.internal("POST", "internal/allocations", json={
        "user": name, "project": "default", "resource_group": "default",
        "slots": {"cpu": "0.5", "mem": "256M"}})
    assert r.status_code == 201, r.text
    orphan = r.json()["id"]
    assert orphan not in hub.sync()["released"]  # younger than the grace period

    def released():
        a = hub.call("GET", f"allocations/{orphan}", "admin").json()
        return a if a["state"] == "released" else None

    # once past its grace, without asking: no server was seen holding it
    a = eventually(released, timeout=30)
    assert a and "reconciled" in a["release_reason"]
