"""The service process's life next to the hub that manages it.

- ``claim_pid_file``: a stale service (one whose hub was killed) must not lock
  a new one out of its port: the new one ends it first.
- ``parent_gone``: the service must not outlive the hub that started it; when
  the parent dies the kernel re-parents us (to PID 1 or a subreaper) and we
  stop.
- ``listen``: bind the port, retrying briefly while a stale service lets go.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import time
from pathlib import Path

#: what a hubgrid service's command line contains (``python -m quota_service``)
SERVICE_MARK = b"quota_service"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purpose (its parent has not reaped it yet)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def stale_service(pid_file: Path) -> int | None:
    """The PID of another live hubgrid service recorded in ``pid_file``."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    if pid == os.getpid() or not _alive(pid) or SERVICE_MARK not in _cmdline(pid):
        return None
    return pid


def end_process(pid: int, grace: float, log: logging.Logger) -> None:
    """SIGTERM ``pid``, then SIGKILL after ``grace`` seconds."""
    log.warning("ending stale hubgrid service (pid %d) left by an earlier hub", pid)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    log.warning("stale hubgrid service (pid %d) ignored SIGTERM; killing it", pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def claim_pid_file(pid_file: Path, log: logging.Logger, grace: float = 5.0) -> None:
    """End a stale service recorded in ``pid_file``, then record ourselves."""
    pid = stale_service(pid_file)
    if pid is not None:
        end_process(pid, grace, log)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = pid_file.with_name(pid_file.name + f".{os.getpid()}")
    tmp.write_text(f"{os.getpid()}\n")
    tmp.replace(pid_file)


def release_pid_file(pid_file: Path) -> None:
    """Remove ``pid_file`` if it still names this process."""
    try:
        if int(pid_file.read_text().strip()) == os.getpid():
            pid_file.unlink()
    except (OSError, ValueError):
        pass


def parent_gone(parent_pid: int) -> bool:
    """True once the process that started us has died (we were re-parented)."""
    return os.getppid() != parent_pid


async def watch_parent(parent_pid: int, stop: asyncio.Event, interval: float,
                       log: logging.Logger) -> None:
    """Set ``stop`` when the parent process dies (checked every ``interval`` s)."""
    while not stop.is_set():
        if parent_gone(parent_pid):
            log.warning("the hub that started this service (pid %d) is gone; stopping",
                        parent_pid)
            stop.set()
            return
        await asyncio.sleep(interval)


def port_in_use(port: int, address: str) -> bool:
    """Whether another socket holds ``address:port`` (the probe closes its own)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def listen(server, port: int, address: str, log: logging.Logger, wait: float = 10.0) -> None:
    """``server.listen``, after waiting up to ``wait`` seconds for the port to
    be let go (a stale service that was just ended)."""
    deadline = time.monotonic() + wait
    while port_in_use(port, address):
        if time.monotonic() > deadline:
            raise OSError(errno.EADDRINUSE, f"port {port} on {address} is still in use after "
                          f"{wait:g} s (another program holds it)")
        log.info("port %d is in use; waiting for it", port)
        time.sleep(0.5)
    server.listen(port, address)
