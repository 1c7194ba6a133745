"""The hub's spawn and queue pages in a real headless Chromium, through the
REAL hub in Docker mode: the shared Docker hub (docker_fixtures.dock), whose
sessions are containers on the real engines. Fresh users A and B share a
fresh project and a fresh resource group of one node (1 CPU) on the first
engine, which A's Docker session fills (``crowd``: one session start for
the module):

- a domain admin in no project is told to create a project (a link to the
  console's Domains and Projects page), not to ask an admin, and the Start
  button is disabled with the reason;
- B's start from the spawn form waits in the queue (number 1 of 1); B's
  Cancel takes it out of the queue (cancelled, nothing started), the page
  confirms it, and the hub's progress events (every one the page received,
  recorded as they came) end failed, never "Server ready";
- a waiting page opened again after the queue moved shows the current
  place in its first paint (every text the page's progress line ever
  showed is recorded): the spawner's own long-poll has not seen the move
  (the request's state and reasons did not change);
- Start right after Stop: A's session stops slowly (its Jupyter server is
  held with SIGSTOP, so Docker's stop waits for it); the hub's stop-pending
  page says "stopping" while the stop runs and, once it is done, goes on to
  the spawn page, whose start starts the server again (A's Lab).

Screenshots (hub-spawn-domain-admin, hub-spawn-queued, hub-spawn-cancelled)
go to the test's temporary folder, or to $HUBGRID_SCREENSHOTS.
Without Chromium, playwright or the Docker engines these skip, and fail in
CI (``CI=true``).
"""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from docker_fixtures import HOSTS, IMAGE, held
from hub_fixtures import _ok
from session_fixtures import allocations, eventually, hub_log, server_of, spawn, wait_ready
from ui_fixtures import SLOW, chromium, screenshot, stop_servers  # noqa: F401

#: A's session that fills the group (stopped and started again by the last test)
FILLER = "filler"

#: installed in every page of the queue tests before its own scripts: each
#: progress event the page receives (its EventSource) and each text its
#: progress line shows, handed to the test as they come (they survive a
#: navigation of the page)
RECORDER = """(() => {
  const Native = window.EventSource;
  window.EventSource = function (url, init) {
    const source = new Native(url, init);
    source.addEventListener("message", e => window.hgRecord("event", e.data));
    return source;
  };
  window.EventSource.prototype = Native.prototype;
  Object.assign(window.EventSource, {CONNECTING: 0, OPEN: 1, CLOSED: 2});
  let last = "";
  new MutationObserver(() => {
    const line = document.getElementById("progress-message");
    const text = line ? line.textContent.trim() : "";
    if (text && text !== last) {
      last = text;
      window.hgRecord("shown", text);
    }
  }).observe(document, {childList: true, subtree: true, characterData: true});
})();"""

#: run in a session's container: SIGSTOP or SIGCONT (argv[1]) to its Jupyter
#: server, the child of the container's init (tini)
SIGNAL_SERVER = """import os, signal, sys
def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[1]
servers = [int(p) for p in os.listdir("/proc") if p.isdigit() and p != "1" and parent(p) == "1"]
assert len(servers) == 1, servers
os.kill(servers[0], getattr(signal, sys.argv[1]))
print(servers[0])"""


@pytest.fixture(scope="module")
def crowd(dock):
    """Fresh A and B in a fresh project of acme, and a fresh resource group of
    one node (1 CPU, on the hub's default engine) that A's Docker session
    ``FILLER`` fills: a start of B's there waits in the queue."""
    hub = dock.hub
    tag = uuid.uuid4().hex[:6]
    a, b, project, group = f"spa{tag}", f"spb{tag}", f"sp{tag}", f"full{tag}"
    _ok(hub.call("POST", "domains/acme/projects", "admin", json={"name": project}), 201)
    for user in (a, b):
        _ok(hub.call("POST", "users", "admin",
                     json={"name": user, "domain": "acme", "role": "user"}), 201)
        _ok(hub.call("PUT", f"domains/acme/projects/{project}/members/{user}", "admin"), 201)
    _ok(hub.call("POST", "resource-groups", "admin", json={"name": group}), 201)
    _ok(hub.call("PUT", f"resource-groups/{group}/grants", "admin",
                 json={"project": f"acme/{project}"}), 201)
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": f"{group}-1", "resource_group": group, "backend_url": HOSTS[0],
        "capacity": {"cpu": "1", "mem": "4G"}}), 201)
    try:
        r = spawn(hub, a, FILLER, project=project, resource_group=group, image=IMAGE,
                  cpu="1", mem="512M")
        assert r.status_code in (201, 202), r.text
        wait_ready(hub, a, FILLER, timeout=180)
        yield {"a": a, "b": b, "project": project, "group": group}
    finally:
        stop_servers(hub, (a, b))


def logged_in(chromium, hub, user: str, record: list | None = None):  # noqa: F811
    """(context, page) of ``user``, logged in through the hub's form; with
    ``record``, the page appends (kind, text) of every progress event and
    progress line to it (``RECORDER``)."""
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    if record is not None:
        recorder(page, record)
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.user_password)
    page.click("#login_submit")
    page.wait_for_url(lambda url: "/hub/login" not in url, timeout=SLOW)
    return context, page


def recorder(page, record: list) -> None:
    page.expose_function("hgRecord", lambda kind, text: record.append((kind, text)))
    page.add_init_script(RECORDER)


def events(record: list) -> list[dict]:
    return [json.loads(text) for kind, text in record if kind == "event"]


def until(page, check, what: str, timeout: float = SLOW / 1000):
    """Wait for ``check()`` while the page runs (its recorded calls come in
    only while playwright is called)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {timeout:g} s"
        page.wait_for_timeout(100)


def submit_start(page, hub, user: str, server: str, crowd: dict, cpu: str = "0.5") -> None:
    page.goto(f"{hub.url}/hub/spawn/{user}/{server}")
    page.select_option("#hg-project", crowd["project"])
    page.select_option("#hg-rg", crowd["group"])
    page.fill("#hg-cpu", cpu)
    page.fill("#hg-mem", "512M")
    page.get_by_role("button", name="Start").click()


def wait_for_place(page, hub, place: str) -> str:
    """The progress line once it says ``place`` (e.g. 'number 1 of 1')."""
    message = page.locator("#progress-message")
    try:
        page.wait_for_function("([el, place]) => el.textContent.includes(place)",
                               arg=[message.element_handle(timeout=SLOW), place], timeout=SLOW)
    except Exception:
        pytest.fail(f"no {place!r} on {page.url}: {page.content()[:3000]}\n{hub_log(hub)}")
    return message.inner_text()


def end_pending(hub, user: str, server: str) -> None:
    hub.hub_call("DELETE", f"users/{user}/servers/{server}")
    assert eventually(lambda: server_of(hub, user, server) is None
                      or not server_of(hub, user, server)["pending"], timeout=60)


def test_a_domain_admin_in_no_project_is_told_to_create_one_and_start_is_disabled(
        dock, chromium, tmp_path):  # noqa: F811
    hub = dock.hub
    admin = f"spadm{uuid.uuid4().hex[:6]}"
    _ok(hub.call("POST", "users", "admin",
                 json={"name": admin, "domain": "acme", "role": "domain-admin"}), 201)
    context, page = logged_in(chromium, hub, admin)
    try:
        page.goto(f"{hub.url}/hub/spawn/{admin}")
        note = page.locator("#hg-no-project")
        note.wait_for(timeout=SLOW)
        text = " ".join(note.inner_text().split())
        assert "You administer acme: create a project and add yourself to it" in text, text
        assert "Ask an admin" not in text
        link = page.locator("#hg-console-projects")
        assert link.get_attribute("href") == "/services/hubgrid/console/#domains"
        start = page.locator("#spawn_form button[type=submit]")
        assert start.is_disabled() and "you are in no project" in start.inner_text()
        screenshot(page, "hub-spawn-domain-admin.png", tmp_path)
        link.click()
        page.wait_for_url("**/services/hubgrid/console/#domains", timeout=SLOW)
    finally:
        context.close()


def test_a_queued_start_cancelled_is_confirmed_and_never_reported_ready(
        dock, chromium, crowd, tmp_path):  # noqa: F811
    hub, b, group = dock.hub, crowd["b"], crowd["group"]
    record: list[tuple[str, str]] = []
    context, page = logged_in(chromium, hub, b, record)
    try:
        submit_start(page, hub, b, "queued", crowd)
        text = wait_for_place(page, hub, "in line")
        assert text.startswith(f"pending: in the queue of resource group {group}, number 1 of "
                               "1 in line, waiting for free capacity: "), text
        assert "cpu" in text, text
        assert page.locator("#hg-queue-note").is_visible()
        assert not page.locator("#stop-server-btn").is_visible()  # the stock one: default server
        [waiting] = allocations(hub, b, "pending", "queued")
        screenshot(page, "hub-spawn-queued.png", tmp_path)
        page.get_by_role("button", name="Cancel the start").click()
        # the stream's last event: failed, saying so; never "Server ready"
        until(page, lambda: any(e.get("failed") or e.get("ready") for e in events(record)),
              "last progress event")
        seen = events(record)
        assert not [e for e in seen if e.get("ready") or "Server ready" in e.get("message", "")], seen
        assert seen[-1]["failed"] and "cancelled" in seen[-1]["message"], seen
        confirmed = page.locator("#hg-cancelled")
        confirmed.wait_for(state="visible", timeout=SLOW)
        assert confirmed.inner_text().startswith(
            "Your queued start was cancelled: nothing was started."), confirmed.inner_text()
        assert not page.get_by_text("Your server is starting up.").is_visible()
        assert "spawn-pending" in page.url  # no reload towards a server that is not there
        screenshot(page, "hub-spawn-cancelled.png", tmp_path)
        assert eventually(lambda: server_of(hub, b, "queued") is None
                          or not server_of(hub, b, "queued")["pending"], timeout=60)
        [gone] = allocations(hub, b, server="queued")
        assert (gone["id"], gone["state"], gone["admitted_at"]) == (
            waiting["id"], "cancelled", None), gone
    finally:
        context.close()
        end_pending(hub, b, "queued")


def test_a_reopened_waiting_page_first_shows_the_current_place_in_the_queue(
        dock, chromium, crowd):  # noqa: F811
    hub, a, b, project, group = (dock.hub, crowd["a"], crowd["b"], crowd["project"],
                                 crowd["group"])
    ahead = _ok(hub.call("POST", "allocations", a, json={
        "project": project, "resource_group": group, "slots": {"cpu": "1", "mem": "1G"}}), 202)
    context, page = logged_in(chromium, hub, b)
    try:
        submit_start(page, hub, b, "place", crowd)
        wait_for_place(page, hub, "number 2 of 2")
        # B closes the page; meanwhile the one ahead leaves the queue
        page.close()
        assert hub.call("DELETE", f"allocations/{ahead['id']}", a).status_code in (200, 204)
        [mine] = allocations(hub, b, "pending", "place")
        record: list[tuple[str, str]] = []
        page = context.new_page()
        recorder(page, record)
        page.goto(f"{hub.url}/hub/spawn-pending/{b}/place")
        wait_for_place(page, hub, "in line")
        # what the page showed first, and the first place the hub sent
        shown = [text for kind, text in record if kind == "shown" and "in line" in text]
        assert "number 1 of 1 in line" in shown[0], shown
        sent = [e["message"] for e in events(record) if "in line" in e.get("message", "")]
        assert "number 1 of 1 in line" in sent[0], sent
        assert allocations(hub, b, "pending", "place")[0]["id"] == mine["id"]
    finally:
        context.close()
        end_pending(hub, b, "place")
        hub.call("DELETE", f"allocations/{ahead['id']}", a)
    [gone] = allocations(hub, b, server="place")
    assert gone["state"] == "cancelled", gone


def signal_server(dock, alloc_id: str, signal: str) -> None:
    url, container = dock.container(alloc_id)
    dock.exec(url, container["Id"], ["python3", "-c", SIGNAL_SERVER, signal])


def test_start_right_after_a_slow_stop_says_stopping_then_starts(
        dock, chromium, crowd):  # noqa: F811
    hub, a = dock.hub, crowd["a"]
    filler = held(hub, a, FILLER)["id"]
    context, page = logged_in(chromium, hub, a)
    pool = ThreadPoolExecutor(1)
    try:
        # the server ignores Docker's TERM while it is held: the stop runs on
        signal_server(dock, filler, "SIGSTOP")
        stopping = pool.submit(hub.hub_call, "DELETE", f"users/{a}/servers/{FILLER}", user=a)
        assert eventually(lambda: (server_of(hub, a, FILLER) or {}).get("pending") == "stop",
                          timeout=30), server_of(hub, a, FILLER)
        page.goto(f"{hub.url}/hub/spawn/{a}/{FILLER}")  # Start, while the stop runs
        note = page.locator("#hg-stopping")
        note.wait_for(timeout=10_000)  # in the page as served: no waiting for it
        assert note.inner_text().startswith("Your server is stopping; it starts again"), \
            note.inner_text()
        page.wait_for_timeout(1500)  # the page checks every second: it waits
        assert note.is_visible() and "/hub/spawn-pending/" in page.url, page.url
        assert server_of(hub, a, FILLER)["pending"] == "stop"
        signal_server(dock, filler, "SIGCONT")  # the server ends: the stop is done
        page.locator("#hg-project").wait_for(timeout=SLOW)  # on to the spawn form
        assert stopping.result(timeout=60).status_code in (202, 204)
        [old] = [x for x in allocations(hub, a, server=FILLER) if x["id"] == filler]
        assert old["state"] == "released", old
        page.select_option("#hg-project", crowd["project"])
        page.select_option("#hg-rg", crowd["group"])
        page.fill("#hg-cpu", "1")
        page.fill("#hg-mem", "512M")
        page.get_by_role("button", name="Start").click()
        page.wait_for_url(f"**/user/{a}/{FILLER}/**", timeout=SLOW)
        assert held(hub, a, FILLER)["id"] != filler
    finally:
        pool.shutdown(wait=True)
        context.close()
