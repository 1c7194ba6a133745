"""bench.adminui runs end to end with tiny sizes on SQLite (figures only,
nothing asserted about speed): the seeding through the API, admin's Lab in
Chromium through the real hub, and each admin page opened twice from the
menu with every seeded row listed."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.adminui.__main__ import PAGES, main  # noqa: E402
from hub_fixtures import require  # noqa: E402

pytestmark = pytest.mark.hub


def test_the_admin_pages_benchmark_times_every_page_with_its_seeded_rows(capsys):
    require("Chromium", os.path.exists("/usr/bin/chromium"),
            "bash scripts/install.sh --with-chromium installs Debian's chromium")
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test` (it installs it from npm)")
    figures = main(["--users", "5", "--nodes", "3", "--pending", "4", "--running", "2",
                    "--images", "2", "--db", "sqlite"])
    pages = figures["pages"]
    assert set(pages) == {p.key for p in PAGES}
    for key, page in pages.items():
        assert page["rows"] >= page["expected"] >= 1, (key, page)
        assert page["first_s"] > 0 and page["reopen_s"] > 0, (key, page)
    # the seeded rows themselves, not only what the API answered
    assert pages["users"]["rows"] >= 5 + 1  # and admin
    assert pages["groups"]["rows"] == 3  # a-nodes, the first group
    assert pages["queue"]["rows"] == 4
    assert pages["sessions"]["rows"] >= 2 + 1 + 1  # on the nodes, b-queue's, admin's server
    assert pages["images"]["rows"] == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert json.loads(out[-1])["pages"]["queue"]["rows"] == 4
    assert any(line.startswith("Scheduler Queue") for line in out)
