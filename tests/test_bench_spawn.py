"""bench.spawn runs end to end on a real Docker engine (one user, one round):
hubgrid's spawner isolated and on host networking, and the stock one, each
start a real server and the figures are printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path


from docker_fixtures import require_image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.spawn.__main__ import main  # noqa: E402

IMAGE = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE", "hubgrid/base:latest")
URL = (os.environ.get("HUBGRID_TEST_DOCKER_HOSTS") or "unix:///var/run/docker.sock").split(",")[0]


def test_the_spawn_benchmark_times_both_spawners(capsys):
    require_image(URL, IMAGE)
    out = main(["--users", "1", "--concurrency", "1", "--image", IMAGE, "--docker-url", URL])
    assert out["hubgrid"]["n"] == out["hubgrid-host"]["n"] == out["stock"]["n"] == 1
    assert min(out[k]["median"] for k in ("hubgrid", "hubgrid-host", "stock")) > 0
    assert out["ratio hubgrid/stock"] == out["hubgrid"]["median"] / out["stock"]["median"]
    assert out["ratio hubgrid/hubgrid-host"] == \
        out["hubgrid"]["median"] / out["hubgrid-host"]["median"]
    printed = capsys.readouterr().out
    assert "ratio hubgrid/hubgrid-host (median)" in printed and "hubgrid-host median" in printed


def test_unknown_kinds_are_refused(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        main(["--kinds", "hubgrid,podman"])
    assert e.value.code == 2 and "unknown podman" in capsys.readouterr().err
