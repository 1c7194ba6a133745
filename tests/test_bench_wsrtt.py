"""bench.wsrtt runs end to end on a real Docker engine (a few messages): a
kernel's websocket and the server's HTTP API answer through the proxy for an
isolated session and a host-networked one, and the figures are printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from docker_fixtures import require_image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.wsrtt.__main__ import main  # noqa: E402

IMAGE = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE", "hubgrid/base:latest")
URL = (os.environ.get("HUBGRID_TEST_DOCKER_HOSTS") or "unix:///var/run/docker.sock").split(",")[0]


def test_the_round_trip_benchmark_measures_both_paths(capsys):
    require_image(URL, IMAGE)
    out = main(["--messages", "5", "--image", IMAGE, "--docker-url", URL])
    for kind in ("hubgrid", "hubgrid-host"):
        assert out[kind]["n"] == 5 and 0 < out[kind]["ws_p50"] <= out[kind]["ws_p99"]
    assert out["ratio ws"] == out["hubgrid"]["ws_p50"] / out["hubgrid-host"]["ws_p50"]
    assert "ratio isolated/host (p50): websocket" in capsys.readouterr().out


def test_unknown_kinds_are_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--kinds", "stock"])
    assert e.value.code == 2 and "choose among" in capsys.readouterr().err
