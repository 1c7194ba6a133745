"""The reclaim of a Docker session as its owner sees it in an open Lab, in
headless Chromium through the REAL hub, proxy, service and Docker engine
(its own hub: the hub's proxy activity is read hourly, so only the Lab's
own reports and input count; the service passes every second; the
session reports its activity every 2 s):

- once the session is warned, a banner across the Lab counts down to the
  reclaim and offers "Keep it running"; clicking it is activity: the
  service withdraws the warning within seconds and the banner goes;
- warned again and left alone, the banner stays, counting down, until
  the session is stopped;
- the dialog that says it was reclaimed gives the final record's numbers
  (idle N s when it was stopped, of the policy's idle_timeout), the same
  as the access log's ``session.reclaim`` entry, and the real stop time:
  within seconds of the container's stop as Docker reports it (its "die"
  event; the spawner removes the container), not the
  warning's deadline; the warning's record keeps its own numbers.

Takes lab-reclaim-banner.png ($HUBGRID_SCREENSHOTS=docs/images for the docs).
"""

from __future__ import annotations

import datetime as dt
import re
import time
import uuid
from pathlib import Path

import docker
import pytest

from docker_fixtures import HOSTS, SERVICE_CONFIG, _engines, docker_hub
from hub_fixtures import _ok, require
from session_fixtures import eventually, hub_log, server_of, spawn, wait_ready
from ui_fixtures import CHROMIUM, CHROMIUM_ARGS, SLOW, screenshot, tab

USER = "rex"
SERVER = f"fin{uuid.uuid4().hex[:6]}"
#: warned half way (the lead's cap); the Sessions store reads at least every
#: 30 s, so the banner is up well before the deadline
IDLE = 80
WARNING = 40
POLICY = "uireclaimfinal"
BANNER = "#jp-hubgrid-reclaim-banner"


def utc(iso: str) -> dt.datetime:
    t = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def fin(tmp_path_factory):
    """A Docker hub of its own (the hub's proxy activity read hourly, the
    singleuser's own activity report too: only the session's reports and
    the Lab's input are activity within the test)."""
    config = ("c.HubgridDockerSpawner.pending_poll_interval = 0.5\nc.Spawner.poll_interval = 5\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n"
              "c.JupyterHub.last_activity_interval = 3600\n"
              "c.Spawner.environment.update({'JUPYTERHUB_ACTIVITY_INTERVAL': '3600'})\n"
              "c.Spawner.args.append('--HubgridLab.activity_interval=2')\n"
              "c.Spawner.args.append('--HubgridLab.reclaim_save_ahead=5')\n")
    engines = _engines()
    with docker_hub(tmp_path_factory.mktemp("reclaim-final-hub"), engines, config,
                    (("fin-a", HOSTS[0], 0),), SERVICE_CONFIG) as d:
        hub = d.hub
        _ok(hub.call("POST", "users", "admin", json={"name": USER, "domain": "acme",
                                                      "role": "user"}), 201)
        _ok(hub.call("PUT", f"domains/acme/projects/ml/members/{USER}", "admin"), 201)
        _ok(hub.call("POST", "resource-policies", "admin", json={
            "name": POLICY, "total_resource_slots": {"cpu": "4"}, "unspecified_limited": False,
            "idle_timeout": IDLE, "reclaim_warning": WARNING}), 201)
        yield d


@pytest.fixture(scope="module")
def lab(fin):
    """rex's Lab in a Docker session, open (and visible) in Chromium."""
    require("Chromium", Path(CHROMIUM).exists(), "bash scripts/install.sh (as root)")
    from playwright.sync_api import sync_playwright

    hub = fin.hub
    r = spawn(hub, USER, SERVER, project="ml", resource_group="dock",
              image="hubgrid/base:latest", cpu="0.5", mem="512M")
    assert r.status_code in (201, 202), r.text
    wait_ready(hub, USER, SERVER, timeout=180)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                      timezone_id="UTC")
        try:
            page = context.new_page()
            page.goto(f"{hub.url}/hub/login")
            page.fill("#username_input", USER)
            page.fill("#password_input", hub.user_password)
            page.click("#login_submit")
            page.wait_for_url("**/hub/**", timeout=SLOW)
            page.goto(f"{hub.url}/user/{USER}/{SERVER}/lab")
            tab(page, "jp-hubgrid-summary").wait_for(timeout=SLOW)
            yield page
        finally:
            context.close()
            browser.close()
            hub.hub_call("DELETE", f"users/{USER}/servers/{SERVER}")


def reclaim_of(hub, alloc_id: str):
    return hub.call("GET", f"allocations/{alloc_id}", USER).json().get("reclaim")


def test_the_banner_counts_down_keeps_on_activity_stays_until_the_stop_and_the_dialog_has_the_final_record(
        fin, lab, tmp_path):
    hub, page = fin.hub, lab
    alloc = next(a for a in hub.call("GET", f"allocations?user={USER}&state=allocated",
                                     USER).json() if a["server_name"] == SERVER)
    url, container = fin.container(alloc["id"])
    engine = fin.engines[url]
    banner = page.locator(BANNER)
    assert not banner.is_visible()
    _ok(hub.call("PATCH", f"users/{USER}", "admin", json={"resource_policy": POLICY}), 200)

    # warned: the banner is up before the deadline, with a countdown and the reason
    banner.wait_for(state="visible", timeout=(IDLE + 10) * 1000)
    notice = reclaim_of(hub, alloc["id"])
    assert notice and notice["rule"] == "idle", notice
    assert time.time() < utc(notice["deadline"]).timestamp(), "the banner came after the deadline"
    first = banner.inner_text()
    assert "This session will be reclaimed in " in first and "(idle)" in first, first
    assert f"idle_timeout is {IDLE} s" in first, first
    page.wait_for_timeout(2100)
    assert banner.inner_text() != first  # it counts down
    screenshot(page, "lab-reclaim-banner.png", tmp_path)

    # "Keep it running" is activity: the banner goes, the service withdraws the warning
    banner.get_by_role("button", name="Keep it running").click()
    banner.wait_for(state="hidden", timeout=5000)
    assert eventually(lambda: reclaim_of(hub, alloc["id"]) is None, timeout=15), \
        f"the warning was not withdrawn\n{hub_log(hub)}"

    # warned again and left alone: the banner stays until the session is stopped
    banner.wait_for(state="visible", timeout=(IDLE + 10) * 1000)
    gone_at = None
    watched_from = int(time.time()) - 1
    deadline = time.time() + IDLE + 60
    while time.time() < deadline:
        try:
            running = engine.inspect_container(container["Id"])["State"]["Running"]
        except docker.errors.NotFound:  # the spawner removes a stopped container
            running = False
        if not running:
            gone_at = time.time()
            break
        assert banner.is_visible(), "the banner went before the stop"
        time.sleep(0.5)
    assert gone_at is not None, f"not reclaimed\n{hub_log(hub)}"
    # when Docker says the container stopped (its "die" event)
    died = [e for e in engine.events(since=watched_from, until=int(time.time()) + 1, decode=True,
                                     filters={"container": container["Id"], "event": "die"})]
    assert died, "no die event"
    docker_stop = dt.datetime.fromtimestamp(died[0]["timeNano"] / 1e9, dt.timezone.utc)
    assert abs(docker_stop.timestamp() - gone_at) < 5, (died, gone_at)
    assert eventually(lambda: server_of(hub, USER, SERVER) is None, timeout=60), hub_log(hub)

    # the dialog: the final record, read from the service
    dialog = page.locator(".jp-Dialog", has_text="Your session was reclaimed")
    dialog.wait_for(timeout=90_000)
    text = dialog.inner_text()
    assert "Server unavailable" not in page.locator("body").inner_text()
    stopped = dialog.locator(".jp-hubgrid-reclaimed").get_attribute("data-hubgrid-stopped-at")
    assert stopped, text
    assert abs((utc(stopped) - docker_stop).total_seconds()) < 5, (stopped, docker_stop)
    assert f"stopped this session at {utc(stopped).strftime('%H:%M:%S')} (idle)" in text, text
    said = re.search(r"no activity for (\d+) s when it was stopped at", text)
    assert said and f"the policy's idle_timeout is {IDLE} s" in text, text
    idle = int(said.group(1))
    assert idle >= IDLE, text

    # the same numbers in the reclaim events and the access log; the warning keeps its own
    events = hub.call("GET", f"reclaim/events?allocation={alloc['id']}", USER).json()["events"]
    final = next(e for e in events if e["kind"] == "reclaimed")
    assert final["details"]["idle_seconds"] == idle and final["details"]["stopped_at"] == stopped
    warnings = [e for e in events if e["kind"] == "warning"]
    assert warnings and all(w["details"]["idle_seconds"] < IDLE for w in warnings), warnings
    log = hub.call("GET", f"audit?action=session.reclaim&target={alloc['id']}", "admin").json()
    entry = next(e for e in log["entries"] if e["outcome"] == "success")
    assert f"'idle_seconds': {idle}" in entry["detail"], entry
    assert f"no activity for {idle} s when it was stopped at" in entry["detail"], entry
    logged = utc(entry.get("timestamp") or entry["at"])
    assert abs((logged - docker_stop).total_seconds()) < 5, (entry, docker_stop)
    assert page.locator(BANNER).is_hidden()
