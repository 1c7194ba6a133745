"""The share check: whether this machine can enforce GPU shares in its node's
mode, decided over what is observed. No GPU here: the MPS daemon is a unix
socket named ``control`` in a pipe directory the test makes, answered by a
fake ``nvidia-cuda-mps-control`` script on PATH (named for what it is: it
stands in for NVIDIA's control client), and the HAMi-core library a file."""

from __future__ import annotations

import logging
import os
import socket
import stat

import pytest
import sqlalchemy as sa

from quota_service.core import sharecheck
from quota_service.core.models import Node
from quota_service.core.sharecheck import Observed, decide
from quota_service.runtime import passes
from test_ledger import ask, solo

FAKE_MPS_CONTROL = """#!/bin/sh
# fake nvidia-cuda-mps-control: answers get_server_list when the pipe
# directory it is pointed at has a file 'answers' (the daemon is up)
read cmd
[ "$cmd" = get_server_list ] || { echo "unknown command $cmd" >&2; exit 2; }
[ -e "$CUDA_MPS_PIPE_DIRECTORY/answers" ] || { echo "Cannot find MPS control daemon process" >&2; exit 1; }
[ -e "$CUDA_MPS_PIPE_DIRECTORY/hangs" ] && sleep 30
echo 4242
"""


@pytest.fixture
def pipes(tmp_path, monkeypatch):
    """A pipe directory with a listening ``control`` socket, and the fake
    mps-control first on PATH."""
    pipe = tmp_path / "mps-pipe"
    pipe.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / sharecheck.MPS_CONTROL
    exe.write_text(FAKE_MPS_CONTROL)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(pipe / "control"))
    sock.listen()
    yield pipe
    sock.close()


@pytest.mark.parametrize("mode, seen, reason", [
    ("mps", Observed(control_socket=True, control_answer=None), ""),
    ("mps", Observed(control_socket=False), "MPS daemon not running (no control socket in /p)"),
    ("mps", Observed(control_socket=True, control_answer="exited 1"),
     "MPS daemon not answering: exited 1"),
    ("mps", Observed(control_socket=True, control_answer=None, pipe_open=True),
     "MPS pipe directory /p may be written by others than its owner (sessions mount it): "
     "make it 0755 or stricter"),
    ("hami", Observed(library=True), ""),
    ("hami", Observed(library=False), "HAMi-core library absent (/lib/v.so)"),
    ("hami", Observed(library=None), ""),  # no library named: the image names its own
    ("framework", Observed(), ""),
    ("", Observed(), ""),
])
def test_the_decision(mode, seen, reason):
    assert decide(mode, seen, pipe_directory="/p", library="/lib/v.so") == reason


def test_a_long_reason_fits_the_node_field():
    assert len(decide("mps", Observed(), pipe_directory="/p" * 300)) == 200


def test_mps_answers(pipes):
    (pipes / "answers").touch()
    assert sharecheck.check("mps", pipe_directory=str(pipes)) == ""


def test_mps_with_a_socket_but_no_daemon_answering(pipes):
    assert sharecheck.check("mps", pipe_directory=str(pipes)) == (
        "MPS daemon not answering: nvidia-cuda-mps-control exited 1: "
        "Cannot find MPS control daemon process")


def test_mps_that_hangs_counts_as_not_answering(pipes):
    (pipes / "answers").touch()
    (pipes / "hangs").touch()
    assert sharecheck.check("mps", pipe_directory=str(pipes), timeout=0.5) == (
        "MPS daemon not answering: nvidia-cuda-mps-control gave no answer in 0.5 s")


def test_mps_without_a_control_socket(tmp_path, pipes):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "control").touch()  # a file is not the daemon's socket
    assert sharecheck.check("mps", pipe_directory=str(tmp_path / "other")).startswith(
        "MPS daemon not running (no control socket in ")


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775])
def test_mps_with_a_pipe_directory_others_may_write_is_not_asked(pipes, mode):
    # a session mounts it: its control socket could be a link by now
    (pipes / "answers").touch()
    os.chmod(pipes, mode)
    assert sharecheck.check("mps", pipe_directory=str(pipes)).startswith(
        f"MPS pipe directory {pipes} may be written by others")


def test_mps_with_a_pipe_directory_or_control_socket_that_is_a_link(pipes, tmp_path):
    (pipes / "answers").touch()
    os.symlink(pipes, tmp_path / "linked")
    assert "may be written by others" in sharecheck.check(
        "mps", pipe_directory=str(tmp_path / "linked"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "answers").touch()
    os.symlink(pipes / "control", other / "control")  # the daemon's socket, by a link
    assert sharecheck.check("mps", pipe_directory=str(other)).startswith(
        "MPS daemon not running (no control socket in ")


def test_mps_without_the_control_client(pipes, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert sharecheck.check("mps", pipe_directory=str(pipes)) == (
        "MPS daemon not answering: nvidia-cuda-mps-control not found on PATH")


def test_hami_library(tmp_path):
    lib = tmp_path / "libvgpu.so"
    assert sharecheck.check("hami", library=str(lib)) == f"HAMi-core library absent ({lib})"
    lib.write_bytes(b"\x7fELF")
    assert sharecheck.check("hami", library=str(lib)) == ""


def test_the_service_pass_sets_and_clears_the_node_check(cluster, pipes):
    solo(cluster, gpus=1)
    factory = cluster.world.session_factory
    log, changes = logging.getLogger("test"), []
    # a node whose mode is not said is not checked; an unknown node is no answer
    assert passes.check_shares(factory, "solo-1", str(pipes), "", log, lambda: changes.append(1)) == ""
    assert passes.check_shares(factory, "nobody", str(pipes), "", log, lambda: None) is None
    cluster.set_node("solo-1", sharing_mode="mps")
    reason = passes.check_shares(factory, "solo-1", str(pipes), "", log, lambda: changes.append(1))
    assert reason.startswith("MPS daemon not answering") and changes == [1]
    a = ask(cluster, group="solo", gpu_shares="0.5")
    assert a["state"] == "pending" and reason in a["reasons"][0]["text"]
    # unchanged: nothing written, nobody woken
    passes.check_shares(factory, "solo-1", str(pipes), "", log, lambda: changes.append(1))
    assert changes == [1]
    (pipes / "answers").touch()
    assert passes.check_shares(factory, "solo-1", str(pipes), "", log,
                               lambda: changes.append(1)) == ""
    assert changes == [1, 1]
    with factory() as s:
        assert s.scalar(sa.select(Node.share_check).where(Node.name == "solo-1")) == ""


# -- the spawner refuses a shared start the node cannot enforce ---------------

def _shared(mode: str, share: str = "0.5", **traits):
    from test_spawner_admission import FakeService, model, probe
    allocated = model("allocated", slots={"cpu": "1", "gpu.shares": "0.5"}, domain="acme",
                      project="ml", resource_group="default", node="gpu-7",
                      gpus=[{"index": 0, "uuid": "GPU-0", "share": share, "memory": 2**30}])
    service = FakeService(allocated, allocated)
    return service, probe(service, gpu_sharing_mode=mode, **traits)


async def test_a_shared_mps_start_with_no_daemon_answering_is_refused_and_released(pipes):
    from jupyterhub.spawner import SpawnException
    service, p = _shared("mps", mps_pipe_directory=str(pipes))
    with pytest.raises(SpawnException) as e:
        await p.start()
    assert (e.value.reason, e.value.status_code) == ("unenforced", 503)
    assert e.value.log_message == (
        "not started: GPU shares cannot be enforced on node gpu-7: MPS daemon not answering: "
        "nvidia-cuda-mps-control exited 1: Cannot find MPS control daemon process")
    assert service.released == [("a-1", "cancelled before it started")]
    assert p.allocation_id is None and p.session_env == {}


async def test_a_shared_mps_start_goes_when_the_daemon_answers(pipes):
    (pipes / "answers").touch()
    _, p = _shared("mps", mps_pipe_directory=str(pipes))
    await p.start()
    assert p.session_env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert p.session_env["CUDA_MPS_PIPE_DIRECTORY"] == str(pipes)


@pytest.mark.parametrize("mode, traits", [
    ("framework", {}),  # nothing to check
    ("mps", {"share": "1"}),  # a whole GPU is no share
    ("mps", {"check_shares_at_start": False}),  # the node is elsewhere (Slurm)
    ("hami", {}),  # no library named: the image names its own
])
async def test_starts_that_are_not_checked(tmp_path, mode, traits):
    _, p = _shared(mode, mps_pipe_directory=str(tmp_path / "none"), **traits)
    await p.start()
    assert p.allocation_id == "a-1"


async def test_a_shared_hami_start_without_the_library_is_refused(tmp_path):
    from jupyterhub.spawner import SpawnException
    _, p = _shared("hami", hami_library=str(tmp_path / "libvgpu.so"))
    with pytest.raises(SpawnException) as e:
        await p.start()
    assert e.value.reason == "unenforced" and "HAMi-core library absent" in e.value.log_message


def test_slurm_sessions_are_not_checked_from_the_hub():
    from spawner.slurm import HubgridSlurmSpawner
    assert HubgridSlurmSpawner().check_shares_at_start is False
