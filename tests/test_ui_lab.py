"""The Lab extension's panels in a real headless Chromium (Debian's, driven by
Python playwright; no browser download), through the REAL hub, proxy and
service on the demo's local-process spawner (tests/hub_fixtures.py; the
browser fixtures are in tests/ui_fixtures.py).

Two fresh users of acme share a fresh project ``ui<hex>`` (limits cpu 8,
gpu.shares 2) on the world's ``acme-gpu`` group (declared A100s), each in a
browser context of their own (``lab_a``, ``lab_b``: Lab starts once per user):

- user A logs in through the hub's login form, starts the server from the
  spawn form and lands in Lab; the Summary panel shows A's levels with bars;
- A starts a named 0.5-GPU session from the Sessions panel's launcher (its
  dry-run verdict before starting): it shows up without a reload and the
  project's GPU bar reads 0.5 exactly;
- A stops a session from the Sessions panel while its start still waits
  for the server: it ends, with no error dialog;
- A follows a session's log from the Sessions panel: new lines arrive
  without a reload, a search finds one line, the download is the log;
- user B sees none of A's sessions and folders, and B's Lab forwarder
  refuses to act for A;
- A invites B (rw) to a folder from the Data panel; B sees the badge of a
  waiting invitation, accepts it and finds the folder (shared, rw); A sees B
  in the folder's shares;
- a folder named ``<img src=x onerror=alert(1)><script>alert(2)`` shows as
  text in the Data panel and no dialog fires (the service refuses '/' in a
  folder name, so ``</script>`` cannot be a folder's name);
- a file uploaded in a folder's file browser (the Data panel) finishes its
  upload, is listed, and the service holds its bytes;
- A opens a session's Details (history and use now), switches between the
  Interactive and Batch tabs, and stops two selected sessions with one question;
- the launcher and the hub's spawn form offer the same resource presets and
  start on the default one (which fits at once) (the queue's pages:
  tests/test_ui_spawn_pages.py, in Docker mode);

Screenshots (lab-summary, lab-launcher, lab-sessions, lab-session-log,
lab-session-detail, lab-sessions-stop-selected, lab-data-invitations,
lab-data-files) go to the test's temporary folder, or
to $HUBGRID_SCREENSHOTS: ``HUBGRID_SCREENSHOTS=docs/images`` refreshes the
docs' pictures.

Without Chromium or playwright these skip, and fail in CI (``CI=true``).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from hub_fixtures import hub, world  # noqa: F401
from session_fixtures import allocations, eventually, hub_log, server_of, wait_ready
from ui_fixtures import (SLOW, chromium, create_folder, fetch_in_page, folder_link,  # noqa: F401
                         folder_row, lab_a, lab_b, level_bar, people, refreshed_data_panel,
                         screenshot, show_panel)

pytestmark = [pytest.mark.hub, pytest.mark.parametrize("hub", ["sqlite"], indirect=True)]

#: a folder name that is HTML (the service refuses '/' in names, so no
#: closing tag: the <img> fires a dialog if any panel renders it as HTML)
HTML_NAME = "<img src=x onerror=alert(1)><script>alert(2)"

# -- 1. Summary --------------------------------------------------------------------------


def test_a_user_logs_in_starts_lab_and_sees_their_levels_with_bars(world, people, lab_a, tmp_path):  # noqa: F811
    page, _ = lab_a
    panel = show_panel(page, "jp-hubgrid-summary")
    project = people["project"]
    cpu = level_bar(panel, "project", project, "cpu")
    try:
        cpu.wait_for(timeout=SLOW)
    except Exception:
        pytest.fail(f"no project bars: {panel.inner_text()}\n{hub_log(world.hub)}")
    # the default server (0.5 CPU) counts against the project's limits, exactly
    gpu = level_bar(panel, "project", project, "gpu.shares")
    assert cpu.locator('[data-field="amount"]').inner_text().startswith("0.5 / 8"), panel.inner_text()
    assert gpu.locator('[data-field="amount"]').inner_text().startswith("0 / 2"), panel.inner_text()
    assert cpu.locator('[role="meter"]').get_attribute("aria-valuenow") is not None
    levels = panel.locator(".jp-hubgrid-level")
    kinds = {(levels.nth(i).get_attribute("data-level"), levels.nth(i).get_attribute("data-name"))
             for i in range(levels.count())}
    assert ("project", project) in kinds and ("domain", "acme") in kinds, kinds
    screenshot(page, "lab-summary.png", tmp_path)


# -- 2. a second session from the Sessions panel ---------------------------------------


def test_a_session_started_from_the_sessions_panel_shows_live_and_moves_the_summary(
        world, people, lab_a, tmp_path):  # noqa: F811
    page, _ = lab_a
    hub, a, project = world.hub, people["a"], people["project"]
    name = f"gpu-{uuid.uuid4().hex[:6]}"
    panel = show_panel(page, "jp-hubgrid-sessions")
    panel.locator(".jp-hubgrid-session").first.wait_for(timeout=SLOW)
    try:
        panel.locator(".jp-hubgrid-header").get_by_role("button", name="New").click()
        dialog = page.locator(".jp-Dialog")
        dialog.locator('input[name="name"]').wait_for(timeout=SLOW)
        dialog.locator('input[name="name"]').fill(name)
        dialog.locator('select[name="project"]').select_option(project)
        dialog.locator('select[name="group"]').select_option("acme-gpu")
        dialog.locator('input[name="cpu"]').fill("0.5")
        dialog.locator('input[name="mem"]').fill("512M")
        dialog.locator('select[name="gpuMode"]').select_option("shares")
        dialog.locator('input[name="gpu"]').fill("0.5")
        dialog.locator('[data-verdict="fits"]').wait_for(timeout=SLOW)
        screenshot(page, "lab-launcher.png", tmp_path)
        dialog.locator(".jp-mod-accept").click()
        dialog.wait_for(state="detached", timeout=SLOW)

        # live: the new row shows, then runs, without a reload
        row = panel.locator(f'.jp-hubgrid-session[data-name="{name}"]')
        row.wait_for(timeout=SLOW)
        page.wait_for_selector(f'#jp-hubgrid-sessions .jp-hubgrid-session[data-name="{name}"]'
                               f'[data-state="allocated"]', timeout=SLOW)
        sizes = row.locator('[data-field="sizes"]').inner_text()
        assert "CPU 0.5" in sizes and "0.5" in sizes.split("GPU", 1)[1], sizes
        assert row.locator('[data-field="project"]').inner_text() == project
        screenshot(page, "lab-sessions.png", tmp_path)

        # the Summary: two sessions of 0.5 CPU and one 0.5 GPU share, exactly
        summary = show_panel(page, "jp-hubgrid-summary")
        gpu = level_bar(summary, "project", project, "gpu.shares").locator('[data-field="amount"]')
        cpu = level_bar(summary, "project", project, "cpu").locator('[data-field="amount"]')
        page.wait_for_function(
            "([el, want]) => el && el.textContent.startsWith(want)",
            arg=[gpu.element_handle(timeout=SLOW), "0.5 / 2"], timeout=SLOW)
        assert gpu.inner_text().startswith("0.5 / 2"), gpu.inner_text()
        assert cpu.inner_text().startswith("1 / 8"), cpu.inner_text()
        # ... and the GPU map: the device holding the share says so, visibly
        taken = summary.locator('.jp-hubgrid-gpu [data-field="taken"]', has_text="0.5").first
        taken.wait_for(timeout=SLOW)
        tile = taken.locator("xpath=ancestor::li[1]").bounding_box()
        box = taken.bounding_box()
        assert box["y"] + box["height"] <= tile["y"] + tile["height"] + 0.5, (box, tile)
        assert box["x"] + box["width"] <= tile["x"] + tile["width"] + 0.5, (box, tile)
        # the hub's own stop (below) of a server still starting may fail (500,
        # "pending spawn"; the Lab's hub door waits that out, tests/test_lab_hubroutes.py)
        wait_ready(hub, a, name)
    finally:
        if server_of(hub, a, name) is not None:
            hub.hub_call("DELETE", f"users/{a}/servers/{name}")
            assert eventually(lambda: server_of(hub, a, name) is None, timeout=60), hub_log(hub)


def is_call(method: str, user: str, server: str):
    """A response predicate: ``method`` on the hub door's ``users/<user>/servers/<server>``."""
    path = f"/hubgrid/hub/users/{user}/servers/{server}"
    return lambda r: r.request.method == method and r.url.split("?")[0].endswith(path)


def test_a_session_stopped_while_it_starts_ends_without_an_error_dialog(world, people, lab_a):  # noqa: F811
    """Stop from the Sessions panel while the launcher's start still waits for
    the server: the hub cancels the start, or (a loaded machine) the stop waits
    for it to end; either way the session ends and no "Internal Server Error"
    (nor any other error) shows."""
    page, dialogs = lab_a
    hub, a, project = world.hub, people["a"], people["project"]
    name = f"quick-{uuid.uuid4().hex[:6]}"
    panel = show_panel(page, "jp-hubgrid-sessions")
    try:
        panel.locator(".jp-hubgrid-header").get_by_role("button", name="New").click()
        launcher = page.locator(".jp-Dialog", has=page.locator('input[name="name"]'))
        launcher.locator('input[name="name"]').fill(name)
        launcher.locator('select[name="project"]').select_option(project)
        launcher.locator('select[name="group"]').select_option("acme-gpu")
        launcher.locator('input[name="cpu"]').fill("0.5")
        launcher.locator('input[name="mem"]').fill("512M")
        launcher.locator('[data-verdict="fits"]').wait_for(timeout=SLOW)
        with page.expect_response(is_call("POST", a, name), timeout=SLOW) as started:
            launcher.locator(".jp-mod-accept").click()
            launcher.wait_for(state="detached", timeout=SLOW)
            panel.locator(".jp-hubgrid-header").get_by_role("button", name="Read again").click()
            row = panel.locator(f'.jp-hubgrid-session[data-name="{name}"]')
            row.get_by_role("button", name=re.compile("^(Stop|Cancel)$")).click(timeout=SLOW)
            confirm = page.locator(".jp-Dialog", has_text=f"session {name}?")
            with page.expect_response(is_call("DELETE", a, name), timeout=SLOW) as stopped:
                confirm.locator(".jp-mod-warn").click()
        assert started.value.status in (201, 202, 409), started.value.text()
        assert stopped.value.status in (202, 204), stopped.value.text()
        ended = panel.get_by_role("list", name="ended sessions")
        ended.locator(f'.jp-hubgrid-session[data-name="{name}"][data-state="released"]'
                      ).wait_for(timeout=SLOW)
        # the panel reads the newest ended ones only, and says how many there are
        count = int(hub.call("GET", "allocations?state=released,cancelled&limit=1", a
                             ).headers["X-Total-Count"])
        panel.get_by_role("heading", name=f"Ended ({count})").wait_for(timeout=SLOW)
        assert page.locator(".jp-Dialog").count() == 0, page.locator(".jp-Dialog").all_inner_texts()
        assert panel.locator(f'[data-failed="{name}"]').count() == 0, panel.inner_text()
        assert dialogs == [], dialogs
    finally:
        if server_of(hub, a, name) is not None:
            hub.hub_call("DELETE", f"users/{a}/servers/{name}")  # `people` waits for the end


# -- 3. a session's log, followed -------------------------------------------------------


def test_a_sessions_log_is_followed_searched_and_downloaded_from_the_sessions_panel(
        world, people, lab_a, tmp_path):  # noqa: F811
    """A's running server, whose output grows while A follows its log: besides
    the server's own output (which the spawner sends), the test appends
    numbered lines the way the spawner sends a session's output
    (``internal/allocations/{id}/logs``), at moments it chooses."""
    page, dialogs = lab_a
    hub, a = world.hub, people["a"]
    [alloc] = [x for x in allocations(hub, a, state="allocated") if not x.get("server_name")]

    def output(first: int, last: int) -> None:
        lines = "".join(f"tick {i:04d}\n" for i in range(first, last + 1)).encode()
        r = hub.internal("POST", f"internal/allocations/{alloc['id']}/logs", data=lines)
        assert r.status_code == 200, r.text

    output(1, 3)
    panel = show_panel(page, "jp-hubgrid-sessions")
    panel.locator(".jp-hubgrid-header").get_by_role("button", name="Read again").click()
    row = panel.locator(f'.jp-hubgrid-session[data-session="{alloc["id"]}"]')
    row.wait_for(timeout=SLOW)
    page.evaluate("window.hubgridNoReload = true")
    reads = []  # the log's reads: the first its tail, then each from where the last ended

    def log_read(request) -> None:
        if f"allocations/{alloc['id']}/logs" in request.url:
            query = request.url.partition("/logs?")[2]  # without Lab's cache-busting number
            reads.append("&".join(q for q in query.split("&") if "=" in q))

    page.on("request", log_read)
    row.get_by_role("button", name="Log").click()
    log = page.locator(f'#jp-hubgrid-log-{alloc["id"]}')
    lines = log.locator(".jp-hubgrid-log-lines")
    lines.get_by_text("tick 0003").wait_for(timeout=SLOW)
    assert log.get_by_role("checkbox", name="Follow").is_checked()
    assert "following" in log.locator('[data-field="status"]').inner_text()

    # new output shows while following, without a reload
    output(4, 40)
    lines.get_by_text("tick 0040").wait_for(timeout=SLOW)
    assert page.evaluate("window.hubgridNoReload") is True
    ticks = re.findall(r"tick (\d{4})", lines.inner_text())
    assert ticks == [f"{i:04d}" for i in range(1, 41)], ticks
    page.remove_listener("request", log_read)
    assert reads[0] == f"tail={1 << 20}" and len(reads) > 1, reads
    offsets = [int(q.removeprefix("offset=")) for q in reads[1:]]
    assert offsets == sorted(offsets) and offsets[-1] > 0, reads
    screenshot(page, "lab-session-log.png", tmp_path)

    # a search shows the one matching line, marked
    search = log.get_by_role("searchbox", name="Search the log")
    search.fill("tick 0002")
    log.locator(".jp-hubgrid-log-line mark").first.wait_for(timeout=SLOW)
    assert log.locator(".jp-hubgrid-log-line").count() == 1
    assert log.locator(".jp-hubgrid-log-line mark").inner_text() == "tick 0002"
    matches = log.locator('[data-field="matches"]').inner_text()
    assert re.match(r"1 matches in 1 of \d+ lines", matches), matches
    search.fill("")

    # the download is the whole log, named after the session
    with page.expect_download(timeout=SLOW) as download:
        log.get_by_role("button", name="Download").click()
    got = download.value
    assert got.suggested_filename.endswith(f"-{alloc['id'][:8]}.log"), got.suggested_filename
    text = Path(got.path()).read_text(encoding="utf-8")
    assert re.findall(r"tick (\d{4})", text) == [f"{i:04d}" for i in range(1, 41)], text[-300:]
    # ... as the service holds it (which may have grown since: the server's output)
    held = hub.call("GET", f"allocations/{alloc['id']}/logs", a)
    assert held.status_code == 200 and held.text.startswith(text), held.text[:300]
    assert dialogs == [], dialogs
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
    log.wait_for(state="detached", timeout=SLOW)


def test_a_sessions_detail_view_its_tabs_and_several_stopped_at_once(
        world, people, lab_a, tmp_path):  # noqa: F811
    """The Sessions panel's Details of A's running server: its history (asked
    for, admitted on its node) and its use now, from the service's history and
    usage; the Batch tab shows A's batch session and not the interactive ones;
    two sessions selected are stopped with one question."""
    page, dialogs = lab_a
    hub, a, project = world.hub, people["a"], people["project"]
    [alloc] = [x for x in allocations(hub, a, state="allocated") if not x.get("server_name")]

    def api_session(**fields) -> dict:
        r = hub.call("POST", "allocations", a, json={
            "project": project, "resource_group": "acme-gpu", "slots": {"cpu": "0.1"}, **fields})
        assert r.status_code == 201, r.text
        return r.json()

    one, two = api_session(), api_session()
    batch = api_session(session_type="batch", command="sleep 1")
    try:
        panel = show_panel(page, "jp-hubgrid-sessions")
        panel.locator(".jp-hubgrid-header").get_by_role("button", name="Read again").click()
        row = panel.locator(f'.jp-hubgrid-session[data-session="{alloc["id"]}"]')
        row.wait_for(timeout=SLOW)
        row.get_by_role("button", name="Details").click()
        detail = page.locator(f'#jp-hubgrid-detail-{alloc["id"]}')
        history = detail.get_by_role("list", name="history")
        history.locator('li[data-event="admitted"]').wait_for(timeout=SLOW)
        events = history.locator("li").evaluate_all("els => els.map(e => e.dataset.event)")
        assert events[:2] == ["requested", "admitted"], events
        asked = history.locator('li[data-event="requested"] [data-field="text"]').inner_text()
        assert re.search(r"CPU 0\.5 · Mem \d+(\.\d+)? (MiB|GiB) ·", asked), asked  # binary units
        assert alloc["node"] in history.locator('li[data-event="admitted"]').inner_text()
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$",
                        history.locator(".jp-hubgrid-history-time").first.inner_text())
        # the local demo reads no use (no utilization rule): the view says why
        note = detail.locator('[data-field="usage-note"]')
        note.wait_for(timeout=SLOW)
        assert note.inner_text() == hub.call(
            "GET", f"allocations/{alloc['id']}/usage", a).json()["note"]
        assert "Session:" in page.locator(".lm-DockPanel-tabBar .lm-mod-current").inner_text()
        screenshot(page, "lab-session-detail.png", tmp_path)
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
        detail.wait_for(state="detached", timeout=SLOW)

        # the tabs: batch sessions on their own
        panel.get_by_role("tab", name=re.compile("^Batch")).click()
        panel.locator(f'.jp-hubgrid-session[data-session="{batch["id"]}"]').wait_for(timeout=SLOW)
        assert panel.locator(f'.jp-hubgrid-session[data-session="{one["id"]}"]').count() == 0
        panel.get_by_role("tab", name=re.compile("^Interactive")).click()
        first = panel.locator(f'.jp-hubgrid-session[data-session="{one["id"]}"]')
        first.wait_for(timeout=SLOW)
        assert panel.locator(f'.jp-hubgrid-session[data-session="{batch["id"]}"]').count() == 0

        # two selected, one question, both stopped; the rest run on
        for s in (one, two):
            panel.locator(f'.jp-hubgrid-session[data-session="{s["id"]}"] input.jp-hubgrid-select').check()
        panel.get_by_role("button", name="Stop selected (2)").click()
        dialog = page.locator(".jp-Dialog")
        assert dialog.locator(".jp-Dialog-header").inner_text() == "Stop 2 running sessions?"
        screenshot(page, "lab-sessions-stop-selected.png", tmp_path)
        dialog.get_by_role("button", name="Stop").click()
        dialog.wait_for(state="detached", timeout=SLOW)
        assert eventually(lambda: [hub.call("GET", f"allocations/{s['id']}", a).json()["state"]
                                   for s in (one, two)] == ["released", "released"], timeout=60)
        assert hub.call("GET", f"allocations/{alloc['id']}", a).json()["state"] == "allocated"
        assert dialogs == [], dialogs
    finally:
        for s in (one, two, batch):
            hub.call("DELETE", f"allocations/{s['id']}", a)


# -- 4. one user never sees another's ---------------------------------------------------


def test_another_user_sees_none_of_their_sessions_or_folders(world, people, lab_a, lab_b):  # noqa: F811
    hub, a, b = world.hub, people["a"], people["b"]
    page, _ = lab_b
    tag = uuid.uuid4().hex[:6]
    mine = create_folder(hub, a, f"a-private-{tag}")
    theirs = create_folder(hub, b, f"b-own-{tag}")
    a_sessions = {str(x["id"]) for x in hub.call("GET", f"allocations?user={a}", "admin").json()}
    assert a_sessions, "A has sessions (the default server at least)"

    sessions = show_panel(page, "jp-hubgrid-sessions")
    sessions.locator('.jp-hubgrid-session[data-state="allocated"]').first.wait_for(timeout=SLOW)
    shown = set(sessions.locator(".jp-hubgrid-session").evaluate_all(
        "els => els.map(e => e.dataset.session)"))
    assert shown and not shown & a_sessions, (shown, a_sessions)
    assert a not in sessions.inner_text()

    data = refreshed_data_panel(page)
    folder_link(data, theirs).wait_for(timeout=SLOW)
    assert folder_link(data, mine).count() == 0
    assert mine["name"] not in data.inner_text() and a not in data.inner_text()

    # B's forwarder acts as B only: A's folder is not B's to read
    r = fetch_in_page(page, f"/user/{b}/hubgrid/api/vfolders/{mine['id']}")
    assert r["status"] in (403, 404), r
    assert mine["name"] not in r["body"], r
    r = fetch_in_page(page, f"/user/{b}/hubgrid/api/me")
    assert r["status"] == 200 and f'"name": "{b}"' in r["body"].replace('":"', '": "'), r
    # ...and A's server (with A's forwarder) is not B's to reach
    r = fetch_in_page(page, f"/user/{a}/hubgrid/api/me")
    assert r["status"] == 403, r
    assert f'"name": "{a}"' not in r["body"].replace('":"', '": "'), r


# -- 5. an invitation, accepted in the other user's browser ---------------------------


def test_an_invitation_sent_from_the_data_panel_is_accepted_in_the_invitees_own_browser(
        world, people, lab_a, lab_b, tmp_path):  # noqa: F811
    hub, a, b = world.hub, people["a"], people["b"]
    (page_a, dialogs_a), (page_b, dialogs_b) = lab_a, lab_b
    folder = create_folder(hub, a, f"team-{uuid.uuid4().hex[:6]}")
    share_button = f"Share {folder['name']}"

    # A invites B (rw) from the folder's Share button
    data_a = refreshed_data_panel(page_a)
    folder_row(data_a, folder).get_by_role("button", name=share_button).click()
    sharing = page_a.locator(".jp-Dialog", has=page_a.locator(".jp-hubgrid-data-shares"))
    sharing.get_by_text("Nobody yet.").wait_for(timeout=SLOW)
    sharing.locator(".jp-mod-accept").click()  # Invite…
    form = page_a.locator(".jp-Dialog", has=page_a.locator('input[name="user"]'))
    form.locator('input[name="user"]').fill(b)
    form.locator('select[name="permission"]').select_option("rw")
    form.locator(".jp-mod-accept").click()
    form.wait_for(state="detached", timeout=SLOW)
    sent = eventually(lambda: [i for i in hub.call("GET", "invitations?direction=received", b).json()
                               if i["folder"] == folder["id"]], timeout=30)
    assert sent, page_a.locator(".jp-Dialog").all_inner_texts()
    assert (sent[0]["inviter"], sent[0]["permission"], sent[0]["state"]) == (a, "rw", "pending")

    # B: the Data tab's badge and the Invitations tab's say one invitation waits
    data_b = refreshed_data_panel(page_b)
    badged = page_b.locator('.jp-SideBar .lm-TabBar-tab[data-id="jp-hubgrid-data"][data-hubgrid-badge]')
    badged.wait_for(timeout=SLOW)
    assert badged.get_attribute("data-hubgrid-badge") == "1"
    invitations = data_b.get_by_role("tab", name=re.compile("^Invitations"))
    assert invitations.locator(".jp-hubgrid-badge").get_attribute("aria-label") == "1 waiting"
    invitations.click()
    waiting = data_b.locator(".jp-hubgrid-data-invitation", has_text=folder["name"])
    waiting.wait_for(timeout=SLOW)
    assert f"from {a} · rw" in waiting.inner_text()
    screenshot(page_b, "lab-data-invitations.png", tmp_path)

    # B accepts: the badge goes, and the folder is B's to use (shared by A, rw)
    waiting.get_by_role("button", name="Accept").click()
    page_b.locator('.jp-SideBar .lm-TabBar-tab[data-id="jp-hubgrid-data"]'
                   ':not([data-hubgrid-badge])').wait_for(timeout=SLOW)
    data_b.get_by_role("tab", name="Folders").click()
    row = folder_row(data_b, folder)
    row.wait_for(timeout=SLOW)
    assert f"shared by {a}" in row.inner_text()
    assert row.locator("td").nth(1).inner_text() == "rw"

    # A sees B among the folder's shares, and no longer among those invited
    # (the dialog lists the invitations A's Data panel read last: read again)
    data_a = refreshed_data_panel(page_a)
    folder_row(data_a, folder).get_by_role("button", name=share_button).click()
    shared_with, invited = (sharing.locator(".jp-hubgrid-data-shares ul").nth(i) for i in (0, 1))
    share = shared_with.locator("li", has_text=b)
    share.wait_for(timeout=SLOW)
    assert "rw" in share.inner_text()
    invited.locator("li", has_text=b).wait_for(state="detached", timeout=SLOW)
    sharing.get_by_role("button", name="Close").click()
    sharing.wait_for(state="detached", timeout=SLOW)
    assert dialogs_a == [] and dialogs_b == [], (dialogs_a, dialogs_b)


# -- 6. names are text ------------------------------------------------------------------


def test_a_folder_named_like_html_renders_as_text_in_the_data_panel(world, people, lab_a):  # noqa: F811
    page, dialogs = lab_a
    folder = create_folder(world.hub, people["a"], HTML_NAME)
    assert folder["name"] == HTML_NAME
    panel = refreshed_data_panel(page)
    link = folder_link(panel, folder)
    link.wait_for(timeout=SLOW)
    assert link.text_content() == HTML_NAME
    assert panel.locator('img[src="x"]').count() == 0 and panel.locator("script").count() == 0
    assert dialogs == [], dialogs


# -- 7. files ---------------------------------------------------------------------------


def test_a_file_uploaded_in_the_data_panel_is_listed_and_stored(world, people, lab_a,  # noqa: F811
                                                               tmp_path):
    page, dialogs = lab_a
    hub, a = world.hub, people["a"]
    folder = create_folder(hub, a, f"up-{uuid.uuid4().hex[:6]}")
    panel = refreshed_data_panel(page)
    link = folder_link(panel, folder)
    link.wait_for(timeout=SLOW)
    link.click()
    files = page.locator(".jp-hubgrid-files:visible")
    files.locator('table[aria-label="files"]').wait_for(timeout=SLOW)
    content = b"hello from the browser\n" * 1000
    files.locator('input[aria-label="files to upload"]').set_input_files(
        files=[{"name": "hello.txt", "mimeType": "text/plain", "buffer": content}])
    page.locator('[data-upload$="hello.txt"][data-phase="done"]').wait_for(timeout=SLOW)
    assert page.locator('progress[aria-label$="hello.txt"]').count() >= 1
    files.locator('tr[data-entry="hello.txt"][data-type="file"]').wait_for(timeout=SLOW)
    screenshot(page, "lab-data-files.png", tmp_path)
    r = hub.call("GET", f"vfolders/{folder['id']}/download?path=hello.txt", a)
    assert r.status_code == 200 and r.content == content, (r.status_code, r.text[:200])
    # downloaded in the browser through a one-use ticket: no credential in any URL
    urls: list[str] = []
    page.on("request", lambda req: urls.append(req.url))
    with page.expect_download(timeout=SLOW) as download:
        files.get_by_role("button", name="Download hello.txt").click()
    assert Path(download.value.path()).read_bytes() == content
    assert download.value.suggested_filename == "hello.txt"
    assert "/hubgrid/download/" in download.value.url, download.value.url
    assert not any("token" in u.partition("?")[2] for u in urls + [download.value.url]), urls
    # a directory opened with a double click opens once (its link is built from the
    # listing shown, not the directory asked for): sub, never sub/sub
    r = hub.call("POST", f"vfolders/{folder['id']}/mkdir", a, json={"path": "sub"})
    assert r.status_code == 201, r.text
    files.get_by_role("button", name="Refresh").click()
    files.locator('tr[data-entry="sub"] a').dblclick()
    files.locator(".jp-hubgrid-data-empty").wait_for(timeout=SLOW)  # sub is empty
    assert "sub/sub" not in files.inner_text() and "no such" not in files.inner_text()
    assert dialogs == [], dialogs


# -- the sizes ----------------------------------


def preset_choice(select) -> tuple[str, list[str]]:
    """(the chosen option's value, every option's value) of a preset select."""
    values = select.locator("option").evaluate_all("os => os.map(o => o.value)")
    return select.input_value(), values


def test_the_launcher_and_the_spawn_form_offer_the_same_presets_and_start_on_the_default(
        world, people, lab_a, tmp_path):  # noqa: F811
    """One source of sizes: the service's resource presets (the demo's: small,
    the default, medium, large). The Lab launcher and the hub's spawn form
    list the same ones, both start on the default one's size, and that size
    fits at once (no "Would wait in the queue" as the first verdict)."""
    page, _ = lab_a
    hub, a = world.hub, people["a"]
    presets = hub.call("GET", "resource-presets", a).json()
    [default] = [p for p in presets if p["default"]]
    assert (default["name"], default["slots"]) == ("small", {"cpu": "0.5", "mem": str(2**30)})
    names = [p["name"] for p in presets] + [""]
    panel = show_panel(page, "jp-hubgrid-sessions")
    panel.locator(".jp-hubgrid-header").get_by_role("button", name="New").click()
    dialog = page.locator(".jp-Dialog")
    try:
        preset = dialog.locator('select[name="preset"]')
        preset.wait_for(timeout=SLOW)
        assert preset_choice(preset) == ("small", names)
        assert (dialog.locator('input[name="cpu"]').input_value(),
                dialog.locator('input[name="mem"]').input_value()) == ("0.5", "1G")
        dialog.locator('select[name="project"]').select_option(people["project"])
        dialog.locator('[data-verdict="fits"]').wait_for(timeout=SLOW)
        preset.select_option("large")
        assert (dialog.locator('input[name="cpu"]').input_value(),
                dialog.locator('input[name="mem"]').input_value()) == ("2", "4G")
        dialog.locator('input[name="cpu"]').fill("0.75")  # a size of one's own: custom
        assert preset.input_value() == ""
    finally:
        dialog.locator(".jp-mod-reject").click()
        dialog.wait_for(state="detached", timeout=SLOW)
    form = page.context.new_page()
    try:
        form.goto(f"{hub.url}/hub/spawn/{a}/sizes")
        preset = form.locator("#hg-preset")
        assert preset_choice(preset) == ("small", names)
        assert (form.input_value("#hg-cpu"), form.input_value("#hg-mem")) == ("0.5", "1G")
        preset.select_option("large")
        assert (form.input_value("#hg-cpu"), form.input_value("#hg-mem")) == ("2", "4G")
        form.fill("#hg-mem", "3G")
        assert preset.input_value() == ""
    finally:
        form.close()
