"""The admin pages' figures, in a real Chromium through the real hub.

    python -m bench.adminui [--users 1000] [--nodes 200] [--pending 500]
                            [--running 200] [--images 20] [--db sqlite|postgres]
                            [--chromium /usr/bin/chromium]

Starts a real hub (``jupyterhub_config.py``, the demo's local-process
spawner) with the hubgrid service on SQLite (its state directory) or on a
fresh database of the PostgreSQL server of $HUBGRID_TEST_POSTGRES_URL
(``HUBGRID_DB_URL``; dropped afterwards). Seeds it through the API as the
superadmin ``admin``:

- ``--users`` users of the domain ``bench`` (``users/bulk``, 1,000 rows a
  call), each a member of one of its three projects;
- ``--nodes`` nodes of 64 CPUs and 4 GPUs in the resource group ``a-nodes``
  (the first group by name: the one the Groups page shows first), and
  ``--running`` API sessions of admin on them (1 CPU, half a GPU);
- ``--pending`` requests of admin waiting in ``b-queue``: one node of 1 CPU,
  held by one session, each request asking for 1 CPU;
- ``--images`` images in the registry.

Then starts admin's server, opens Lab and, for each admin page, times from
the click on its "hubgrid Admin" menu item (the browser's ``pointerdown``) to
its table or list filled with every row the service lists for admin (the
count read from the API just before), twice: the first open, then again
after closing its tab (a reopen). Prints a table of the figures per page (a
JSON line last); asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import requests

from bench.hubproc import Hub, launch_hub, stop_hub

ADMIN, DOMAIN, NODES, QUEUE = "admin", "bench", "a-nodes", "b-queue"
PROJECTS = ("p0", "p1", "p2")
MENU = "hubgrid Admin"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SLOW = 180_000  # ms: Lab's first load and 200 nodes' reads on 2 busy cores


class Api:
    """The hubgrid API as admin, on one kept-alive connection."""

    def __init__(self, hub: Hub):
        self.base = hub.api
        self.s = requests.Session()
        self.s.headers["Authorization"] = f"token {hub.token(ADMIN)}"

    def __call__(self, method: str, path: str, *codes: int, **kw):
        r = self.s.request(method, self.base + path, timeout=120, **kw)
        if r.status_code not in (codes or (200,)):
            raise SystemExit(f"{method} {path}: {r.status_code} {r.text[:500]}")
        return r.json() if r.content else {}

    def close(self) -> None:
        self.s.close()


def _allocate(api: Api, project: str, group: str, slots: dict, state: str) -> dict:
    a = api("POST", "allocations", 201, 202, json={
        "project": project, "resource_group": group, "slots": slots})
    if a["state"] != state:
        raise SystemExit(f"a bench session in {group} is {a['state']}, not {state}: {a}")
    return a


def seed(hub: Hub, api: Api, args) -> dict:
    """The bench domain and its users, the two groups and their nodes, the
    running sessions, the waiting requests and the images."""
    me = api("GET", "me")
    home, project = me.get("domain") or "default", "default"
    api("POST", "domains", 201, json={"name": DOMAIN})
    for p in PROJECTS:
        api("POST", f"domains/{DOMAIN}/projects", 201, json={"name": p})
    rows = [{"name": f"u{i:05d}", "domain": DOMAIN, "role": "user",
             "projects": [PROJECTS[i % len(PROJECTS)]]} for i in range(args.users)]
    for i in range(0, len(rows), 1000):
        report = api("POST", "users/bulk", 200, json={"users": rows[i:i + 1000]})
        if report["refused"]:
            refused = next(r for r in report["results"] if r["result"] != "created")
            raise SystemExit(f"users/bulk refused {report['refused']} rows, e.g. {refused}")
    for group in (NODES, QUEUE):
        api("POST", "resource-groups", 201, json={"name": group})
        api("PUT", f"resource-groups/{group}/grants", 201, json={"domain": home})
    for i in range(args.nodes):
        api("POST", "nodes", 201, json={
            "name": f"n{i:04d}", "resource_group": NODES,
            "capacity": {"cpu": "64", "mem": "512G"},
            "devices": [{"index": j, "model": "A100"} for j in range(4)]})
    api("POST", "nodes", 201, json={"name": "q-node", "resource_group": QUEUE,
                                    "capacity": {"cpu": "1", "mem": "4G"}})
    for _ in range(args.running if args.nodes else 0):
        _allocate(api, project, NODES, {"cpu": "1", "mem": "1G", "gpu.shares": "0.5"}, "allocated")
    _allocate(api, project, QUEUE, {"cpu": "1", "mem": "1G"}, "allocated")
    for _ in range(args.pending):
        _allocate(api, project, QUEUE, {"cpu": "1", "mem": "1G"}, "pending")
    for i in range(args.images):
        api("POST", "images", 201, json={"name": f"bench/img{i:03d}:1", "min_slots": {"cpu": "1"}})
    settle(hub)
    return {"project": project}


def settle(hub: Hub) -> None:
    """Mirror the tenancy into the hub now (the new users are made in the hub
    one by one), so that the hub is quiet while the pages are timed."""
    token = (hub.state / "hubgrid-internal-token").read_text().strip()
    r = requests.post(hub.api + "internal/sync", timeout=900,
                      headers={"Authorization": f"hubgrid-internal {token}"})
    if r.status_code != 200:
        raise SystemExit(f"internal/sync: {r.status_code} {r.text[:500]}")


def start_server(hub: Hub) -> None:
    r = hub.hub_call("POST", f"users/{ADMIN}/server", user=ADMIN, json={
        "project": "default", "resource_group": "default", "cpu": "0.5", "mem": "512M"})
    if r.status_code not in (201, 202):
        raise SystemExit(f"admin's server: {r.status_code} {r.text[:500]}")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        server = hub.hub_call("GET", f"users/{ADMIN}", user=ADMIN).json()["servers"].get("")
        if server and server["ready"]:
            return
        time.sleep(0.5)
    raise SystemExit(f"admin's server did not start: {(hub.state / 'hub.log').read_text()[-3000:]}")


@dataclass(frozen=True)
class AdminPage:
    key: str  # the page id: #jp-hubgrid-admin-<key>, data-page=<key>
    label: str  # its "hubgrid Admin" menu item
    #: (CSS selector, count) pairs the filled page shows, read from the API
    #: now; the first pair's count is the page's row count
    expect: Callable[[Api], list[tuple[str, int]]]


def _domains(api: Api) -> list[tuple[str, int]]:
    domains = api("GET", "domains")
    first = domains[0]["name"]  # the page shows the first domain's projects
    projects = api("GET", f"domains/{first}/totals")["projects"]
    return [("li[data-domain]", len(domains)),
            (f'.jp-hubgrid-admin-domain[data-domain="{first}"] tr[data-project]', len(projects))]


def _groups(api: Api) -> list[tuple[str, int]]:
    first = api("GET", "resource-groups")[0]["name"]  # the page shows the first group
    nodes = [n for n in api("GET", "nodes") if n["resource_group"] == first]
    # every card drawn, and every card's GPU holders and sessions read
    return [(f'[data-group="{first}"] section.jp-hubgrid-ops-node', len(nodes)),
            (f'[data-group="{first}"] section.jp-hubgrid-ops-node[data-detail="loaded"]',
             len(nodes))]


PAGES = [
    AdminPage("users", "Users", lambda api: [("tr[data-user]", len(api("GET", "users")))]),
    AdminPage("domains", "Domains and Projects", _domains),
    AdminPage("policies", "Resource Policies",
              lambda api: [("tr[data-policy]", len(api("GET", "resource-policies")))]),
    AdminPage("groups", "Resource Groups and Nodes", _groups),
    AdminPage("queue", "Scheduler Queue", lambda api: [
        (f'.jp-hubgrid-ops-queue[data-group="{QUEUE}"] tr[data-request]',
         len(api("GET", f"resource-groups/{QUEUE}/queue")["entries"]))]),
    AdminPage("sessions", "Sessions (All)", lambda api: [
        ("tr[data-allocation]", len(api("GET", "allocations", params={"state": "allocated"})))]),
    AdminPage("images", "Images", lambda api: [("tr[data-image]", len(api("GET", "images")))]),
    AdminPage("audit", "Access Log", lambda api: [
        ("tr[data-entry]", len(api("GET", "audit", params={"limit": 50})["entries"]))]),
]

#: the time of the last pointerdown (capturing: before Lumino's menus see it)
MARK = """() => { if (!window.__hgMarked) { window.__hgMarked = true;
    window.addEventListener('pointerdown', () => { window.__hgDown = performance.now(); }, true); } }"""
#: ms from that pointerdown once every selector has its count, else false
FILLED = """pairs => pairs.every(([sel, n]) => document.querySelectorAll(sel).length >= n)
    && performance.now() - window.__hgDown"""


def log_in(page, hub: Hub) -> None:
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", ADMIN)
    page.fill("#password_input", hub.admin_password)
    page.click("#login_submit")
    page.wait_for_url(lambda url: "/hub/login" not in url, timeout=SLOW)
    page.goto(f"{hub.url}/user/{ADMIN}/lab")
    page.locator(".lm-MenuBar-itemLabel", has_text=MENU).wait_for(timeout=SLOW)


def menu_item(page, label: str):
    """The "hubgrid Admin" menu opened, its item ``label`` shown (the items
    appear once Lab has read GET me: a menu opened before is opened again)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    item = page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(label)}$"))
    deadline = time.monotonic() + SLOW / 1000
    while True:
        page.locator(".lm-MenuBar-itemLabel", has_text=MENU).click()
        try:
            item.wait_for(state="visible", timeout=5000)
            return item
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise
            page.keyboard.press("Escape")


def open_filled(page, spec: AdminPage, pairs: list[tuple[str, int]]) -> tuple[float, float, int]:
    """Open ``spec`` from the menu: (seconds from the click to every pair's
    count shown, in the browser; the same seen from here; the rows listed)."""
    root = f"#jp-hubgrid-admin-{spec.key}"
    scoped = [[f"{root} {sel}", n] for sel, n in pairs]
    page.evaluate(MARK)
    item = menu_item(page, spec.label)
    t0 = time.perf_counter()
    item.click()
    ms = page.wait_for_function(FILLED, arg=scoped, timeout=SLOW).json_value()
    wall = time.perf_counter() - t0
    return ms / 1000, wall, page.locator(scoped[0][0]).count()


def close(page, spec: AdminPage) -> None:
    wid = f"jp-hubgrid-admin-{spec.key}"
    page.locator(f'.lm-DockPanel-tabBar .lm-TabBar-tab[data-id="{wid}"] '
                 ".lm-TabBar-tabCloseIcon").click()
    page.locator(f"#{wid}").wait_for(state="detached", timeout=SLOW)


def measure(page, api: Api) -> dict:
    figures = {}
    for spec in PAGES:
        pairs = spec.expect(api)
        if pairs[0][1] == 0:
            print(f"[bench.adminui] {spec.label}: nothing to list, not timed", flush=True)
            continue
        first_s, first_wall_s, rows = open_filled(page, spec, pairs)
        close(page, spec)
        reopen_s, reopen_wall_s, _ = open_filled(page, spec, pairs)
        close(page, spec)
        figures[spec.key] = {"label": spec.label, "expected": pairs[0][1], "rows": rows,
                             "first_s": first_s, "reopen_s": reopen_s,
                             "first_wall_s": first_wall_s, "reopen_wall_s": reopen_wall_s}
        print(f"[bench.adminui] {spec.label}: {json.dumps(figures[spec.key])}", flush=True)
    return figures


def run(args, work: Path, db_url: str | None) -> dict:
    from playwright.sync_api import sync_playwright

    state = work / "state"
    state.mkdir()
    hub = launch_hub(state, {"HUBGRID_DB_URL": db_url} if db_url else None)
    api = None
    try:
        api = Api(hub)
        t0 = time.perf_counter()
        seed(hub, api, args)
        figures: dict = {"db": args.db, "users": args.users, "nodes": args.nodes,
                         "pending": args.pending, "running": args.running,
                         "images": args.images, "seed_s": time.perf_counter() - t0}
        print(f"[bench.adminui] seeded in {figures['seed_s']:.1f} s", flush=True)
        start_server(hub)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
                t1 = time.perf_counter()
                log_in(page, hub)
                figures["lab_s"] = time.perf_counter() - t1
                figures["pages"] = measure(page, api)
            finally:
                browser.close()
        return figures
    except SystemExit:
        log = state / "hub.log"
        print(f"[bench.adminui] the hub's log ends:\n{log.read_text()[-4000:] if log.exists() else ''}",
              file=sys.stderr, flush=True)
        raise
    finally:
        if api is not None:
            api.close()
        with contextlib.suppress(requests.RequestException, AssertionError):
            hub.hub_call("DELETE", f"users/{ADMIN}/server", user=ADMIN)
        stop_hub(hub)


def report(figures: dict) -> None:
    print(f"{figures['db']}: {figures['users']} users, {figures['nodes']} nodes, "
          f"{figures['running']} running sessions, {figures['pending']} pending requests, "
          f"{figures['images']} images (seeded in {figures['seed_s']:.1f} s; Lab up in "
          f"{figures['lab_s']:.1f} s)")
    print(f"{'page':28} {'rows':>6} {'first s':>8} {'reopen s':>9}")
    for f in figures["pages"].values():
        print(f"{f['label']:28} {f['rows']:6d} {f['first_s']:8.2f} {f['reopen_s']:9.2f}")
    print(json.dumps(figures))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.adminui", description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pending", type=int, default=500)
    ap.add_argument("--running", type=int, default=200, help="API sessions on the nodes")
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args(argv)
    if not os.path.exists(args.chromium):
        raise SystemExit(f"no Chromium at {args.chromium} (bash scripts/install.sh --with-chromium)")
    if args.db == "postgres":
        from bench.usage.__main__ import database
        db = database("postgres")
    else:
        db = contextlib.nullcontext(None)  # the service's SQLite in the state dir
    with db as db_url, tempfile.TemporaryDirectory(prefix="bench-adminui-") as tmp:
        figures = run(args, Path(tmp), db_url)
    report(figures)
    return figures


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
