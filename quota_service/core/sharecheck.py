"""Can a node enforce GPU shares right now? A pure decision over what was
observed, and a thin IO edge that observes (standard library only: the
service's periodic check and the spawner's check before a shared start both
use it).

- ``mps``: the MPS control daemon answers: its pipe directory holds the
  ``control`` socket and ``nvidia-cuda-mps-control`` (on PATH), pointed at that
  directory, accepts ``get_server_list``. A client that cannot reach the
  daemon would run without limits, so a silent daemon means "cannot enforce".
  Sessions mount the pipe directory: one that others than its owner may
  write (or a link) could have its sockets replaced by a session, so it
  also means "cannot enforce", and nothing there is connected to.
- ``hami``: the HAMi-core library file exists (where a library is named: a
  Docker image names its own with a label, which the node cannot check).
- ``framework`` and no mode: nothing to check (the framework hook is
  cooperative by design, docs/gpus.md).

The answer is a reason ("" when shares can be enforced), what a node's
``share_check`` holds.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass

MPS_CONTROL = "nvidia-cuda-mps-control"
#: how long ``get_server_list`` may take before the daemon counts as not answering
TIMEOUT = 5.0


@dataclass(frozen=True)
class Observed:
    """What the IO edge saw: ``control_socket`` (the pipe directory holds a
    socket named ``control``), ``control_answer`` (None: mps-control accepted
    ``get_server_list``; else why not), ``library`` (the HAMi-core library
    file exists; None: no library named)."""

    control_socket: bool = False
    control_answer: str | None = "not asked"
    library: bool | None = None
    #: the pipe directory is a link, or others than its owner may write it
    pipe_open: bool = False


def decide(mode: str, seen: Observed, *, pipe_directory: str = "", library: str = "") -> str:
    """Why shares cannot be enforced in ``mode`` given ``seen``; "" when they can."""
    if mode == "mps":
        if seen.pipe_open:
            return (f"MPS pipe directory {pipe_directory} may be written by others than its "
                    "owner (sessions mount it): make it 0755 or stricter")[:200]
        if not seen.control_socket:
            return f"MPS daemon not running (no control socket in {pipe_directory})"[:200]
        if seen.control_answer is not None:
            return f"MPS daemon not answering: {seen.control_answer}"[:200]
        return ""
    if mode == "hami" and seen.library is False:
        return f"HAMi-core library absent ({library})"[:200]
    return ""


def has_control_socket(pipe_directory: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(os.path.join(pipe_directory, "control")).st_mode)
    except OSError:
        return False


def pipe_open(pipe_directory: str) -> bool:
    """Whether the pipe directory is a link, or others than its owner may write it."""
    try:
        st = os.lstat(pipe_directory)
    except OSError:
        return False  # missing: no control socket either
    return not stat.S_ISDIR(st.st_mode) or bool(st.st_mode & 0o022)


def ask_control(pipe_directory: str, timeout: float = TIMEOUT) -> str | None:
    """None when ``nvidia-cuda-mps-control`` accepts ``get_server_list``, else why not."""
    exe = shutil.which(MPS_CONTROL)
    if exe is None:
        return f"{MPS_CONTROL} not found on PATH"
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe_directory}
    try:
        done = subprocess.run([exe], input="get_server_list\n", env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"{MPS_CONTROL} gave no answer in {timeout:g} s"
    except OSError as e:
        return f"{MPS_CONTROL}: {e.strerror or e}"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return f"{MPS_CONTROL} exited {done.returncode}" + (f": {said[-1]}" if said else "")
    return None


def observe(mode: str, *, pipe_directory: str = "", library: str = "",
            timeout: float = TIMEOUT) -> Observed:
    """Look at this machine as ``mode`` needs (blocking: run it in a thread)."""
    if mode == "mps":
        if pipe_open(pipe_directory):
            return Observed(pipe_open=True)
        sock = has_control_socket(pipe_directory)
        return Observed(sock, ask_control(pipe_directory, timeout) if sock else "not asked")
    if mode == "hami" and library:
        return Observed(library=os.path.isfile(library))
    return Observed()


def check(mode: str, *, pipe_directory: str = "", library: str = "",
          timeout: float = TIMEOUT) -> str:
    """Observe and decide: the node's ``share_check`` ("" when enforceable)."""
    seen = observe(mode, pipe_directory=pipe_directory, library=library, timeout=timeout)
    return decide(mode, seen, pipe_directory=pipe_directory, library=library)
