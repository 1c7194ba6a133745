"""The tenancy admin pages in a real headless Chromium through
the REAL hub, proxy and service (tests/ui_fixtures.py): one Lab start each
for the superadmin ``admin``, ``ada`` (acme's domain admin) and ``alice``
(a plain acme user), the three started side by side.

- admin, from the pages: creates a domain (told it may use no resource
  group yet, grants one from its page) and a project in it (its bars show
  the limits exactly), edits the project's limits (a 422 next to its field,
  then only the change sent: the bar shows the new limit), a resource policy (first with a value the service
  refuses: its 422 shows next to that field), a user in the new domain whose
  projects and policy are then set from the edit form, and adds users from a
  CSV file (one row created, one refused, each with its result); the access
  log, filtered, lists the creation and exports it as CSV;
- ada creates a user in acme; she may edit acme's projects but not acme
  itself (no Edit; the service answers 403); globex's users, domain and log
  entries are absent from her pages, and through her own Lab's forwarder the service
  answers 403/404 for globex's objects;
- alice never has a "hubgrid Admin" menu, not even for an instant (a
  MutationObserver installed before Lab loads watches the menu bar until Lab
  is restored), and every admin call the pages make answers 403 or 404
  through her forwarder; admin's and ada's menus list every admin page.

The console's tests (tests/ui_console_checks.py: the same pages as a page of
the service, for a domain admin in no project, with no server) run here too,
first, on the same hub.

Screenshots lab-admin-domains.png, lab-admin-policies.png, lab-admin-users.png
and lab-admin-audit.png (into $HUBGRID_SCREENSHOTS, e.g. docs/images).
Without Chromium or playwright these skip, and fail in CI (``CI=true``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hub_fixtures import hub, world  # noqa: F401
from session_fixtures import eventually, hub_log
# the console's tests run here, on this module's hub: they need no Lab
from ui_console_checks import (test_console_a_domain_admin_with_no_project_administers_his_domain,  # noqa: F401
                               test_console_a_plain_user_finds_her_pages_and_no_admin_page,
                               test_console_the_hubs_admin_panel_links_it)
from ui_fixtures import (SLOW, _ok, chromium, in_lab, screenshot, show_panel, stop_servers,  # noqa: F401
                         submit_start, tab)

pytestmark = [pytest.mark.hub, pytest.mark.parametrize("hub", ["sqlite"], indirect=True)]

MENU = "hubgrid Admin"
API = "hubgrid/api/"
#: every admin page, in the menu's order (both plugins' pages)
PAGES = ["Users", "Domains and Projects", "Resource Policies", "Resource Groups and Nodes",
         "Scheduler Queue", "Sessions (All)", "Images", "Access Log"]
#: installed before any page script runs: every menu bar label ever shown (even
#: one added and removed at once) and whether the Lab's ``GET me`` has answered
MENU_WATCH = """(() => {
  const labels = window.__hubgridMenuLabels = new Set();
  window.__hubgridMeAnswered = false;
  const note = el => { if (el && el.textContent) labels.add(el.textContent); };
  new MutationObserver(records => {
    for (const r of records) {
      const at = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      note(at && at.closest && at.closest('.lm-MenuBar-itemLabel'));
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1) continue;
        if (n.matches('.lm-MenuBar-itemLabel')) note(n);
        n.querySelectorAll('.lm-MenuBar-itemLabel').forEach(note);
      }
    }
  }).observe(document, {childList: true, subtree: true, characterData: true});
  new PerformanceObserver(list => {
    if (list.getEntries().some(e => e.name.includes('/hubgrid/api/me?') || e.name.endsWith('/hubgrid/api/me'))) {
      window.__hubgridMeAnswered = true;
    }
  }).observe({type: 'resource', buffered: true});
})();"""


def _start(world, chromium, user: str, project: str, group: str):  # noqa: F811
    """``user``'s browser context, logged in, the server's start submitted
    (the three Labs start side by side). Returns (context, page)."""
    hub = world.hub
    context = chromium.new_context(viewport={"width": 1500, "height": 1100}, accept_downloads=True)
    page = context.new_page()
    page.add_init_script(MENU_WATCH)
    try:
        submit_start(page, hub, user, project, group)
    except Exception as e:
        context.close()
        pytest.fail(f"{user} could not start a server: {e}\n{hub_log(hub)}")
    return context, page


def _in_lab(world, user: str, page) -> None:
    try:
        in_lab(page, user)
    except Exception as e:
        pytest.fail(f"{user} did not get to Lab: {e}\n{hub_log(world.hub)}")


@pytest.fixture(scope="module")
def tag():
    return uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def labs(world, chromium, tag):  # noqa: F811
    """The Labs of admin, ada (in a fresh acme project) and alice: page per user."""
    hub = world.hub
    project = f"ten{tag}"
    _ok(hub.call("POST", "domains/acme/projects", "admin", json={"name": project}), 201)
    _ok(hub.call("PUT", f"domains/acme/projects/{project}/members/ada", "admin"), 201)
    wanted = {"admin": ("default", "default"), "ada": (project, "acme-gpu"),
              "alice": ("ml", "acme-gpu")}
    started = {}
    try:
        for user, (proj, group) in wanted.items():
            started[user] = _start(world, chromium, user, proj, group)
        for user, (_, page) in started.items():
            _in_lab(world, user, page)
        yield {user: page for user, (_, page) in started.items()}
    finally:
        for context, _ in started.values():
            context.close()
        stop_servers(hub, wanted)


@pytest.fixture(scope="module")
def admin_lab(labs):
    return labs["admin"]


@pytest.fixture(scope="module")
def ada_lab(labs):
    return labs["ada"]


@pytest.fixture(scope="module")
def alice_lab(labs):
    return labs["alice"]


def open_page(page, label: str, name: str):
    """A page from the hubgrid Admin menu: its frame."""
    page.locator(".lm-MenuBar-itemLabel", has_text=MENU).click()
    page.locator(".lm-Menu-itemLabel", has_text=label).click()
    frame = page.locator(f'#jp-hubgrid-admin-{name} .jp-hubgrid-admin[data-page="{name}"]')
    frame.wait_for(timeout=SLOW)
    return frame


def menu_items(page) -> list[str]:
    """The labels of the hubgrid Admin menu's items (opened, then closed)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=MENU).click()
    items = page.locator(".lm-Menu .lm-Menu-itemLabel")
    items.first.wait_for(timeout=SLOW)
    labels = items.all_inner_texts()
    page.keyboard.press("Escape")
    return labels


def menu_labels_seen(page) -> set[str]:
    """Every menu bar label MENU_WATCH saw since Lab loaded."""
    return set(page.evaluate("() => [...window.__hubgridMenuLabels]"))


def restored_with_panels(page) -> set[str]:
    """Wait until Lab is restored (its splash gone), the Lab's ``GET me`` has
    answered and the Summary panel, shown, has its figures; the menu bar
    labels MENU_WATCH saw meanwhile."""
    show_panel(page, "jp-hubgrid-summary")
    page.wait_for_function(
        """() => window.__hubgridMeAnswered && !document.getElementById('jupyterlab-splash')
               && document.querySelector('#jp-hubgrid-summary .jp-hubgrid-level')""",
        timeout=SLOW)
    return menu_labels_seen(page)


def call_in_page(page, method: str, path: str, body=None, content_type="application/json") -> dict:
    """``method`` hubgrid/api/``path`` from the page, as the admin pages call
    it (the forwarder adds the server owner's credential)."""
    return page.evaluate("""async ([url, method, body, type]) => {
        const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
        const init = {method, headers: {'X-XSRFToken': decodeURIComponent(xsrf)}};
        if (body !== null) { init.body = body; init.headers['Content-Type'] = type; }
        const r = await fetch(url, init);
        return {status: r.status, body: await r.text()};
    }""", [_lab_url(page) + API + path, method,
           None if body is None else (body if isinstance(body, str) else json.dumps(body)),
           content_type])


def _lab_url(page) -> str:
    url = page.url
    return url[:url.index("/lab") + 1]


def test_superadmin_creates_a_domain_project_policy_and_user_from_the_pages(
        world, admin_lab, tag, tmp_path):  # noqa: F811
    hub, page = world.hub, admin_lab
    domain, project, policy, user = f"d{tag}", f"p{tag}", f"pol{tag}", f"u{tag}"
    assert menu_items(page) == PAGES
    assert MENU in menu_labels_seen(page)  # the watch alice's test relies on sees the menu

    # a domain, then a project in it with limits: the bars show them exactly
    domains = open_page(page, "Domains and Projects", "domains")
    form = domains.locator('[data-form="create-domain"]')
    form.locator('input[name="domain-name"]').fill(domain)
    form.get_by_role("button", name="Create domain").click()
    domains.locator(f'li[data-domain="{domain}"]').wait_for(timeout=SLOW)
    detail = domains.locator(f'.jp-hubgrid-admin-domain[data-domain="{domain}"]')
    # a new domain may use no resource group: the page says so and grants one there
    note = detail.locator('[data-field="no-group"]')
    note.wait_for(timeout=SLOW)
    assert note.inner_text().startswith(f"No resource group is granted to {domain}: its users "
                                        "can start no session until one is.")
    assert "Resource Groups and Nodes page" in note.inner_text()
    grant = detail.locator('[data-form="grant-group"]')
    offered = grant.get_by_label("Resource group to grant").locator("option").all_inner_texts()
    assert "acme-gpu" in offered, offered
    grant.get_by_label("Resource group to grant").select_option("acme-gpu")
    grant.get_by_role("button", name=f"Grant to {domain}").click()
    groups = detail.locator('[data-field="resource-groups"]')
    assert eventually(lambda: "acme-gpu (the domain)" in groups.inner_text(), timeout=30), \
        groups.inner_text()
    assert note.count() == 0
    got = _ok(hub.call("GET", "resource-groups/acme-gpu", "admin"), 200)
    assert {"domain": domain} in got["grants"], got["grants"]
    form = detail.locator('[data-form="create-project"]')
    form.locator('input[name="project-name"]').fill(project)
    form.locator('input[name="project-total_resource_slots"]').fill("cpu=4, gpu.shares=0.5")
    form.locator('input[name="project-max_concurrent_sessions"]').fill("2")
    form.get_by_role("button", name="Create project").click()
    row = detail.locator(f'tr[data-project="{project}"]')
    row.wait_for(timeout=SLOW)
    bar = row.locator('.jp-hubgrid-admin-bar-row[data-slot="gpu.shares"]')
    assert (bar.get_attribute("data-limit"), bar.get_attribute("data-used")) == ("0.5", "0")
    made = _ok(hub.call("GET", f"domains/{domain}/projects/{project}", "admin"), 200)
    assert made["total_resource_slots"] == {"cpu": "4", "gpu.shares": "0.5"}
    assert made["max_concurrent_sessions"] == 2

    # edit the project, prefilled: the service's 422 next to its field, then
    # only what changed is sent, and the bar shows the new limit
    row.locator('button[data-edit="project"]').click()
    edit = detail.locator(f'[data-form="edit-project"][data-project="{project}"]')
    slots = edit.locator('input[name="total_resource_slots"]')
    slots.wait_for(timeout=SLOW)
    assert slots.input_value() == "cpu=4, gpu.shares=0.5"
    slots.fill("cpu=4, gpu.shares=1.5")
    edit.locator('input[name="max_concurrent_sessions"]').fill("many")

    def patched(r):
        return f"/{API}domains/{domain}/projects/{project}?" in r.url and r.request.method == "PATCH"

    with page.expect_response(patched) as answer:
        edit.get_by_role("button", name="Save").click()
    assert answer.value.status == 422, answer.value.text()
    problem = edit.locator('[data-field="max_concurrent_sessions"] .jp-hubgrid-admin-field-error')
    problem.wait_for(timeout=SLOW)
    assert "max_concurrent_sessions" in problem.inner_text()
    edit.locator('input[name="max_concurrent_sessions"]').fill("2")
    with page.expect_response(patched) as answer:
        edit.get_by_role("button", name="Save").click()
    assert answer.value.status == 200, answer.value.text()
    assert json.loads(answer.value.request.post_data) == {
        "total_resource_slots": {"cpu": "4", "gpu.shares": "1.5"}}
    row.locator('.jp-hubgrid-admin-bar-row[data-slot="gpu.shares"][data-limit="1.5"]').wait_for(timeout=SLOW)
    assert problem.count() == 0
    screenshot(page, "lab-admin-domains.png", tmp_path)

    # a policy: the service's 422 shows next to the field it names
    policies = open_page(page, "Resource Policies", "policies")
    form = policies.locator('[data-form="create-policy"]')
    form.locator('input[name="name"]').fill(policy)
    form.locator('input[name="total_resource_slots"]').fill("cpu=8, gpu.shares=1.5")
    form.locator('input[name="idle_timeout"]').fill("3600")
    form.locator('input[name="max_gpus_per_session"]').fill("1.5")
    form.locator('input[name="utilization_thresholds"]').fill("cpu=5, gpu_util=2.5")
    form.locator('input[name="max_keeps"]').fill("many")
    # (Jupyter's ServerConnection adds a cache-busting query to every URL)
    with page.expect_response(lambda r: f"/{API}resource-policies?" in r.url
                              and r.request.method == "POST") as answer:
        form.get_by_role("button", name="Create policy").click()
    assert answer.value.status == 422, answer.value.text()
    problem = form.locator('.jp-hubgrid-admin-field[data-field="max_keeps"] .jp-hubgrid-admin-field-error')
    problem.wait_for(timeout=SLOW)
    assert "max_keeps" in problem.inner_text()
    form.locator('input[name="max_keeps"]').fill("2")
    form.get_by_role("button", name="Create policy").click()
    listed = policies.locator(f'tr[data-policy="{policy}"]')
    listed.wait_for(timeout=SLOW)
    listed.scroll_into_view_if_needed()
    saved = _ok(hub.call("GET", f"resource-policies/{policy}", "admin"), 200)
    assert saved["total_resource_slots"] == {"cpu": "8", "gpu.shares": "1.5"}
    assert (saved["idle_timeout"], saved["max_keeps"], saved["max_gpus_per_session"]) == (3600, 2, "1.5")
    assert saved["utilization_thresholds"] == {"cpu": "5", "gpu_util": "2.5"}
    # the resource presets the spawn form and the launcher offer (the demo's), read-only
    presets = policies.locator('[data-table="presets"] tr[data-preset]')
    presets.first.wait_for(timeout=SLOW)
    assert presets.evaluate_all("rs => rs.map(r => r.dataset.preset)") == [
        "small", "medium", "large"]
    small = policies.locator('tr[data-preset="small"]')
    assert small.locator("td").first.inner_text() == "small (default)"
    assert (small.locator('[data-column="cpu"]').inner_text(),
            small.locator('[data-column="mem"]').inner_text()) == ("0.5", "1 GiB")
    screenshot(page, "lab-admin-policies.png", tmp_path)

    # a user in the new domain, then their project and policy from the edit form
    users = open_page(page, "Users", "users")
    form = users.locator('[data-form="create-user"]')
    form.locator('input[name="name"]').fill(user)
    form.locator('input[name="domain"]').fill(domain)
    form.get_by_role("button", name="Create user").click()
    edit = users.locator(f'.jp-hubgrid-admin-editor[data-user="{user}"]')
    edit.wait_for(timeout=SLOW)
    edit.locator('input[name="projects"]').fill(project)
    edit.locator('input[name="resource_policy"]').fill(policy)
    edit.get_by_role("button", name="Save").click()
    users.locator(f'tr[data-user="{user}"]', has_text=policy).wait_for(timeout=SLOW)
    got = _ok(hub.call("GET", f"users/{user}", "admin"), 200)
    assert (got["domain"], got["resource_policy"], got["projects"]) == (domain, policy, [project])

    # bulk add from a CSV file: one row created, one refused, each with its result
    csv = (f"name,domain,role,projects,resource_policy,active\n"
           f"b{tag},{domain},user,{project},{policy},true\n"
           f"c{tag},nosuch{tag},user,,,true\n")
    users.locator('input[name="bulk-csv"]').set_input_files(
        files=[{"name": "people.csv", "mimeType": "text/csv", "buffer": csv.encode()}])
    table = users.locator('[data-table="bulk"]')
    table.wait_for(timeout=SLOW)
    assert users.locator('[data-summary="bulk"]').inner_text() == "1 created, 1 refused"
    ok, refused = table.locator('tr[data-row="1"]'), table.locator('tr[data-row="2"]')
    assert ok.get_attribute("data-result") == "created" and f"projects {project}" in ok.inner_text()
    assert refused.get_attribute("data-result") == "refused" and "404" in refused.inner_text()
    assert _ok(hub.call("GET", f"users/b{tag}", "admin"), 200)["projects"] == [project]
    users.locator('input[name="q"]').fill(tag)
    with page.expect_response(lambda r: f"/{API}users?q={tag}&" in r.url) as answer:
        users.get_by_role("button", name="Search").click()
    assert answer.value.status == 200
    rows = users.locator('[data-table="users"] tbody tr')
    assert eventually(lambda: rows.count() == 2, timeout=30), rows.all_inner_texts()
    assert {rows.nth(i).get_attribute("data-user") for i in range(2)} == {f"b{tag}", user}
    screenshot(page, "lab-admin-users.png", tmp_path)

    # their keypairs: a new one (its secret shown once), its policy, then deactivated
    keys = users.locator(f'.jp-hubgrid-admin-keypairs[data-user="{user}"]')
    keys.locator('[data-form="create-keypair"] input[name="policy"]').fill(policy)
    keys.get_by_role("button", name="New keypair").click()
    keys.locator(".jp-hubgrid-admin-secret").wait_for(timeout=SLOW)
    [made] = _ok(hub.call("GET", f"keypairs?user={user}", "admin"), 200)
    assert made["resource_policy"] == policy and made["active"] is True
    assert made["access_key"] in keys.locator(".jp-hubgrid-admin-secret").inner_text()
    key_row = keys.locator(f'tr[data-key="{made["access_key"]}"]')
    key_row.get_by_role("button", name="Deactivate").click()
    key_row.locator("td", has_text="no").wait_for(timeout=SLOW)
    assert _ok(hub.call("GET", f"keypairs/{made['access_key']}", "admin"), 200)["active"] is False

    # the project's members on the Domains page: both, and one removed
    domains = open_page(page, "Domains and Projects", "domains")
    domains.get_by_role("button", name="Refresh").first.click()
    detail.locator(f'tr[data-project="{project}"] button', has_text=project).click()
    members = detail.locator(f'.jp-hubgrid-admin-members[data-project="{project}"]')
    members.locator(f'li[data-member="b{tag}"]').wait_for(timeout=SLOW)
    members.locator(f'li[data-member="b{tag}"]').get_by_role("button", name="Remove").click()
    assert eventually(lambda: members.locator(f'li[data-member="b{tag}"]').count() == 0, timeout=30)
    assert members.locator(f'li[data-member="{user}"]').count() == 1
    assert _ok(hub.call("GET", f"users/b{tag}", "admin"), 200)["projects"] == []

    # the access log, filtered, lists the creation; the CSV has the same
    log = open_page(page, "Access Log", "audit")
    log.locator('input[name="user"]').fill("adm")  # a prefix: admin and any admin2
    log.locator('input[name="action"]').fill("user.create")
    with page.expect_response(lambda r: "action=user.create" in r.url) as answer:
        log.get_by_role("button", name="Filter").click()
    assert answer.value.status == 200
    log.locator('[data-table="audit"] tr', has_text=user).first.wait_for(timeout=SLOW)
    with page.expect_download(timeout=SLOW) as download:
        log.get_by_role("button", name="Export CSV").click()
    content = Path(download.value.path()).read_text(encoding="utf-8")
    assert user in content and "user.create" in content
    assert all(",user.create," in line for line in content.splitlines()[1:] if line), content[:500]
    screenshot(page, "lab-admin-audit.png", tmp_path)


def test_domain_admin_works_in_acme_and_finds_globex_absent(world, ada_lab, tag):  # noqa: F811
    hub, page = world.hub, ada_lab
    user = f"a{tag}"
    assert menu_items(page) == PAGES
    users = open_page(page, "Users", "users")
    users.locator('tr[data-user="alice"]').wait_for(timeout=SLOW)
    form = users.locator('[data-form="create-user"]')
    assert form.locator('input[name="domain"]').input_value() == "acme"
    form.locator('input[name="name"]').fill(user)
    form.get_by_role("button", name="Create user").click()
    users.locator(f'tr[data-user="{user}"]').wait_for(timeout=SLOW)
    assert _ok(hub.call("GET", f"users/{user}", "admin"), 200)["domain"] == "acme"
    listed = users.locator('[data-table="users"] tbody tr')
    domains_listed = {listed.nth(i).locator("td").nth(1).inner_text() for i in range(listed.count())}
    assert domains_listed == {"acme"}
    assert "gina" not in users.inner_text() and "gus" not in users.inner_text()

    domains = open_page(page, "Domains and Projects", "domains")
    domains.locator('.jp-hubgrid-admin-domain[data-domain="acme"] tr[data-project="ml"]').wait_for(timeout=SLOW)
    # (her domain's detail may come before the list of domains: both are read at once)
    domains.locator('li[data-domain]').first.wait_for(timeout=SLOW)
    assert domains.locator('li[data-domain]').all_inner_texts() == ["acme"]
    assert "globex" not in domains.inner_text()
    # her projects have Edit, her domain has none, and the service refuses her that PATCH
    assert domains.locator('tr[data-project="ml"] button[data-edit="project"]').count() == 1
    assert domains.locator('button[data-edit="domain"]').count() == 0
    assert call_in_page(page, "PATCH", "domains/acme", {"description": "mine"})["status"] == 403

    log = open_page(page, "Access Log", "audit")
    log.locator('[data-table="audit"] tbody tr').first.wait_for(timeout=SLOW)
    assert "globex" not in log.inner_text() and "gina" not in log.inner_text()

    # the service, through ada's own forwarder: globex's objects are absent
    refused = {
        ("GET", "users/gina"): None,
        ("GET", "users?domain=globex"): None,
        ("PATCH", "users/gina"): {"active": False},
        ("POST", "users"): {"name": f"g{tag}", "domain": "globex"},
        ("GET", "domains/globex/totals"): None,
        ("GET", "domains/globex/projects/lab/members"): None,
        ("POST", "domains/globex/projects"): {"name": f"g{tag}"},
        ("PUT", "domains/globex/projects/lab/members/alice"): None,
        ("PATCH", "domains/globex"): {"description": "x"},
        ("PATCH", "domains/globex/projects/lab"): {"max_concurrent_sessions": 1},
        ("GET", "keypairs?user=gina"): None,
        ("POST", "keypairs"): {"user": "gina"},
        ("POST", "domains"): {"name": f"x{tag}"},
        ("POST", "resource-policies"): {"name": f"x{tag}"},
    }
    for (method, path), body in refused.items():
        r = call_in_page(page, method, path, body)
        assert r["status"] in (403, 404), (method, path, r)
    r = call_in_page(page, "POST", "users/bulk", f"name,domain\ng{tag},globex\n", "text/csv")
    assert r["status"] == 200 and json.loads(r["body"])["results"][0]["status"] == 404, r
    assert hub.call("GET", f"users/g{tag}", "admin").status_code == 404


def test_plain_user_has_no_admin_menu_and_every_admin_call_is_refused(world, alice_lab, tag):  # noqa: F811
    page = alice_lab
    seen = restored_with_panels(page)
    assert {"File", "Help"} <= seen and MENU not in seen, seen
    assert MENU not in page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
    ada_key = world.keypairs["ada"].split()[1].split(":")[0]
    calls = [
        ("GET", "users", None),
        ("GET", "users?q=a&role=user&active=true", None),
        ("POST", "users", {"name": f"z{tag}", "domain": "acme"}),
        ("PATCH", "users/ada", {"active": False}),
        ("PATCH", "users/alice", {"role": "superadmin"}),
        ("POST", "users/bulk", {"users": [{"name": f"z{tag}"}]}),
        ("GET", "keypairs?user=ada", None),
        ("POST", "keypairs", {"user": "ada"}),
        ("PATCH", f"keypairs/{ada_key}", {"active": False}),
        ("GET", "domains/acme/totals", None),
        ("POST", "domains", {"name": f"z{tag}"}),
        ("POST", "domains/acme/projects", {"name": f"z{tag}"}),
        ("PATCH", "domains/acme", {"description": "x"}),
        ("PATCH", "domains/acme/projects/ml", {"total_resource_slots": {"cpu": "1"}}),
        ("PUT", "domains/acme/projects/ml/members/ada", None),
        ("DELETE", "domains/acme/projects/ml/members/alice", None),
        ("POST", "resource-policies", {"name": f"z{tag}"}),
        ("PATCH", "resource-policies/default", {"max_keeps": 1}),
        ("GET", "audit", None),
        ("GET", "audit?user=ada&limit=50&offset=0", None),
        ("GET", "audit?format=csv", None),
    ]
    answers = {(m, p): call_in_page(page, m, p, b)["status"] for m, p, b in calls}
    assert all(status in (403, 404) for status in answers.values()), answers
    r = call_in_page(page, "POST", "users/bulk", f"name\nz{tag}\n", "text/csv")
    assert r["status"] in (403, 404), r
    assert world.hub.call("GET", f"users/z{tag}", "admin").status_code == 404
