"""bench.lab runs end to end with tiny sizes (figures only, nothing asserted
about speed): Lab in Chromium through the real hub, its panels filled, an
upload from the Data panel and the idle request count."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.lab.__main__ import main  # noqa: E402
from hub_fixtures import require  # noqa: E402

pytestmark = pytest.mark.hub


def test_the_lab_benchmark_measures_every_figure(capsys):
    require("Chromium", os.path.exists("/usr/bin/chromium"),
            "bash scripts/install.sh --with-chromium installs Debian's chromium")
    figures = main(["--sessions", "3", "--files", "5", "--upload-mib", "2", "--idle-seconds", "2"])
    out = capsys.readouterr().out
    # every session and file was listed, and each upload landed
    assert figures["sessions_listed"] == 4  # 3 sessions and the user's own server
    for key in ("lab_s_warm", "summary_s_warm", "sessions_s_warm", "files_s", "curl_s",
                "lab_s", "forwarder_s", "browser_s"):
        assert figures[key] > 0, key
    assert figures["requests_hidden"] == 0, figures  # hidden: the panels stop polling
    assert "ratio" in out and "requests/min hidden" in out
