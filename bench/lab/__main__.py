"""The Lab extension's figures, in a real Chromium through the real hub.

    python -m bench.lab [--sessions 100] [--files 1000] [--upload-mib 1024]
                        [--idle-seconds 20] [--chromium /usr/bin/chromium]

Starts a real hub (``jupyterhub_config.py``, the demo's local-process
spawner) with the hubgrid service, gives one user ``--sessions`` running
sessions (API sessions of 0.01 CPU on a declared node) and a folder of
``--files`` small files, starts the user's server, and measures in Chromium:

- **open**: from opening Lab to Lab itself up with the Summary panel shown
  (JupyterLab's own start), from there to the panel filled (the project's
  bars), from showing the Sessions panel to all the user's sessions listed,
  and from opening the folder to all its files listed (target: the panels
  under 1 s on these 2-core machines);
- **upload**: a ``--upload-mib`` file uploaded from the Data panel (tus through
  the Lab server extension) against a plain ``curl`` PUT of the same file to
  the files API, in the same run (target ratio >= 0.8);
- **idle**: the panels' requests while the tab is visible and while it is
  hidden (``document.hidden``), each over ``--idle-seconds``.

Prints the figures (a JSON line last); asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench.hubproc import Hub, launch_hub, stop_hub

USER, DOMAIN, PROJECT, GROUP = "ben", "bench", "lab", "bench"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SLOW = 180_000  # ms: Lab's first load on 2 busy cores


def _ok(r: requests.Response, *codes: int) -> dict:
    if r.status_code not in codes:
        raise SystemExit(f"{r.request.method} {r.url}: {r.status_code} {r.text[:500]}")
    return r.json() if r.content else {}


def prepare(hub: Hub, sessions: int, files: int) -> dict:
    """The tenancy, ``sessions`` running API sessions and a folder of ``files``."""
    _ok(hub.call("POST", "domains", "admin", json={"name": DOMAIN}), 201)
    _ok(hub.call("POST", f"domains/{DOMAIN}/projects", "admin", json={"name": PROJECT}), 201)
    _ok(hub.call("POST", "users", "admin", json={"name": USER, "domain": DOMAIN, "role": "user"}), 201)
    _ok(hub.call("PUT", f"domains/{DOMAIN}/projects/{PROJECT}/members/{USER}", "admin"), 201)
    _ok(hub.call("POST", "resource-groups", "admin", json={"name": GROUP}), 201)
    _ok(hub.call("PUT", f"resource-groups/{GROUP}/grants", "admin", json={"domain": DOMAIN}), 201)
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": "bench-node", "resource_group": GROUP,
        "capacity": {"cpu": "10000", "mem": "10000G"},
        "devices": [{"index": i, "model": "A100"} for i in range(2)]}), 201)
    hub.sync()
    for _ in range(sessions):
        a = _ok(hub.call("POST", "allocations", USER, json={
            "project": PROJECT, "resource_group": GROUP,
            "slots": {"cpu": "0.01", "mem": "16M"}}), 201)
        if a["state"] != "allocated":
            raise SystemExit(f"a bench session did not run: {a}")
    folder = _ok(hub.call("POST", "vfolders", USER, json={"name": "many"}), 201)
    with requests.Session() as s:
        s.headers["Authorization"] = f"token {hub.token(USER)}"
        for i in range(files):
            r = s.put(f"{hub.api}vfolders/{folder['id']}/upload?path=f{i:05}.txt",
                      data=b"x" * 100, timeout=30)
            _ok(r, 201)
    big = _ok(hub.call("POST", "vfolders", USER, json={"name": "big"}), 201)
    return {"folder": folder, "big": big}


def start_server(hub: Hub) -> None:
    r = hub.hub_call("POST", f"users/{USER}/server", user=USER, json={
        "project": PROJECT, "resource_group": GROUP, "cpu": "0.5", "mem": "512M"})
    _ok(r, 201, 202)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        server = hub.hub_call("GET", f"users/{USER}", user=USER).json()["servers"].get("")
        if server and server["ready"]:
            return
        time.sleep(0.5)
    raise SystemExit(f"{USER}'s server did not start: {(hub.state / 'hub.log').read_text()[-3000:]}")


def log_in(page, hub: Hub) -> None:
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", USER)
    page.fill("#password_input", hub.user_password)
    page.click("#login_submit")
    page.wait_for_url(lambda url: "/hub/login" not in url, timeout=SLOW)


def tab(page, panel_id: str):
    return page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{panel_id}"]')


def show(page, panel_id: str):
    t = tab(page, panel_id)
    t.wait_for(timeout=SLOW)
    if "lm-mod-current" not in (t.get_attribute("class") or ""):
        t.click()
    return page.locator(f"#{panel_id}")


def wait_count(page, selector: str, n: int, timeout_ms: int = SLOW) -> None:
    page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length >= n",
                           arg=[selector, n], timeout=timeout_ms)


def measure_open(page, hub: Hub, sessions: int, files: int, folder: dict) -> dict:
    """Lab opened twice (the first load fills the browser's cache, as for a
    returning user); the second is measured."""
    lab = f"{hub.url}/user/{USER}/lab"
    bars = '#jp-hubgrid-summary .jp-hubgrid-level[data-level="project"] .jp-hubgrid-bar-row'
    rows = "#jp-hubgrid-sessions .jp-hubgrid-session"
    figures = {}
    for round_ in ("cold", "warm"):
        t0 = time.perf_counter()
        page.goto(lab)
        show(page, "jp-hubgrid-summary")
        ready = time.perf_counter()  # Lab is up, the panel is shown
        page.locator(bars).first.wait_for(timeout=SLOW)
        figures[f"lab_s_{round_}"] = ready - t0
        figures[f"summary_s_{round_}"] = time.perf_counter() - ready
        t1 = time.perf_counter()
        show(page, "jp-hubgrid-sessions")
        wait_count(page, rows, sessions + 1)  # and the server itself
        figures[f"sessions_s_{round_}"] = time.perf_counter() - t1
    figures["sessions_listed"] = page.locator(rows).count()
    data = show(page, "jp-hubgrid-data")
    link = data.locator(f'tr[data-folder="{folder["id"]}"] .jp-hubgrid-data-name a')
    link.wait_for(timeout=SLOW)
    t2 = time.perf_counter()
    link.click()
    wait_count(page, '.jp-hubgrid-files tr[data-entry][data-type="file"]', files)
    figures["files_s"] = time.perf_counter() - t2
    return figures


def curl_put(path: Path, url: str, token: str) -> float:
    """Seconds ``curl`` takes to PUT the file at ``url`` (SystemExit unless 201)."""
    t0 = time.perf_counter()
    out = subprocess.run(
        ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-T", str(path),
         "-H", f"Authorization: token {token}",
         "-H", "Content-Type: application/octet-stream", url],
        capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if out.stdout != "201":
        raise SystemExit(f"curl PUT {url} failed: {out.stdout} {out.stderr}")
    return seconds


def measure_upload(page, hub: Hub, big: dict, mib: int, work: Path) -> dict:
    path = work / "lab.bin"
    with open(path, "wb") as f:
        f.truncate(mib * 2**20)
    token = hub.token(USER)
    curl_s = curl_put(path, f"{hub.api}vfolders/{big['id']}/upload?path=curl.bin", token)
    # the same through the Lab server extension, without the browser
    forwarder_s = curl_put(
        path, f"{hub.url}/user/{USER}/hubgrid/api/vfolders/{big['id']}/upload?path=fwd.bin",
        token)
    data = show(page, "jp-hubgrid-data")
    data.locator(".jp-hubgrid-data-header").get_by_role("button", name="Refresh").click()
    link = data.locator(f'tr[data-folder="{big["id"]}"] .jp-hubgrid-data-name a')
    link.wait_for(timeout=SLOW)
    link.click()
    files = page.locator(".jp-hubgrid-files:visible")
    files.locator('table[aria-label="files"]').wait_for(timeout=SLOW)
    t1 = time.perf_counter()
    files.locator('input[aria-label="files to upload"]').set_input_files(str(path))
    page.locator('[data-upload$="lab.bin"][data-phase="done"]').wait_for(timeout=1_800_000)
    lab_s = time.perf_counter() - t1
    browser_s = browser_put(page, path, f"/user/{USER}/hubgrid/api/vfolders/{big['id']}"
                                        "/upload?path=browser.bin")
    path.unlink()
    size = mib * 2**20
    return {"upload_mib": mib, "curl_s": curl_s, "lab_s": lab_s, "forwarder_s": forwarder_s,
            "curl_mib_s": size / 2**20 / curl_s, "lab_mib_s": size / 2**20 / lab_s,
            "forwarder_mib_s": size / 2**20 / forwarder_s, "browser_s": browser_s,
            "browser_mib_s": size / 2**20 / browser_s,
            "ratio": curl_s / lab_s}


BROWSER_PUT = """async url => {
    const file = document.getElementById('bench-file').files[0];
    const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
    const t0 = performance.now();
    const r = await fetch(url, {method: 'PUT', body: file, headers: {
        'X-XSRFToken': decodeURIComponent(xsrf), 'Content-Type': 'application/octet-stream'}});
    return [r.status, (performance.now() - t0) / 1000];
}"""


def browser_put(page, path: Path, url: str) -> float:
    """Seconds the browser takes to send the file in ONE plain PUT (fetch)
    through the server extension: what Chromium itself can upload here."""
    page.evaluate("""() => { const i = document.createElement('input');
        i.type = 'file'; i.id = 'bench-file'; i.hidden = true; document.body.appendChild(i); }""")
    page.set_input_files("#bench-file", str(path))
    status, seconds = page.evaluate(BROWSER_PUT, url)
    if status != 201:
        raise SystemExit(f"the browser's PUT {url} answered {status}")
    return seconds


HIDE = """() => {
    Object.defineProperty(document, 'hidden', {value: true, configurable: true});
    Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});
    document.dispatchEvent(new Event('visibilitychange'));
}"""


def measure_idle(page, seconds: float) -> dict:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if "/hubgrid/api/" in r.url else None)
    show(page, "jp-hubgrid-sessions")
    page.wait_for_timeout(5000)  # the panels' first reads are over
    start = len(seen)
    page.wait_for_timeout(seconds * 1000)
    visible = len(seen) - start
    page.evaluate(HIDE)
    page.wait_for_timeout(2000)  # calls already open end
    start = len(seen)
    page.wait_for_timeout(seconds * 1000)
    hidden = len(seen) - start
    return {"idle_seconds": seconds, "requests_visible": visible, "requests_hidden": hidden,
            "per_minute_visible": visible * 60 / seconds, "per_minute_hidden": hidden * 60 / seconds}


def run(args, work: Path) -> dict:
    from playwright.sync_api import sync_playwright

    hub = launch_hub(work / "state" if (work / "state").mkdir() is None else work)
    try:
        t0 = time.perf_counter()
        made = prepare(hub, args.sessions, args.files)
        print(f"[bench.lab] {args.sessions} sessions and {args.files} files made in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        start_server(hub)
        figures: dict = {"sessions": args.sessions, "files": args.files}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = context.new_page()
                log_in(page, hub)
                figures.update(measure_open(page, hub, args.sessions, args.files, made["folder"]))
                print(f"[bench.lab] open: {json.dumps(figures)}", flush=True)
                if args.upload_mib:
                    figures.update(measure_upload(page, hub, made["big"], args.upload_mib, work))
                if args.idle_seconds:
                    figures.update(measure_idle(page, args.idle_seconds))
            finally:
                browser.close()
        return figures
    finally:
        hub.hub_call("DELETE", f"users/{USER}/server", user=USER)
        stop_hub(hub)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.lab", description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--upload-mib", type=int, default=1024, help="0: no upload figure")
    ap.add_argument("--idle-seconds", type=float, default=20, help="0: no idle figure")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args(argv)
    if not os.path.exists(args.chromium):
        raise SystemExit(f"no Chromium at {args.chromium} (bash scripts/install.sh --with-chromium)")
    with tempfile.TemporaryDirectory(prefix="bench-lab-") as tmp:
        figures = run(args, Path(tmp))
    print(f"open Lab: {figures['lab_s_warm']:.2f} s to Lab with the Summary panel shown "
          f"(first load {figures['lab_s_cold']:.2f} s), then {figures['summary_s_warm']:.2f} s "
          f"to its bars (first load {figures['summary_s_cold']:.2f} s)")
    print(f"Sessions panel -> {figures['sessions_listed']} sessions listed: "
          f"{figures['sessions_s_warm']:.2f} s (first load {figures['sessions_s_cold']:.2f} s)")
    print(f"folder of {args.files} files listed: {figures['files_s']:.2f} s")
    if "ratio" in figures:
        print(f"upload {figures['upload_mib']} MiB: curl PUT {figures['curl_mib_s']:.0f} MiB/s, "
              f"Lab (tus via the server extension) {figures['lab_mib_s']:.0f} MiB/s, "
              f"ratio {figures['ratio']:.2f} (target >= 0.8)")
        print(f"  for comparison: curl PUT through the server extension "
              f"{figures['forwarder_mib_s']:.0f} MiB/s; the browser's one plain PUT (fetch) "
              f"through it {figures['browser_mib_s']:.0f} MiB/s")
    if "requests_visible" in figures:
        print(f"idle: {figures['per_minute_visible']:.1f} requests/min visible, "
              f"{figures['per_minute_hidden']:.1f} requests/min hidden")
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
