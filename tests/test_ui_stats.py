"""The Lab extension's Statistics page in a real headless Chromium through the
REAL hub, proxy and service (tests/ui_fixtures.py; one Lab start).

User A of a fresh acme project has a finished session (a 0.5 GPU share held
while A's Lab started) and a running one (A's Lab server itself); user B of
the same project has a finished session too. A opens "Usage statistics" from
the Help menu (the launcher shows it as well):

- the daily plots are drawn (canvases with pixels);
- the table has one row, A's, whose figures are the ones the page's own
  ``GET usage`` answered, to the last digit; the GPU figures (the finished
  session's only, so fixed) equal those of an independent ``GET usage`` as A;
- B's name appears nowhere on the page;
- "Download CSV" saves ``usage-user-<start>-<end>.csv``: the service's CSV
  with A's rows only.

Screenshot ``lab-statistics.png`` (into $HUBGRID_SCREENSHOTS, e.g. docs/images).
Without Chromium or playwright these skip, and fail in CI (``CI=true``).
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from hub_fixtures import hub, world  # noqa: F401
from ui_fixtures import SLOW, chromium, lab_a, people, screenshot  # noqa: F401

pytestmark = [pytest.mark.hub, pytest.mark.parametrize("hub", ["sqlite"], indirect=True)]

PAGE = "#jp-hubgrid-statistics"
FIGURES = ("sessions", "running", "gpu_device_hours", "gpu_hours", "gpu_share_hours",
           "core_hours", "mem_gib_hours", "session_hours")


def _allocate(hub, user: str, project: str) -> dict:
    r = hub.call("POST", "allocations", user, json={
        "project": project, "resource_group": "acme-gpu",
        "slots": {"cpu": "1", "gpu.shares": "0.5"}})
    assert r.status_code == 201, r.text
    return r.json()


@pytest.fixture(scope="module")
def held(world, people):  # noqa: F811
    """A 0.5-share session of A and of B, held from before A's Lab starts
    (the test ends them: then they are finished sessions with some hours)."""
    hub = world.hub
    held = {who: _allocate(hub, people[who], people["project"]) for who in ("a", "b")}
    yield held
    for who, alloc in held.items():
        hub.call("DELETE", f"allocations/{alloc['id']}", people[who])


def test_my_usage_page_plots_lists_my_exact_figures_and_downloads_the_csv(
        world, people, held, lab_a, tmp_path):  # noqa: F811
    hub = world.hub
    a, b = people["a"], people["b"]
    for who, alloc in held.items():
        r = hub.call("DELETE", f"allocations/{alloc['id']}", people[who])
        assert r.status_code == 204, r.text
    page, dialogs = lab_a

    # the launcher lists the page; the Help menu opens it
    page.locator(".jp-LauncherCard", has_text="Usage statistics").first.wait_for(timeout=SLOW)
    with page.expect_response(lambda r: "/hubgrid/api/usage?" in r.url, timeout=SLOW) as answer:
        page.locator(".lm-MenuBar-itemLabel", has_text="Help").click()
        page.locator(".lm-Menu-itemLabel", has_text="hubgrid: Usage Statistics").click()
    response = answer.value
    assert response.status == 200, response.text()
    report = response.json()
    query = {k: v[0] for k, v in parse_qs(urlparse(response.url).query).items()}
    assert query["user"] == a and query["by"] == "user" and query["series"] == "daily"

    stats = page.locator(PAGE)
    rows = stats.locator(".jp-hubgrid-stats-table tbody tr[data-group]")
    rows.first.wait_for(timeout=SLOW)

    # the plots are drawn: every canvas has a size and painted pixels
    canvases = f"{PAGE} .jp-hubgrid-stats-plot canvas"
    drawn = page.eval_on_selector_all(canvases, """cs => cs.map(c => {
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let painted = 0;
        for (let i = 3; i < px.length; i += 4) { if (px[i]) painted++; }
        return [c.closest('figure').dataset.figure, c.width, painted];
    })""")
    assert [d[0] for d in drawn] == ["gpu_device_hours", "core_hours", "mem_gib_hours", "sessions"]
    assert all(w > 0 and painted > 0 for _, w, painted in drawn), drawn

    # one row, A's, with the figures of the page's own GET usage, exactly
    [group] = report["groups"]
    assert (group["domain"], group["user"]) == ("acme", a)
    assert group["sessions"] == 2 and group["running"] == 1, group
    assert rows.count() == 1
    cells = {c: rows.first.locator(f'td[data-column="{c}"]').inner_text()
             for c in ("domain", "user", *FIGURES)}
    assert cells == {"domain": "acme", "user": a, **{f: str(group[f]) for f in FIGURES}}
    total = stats.locator('.jp-hubgrid-stats-table tfoot tr[data-group="total"]')
    total_core = total.locator('td[data-column="core_hours"]').inner_text()
    assert total_core == report["total"]["core_hours"]

    # an independent GET usage as A: the same sessions, and the GPU figures
    # (the finished session's alone) to the last digit
    own = hub.call("GET", f"usage?start={query['start']}&end={query['end']}", a)
    assert own.status_code == 200, own.text
    [mine] = own.json()["groups"]
    assert (mine["user"], mine["sessions"], mine["running"]) == (a, 2, 1)
    for f in ("gpu_device_hours", "gpu_share_hours", "gpu_hours"):
        assert cells[f] == mine[f], (f, cells[f], mine[f])
    assert Decimal(cells["gpu_share_hours"]) > 0

    # nobody else's name on the page
    text = stats.inner_text()
    assert a in text and b not in text

    # the CSV: the service's file name and rows, A's only
    with page.expect_download(timeout=SLOW) as download:
        stats.get_by_role("button", name="Download CSV").click()
    saved = download.value
    assert saved.suggested_filename == f"usage-user-{query['start']}-{query['end']}.csv"
    content = Path(saved.path()).read_text(encoding="utf-8")
    lines = list(csv.DictReader(io.StringIO(content)))
    assert content.startswith("period_start,period_end,day,domain,user,sessions,running,")
    assert lines and {row["user"] for row in lines} == {a}
    assert b not in content

    screenshot(page, "lab-statistics.png", tmp_path)
    assert dialogs == []
