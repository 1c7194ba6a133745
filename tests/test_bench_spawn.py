"""bench.spawn runs end to end on a real Docker engine (one user, one round):
both spawners start a real server and the figures are printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import docker

from hub_fixtures import require

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.spawn.__main__ import main  # noqa: E402

IMAGE = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE", "hubgrid/base:latest")
URL = (os.environ.get("HUBGRID_TEST_DOCKER_HOSTS") or "unix:///var/run/docker.sock").split(",")[0]


def test_the_spawn_benchmark_times_both_spawners(capsys):
    try:
        docker.APIClient(base_url=URL, version="auto", timeout=30).inspect_image(IMAGE)
        ok = True
    except Exception:  # noqa: BLE001 - any failure means "not available"
        ok = False
    require(f"Docker engine {URL} with {IMAGE}", ok, "run `make test`")
    out = main(["--users", "1", "--concurrency", "1", "--image", IMAGE, "--docker-url", URL])
    assert out["hubgrid"]["n"] == out["stock"]["n"] == 1
    assert out["hubgrid"]["median"] > 0 and out["stock"]["median"] > 0
    assert out["ratio"] == out["hubgrid"]["median"] / out["stock"]["median"]
    printed = capsys.readouterr().out
    assert "ratio hubgrid/stock (median)" in printed and "hubgrid  median" in printed
