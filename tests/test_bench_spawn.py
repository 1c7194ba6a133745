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
    out = main(["--users", "1", "--concurrency", "1", "--image", IMAGE, "--docker-url", URL,
                "--settle", "0.5"])
    assert out["hubgrid"]["n"] == out["hubgrid-host"]["n"] == out["stock"]["n"] == 1
    assert min(out[k]["median"] for k in ("hubgrid", "hubgrid-host", "stock")) > 0
    assert out["ratio hubgrid/stock"] == out["hubgrid"]["median"] / out["stock"]["median"]
    assert out["ratio hubgrid/hubgrid-host"] == \
        out["hubgrid"]["median"] / out["hubgrid-host"]["median"]
    # where the CPU went: each container's cgroup until ready, the hub's processes
    for k in ("hubgrid", "hubgrid-host", "stock"):
        assert out[k]["cpu"]["container_median"] > 0.1  # a Jupyter server's start
        assert out[k]["cpu"]["hub_per_spawn"] > 0
    printed = capsys.readouterr().out
    assert "ratio hubgrid/hubgrid-host (median)" in printed and "hubgrid-host median" in printed
    assert "CPU s: container until ready" in printed and "0.5 s after the logins" in printed


def test_unknown_kinds_are_refused(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        main(["--kinds", "hubgrid,podman"])
    assert e.value.code == 2 and "unknown podman" in capsys.readouterr().err


def test_cpu_is_read_from_the_kernel(tmp_path):
    """The process-group and daemon counters read /proc: a child that burns
    CPU in a group of its own is counted there and nowhere else."""
    import subprocess

    from bench.spawn import cpu

    burn = subprocess.Popen([sys.executable, "-c",
                             "import time\nt = time.process_time()\n"
                             "while time.process_time() - t < 0.3: pass\n"
                             "import sys; sys.stdout.write('done'); sys.stdout.flush()\n"
                             "time.sleep(30)"],
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert burn.stdout.read(4) == b"done"
        assert 0.25 <= cpu.group_seconds(burn.pid) < 5
        assert cpu.processes_seconds(lambda comm, _f: comm == "no-such-process") == 0
    finally:
        burn.kill()
        burn.wait()
        burn.stdout.close()
    assert cpu.container_seconds("0" * 64) is None  # no such container
