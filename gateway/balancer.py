"""haproxy, run and reconfigured by the gateway: an IO edge.

``Balancer.apply(routes)`` writes the configuration ``haproxycfg.render``
gives, checks it (``haproxy -c``) and, when it changed, reloads haproxy
(master-worker mode: SIGUSR2 to the master; the old worker finishes the
calls it carries, streamed answers included) and waits until the new worker
serves exactly the new routes. ``status()`` reads each replica's health as
haproxy sees it (its admin socket's ``show stat``).
"""

from __future__ import annotations

import asyncio
import csv
import ctypes
import ctypes.util
import io
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from . import haproxycfg
from .haproxycfg import Route


def _die_with_parent() -> None:
    """In haproxy's child before exec: SIGTERM when the gateway dies, even
    killed (Linux's PR_SET_PDEATHSIG), so no balancer outlives it."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class BalancerError(RuntimeError):
    """haproxy is missing, refused its configuration or did not come up."""


@dataclass(frozen=True)
class ServerState:
    """One replica as haproxy sees it."""

    endpoint_id: str
    name: str
    up: bool
    status: str        # haproxy's: UP, DOWN, "UP 1/3" (going down), "DOWN 1/1", MAINT
    check: str         # last check: L7OK, L7STS (wrong status), L4CON (refused), ...
    check_detail: str  # its text, e.g. "HTTP status check returned code <503>"
    down_transitions: int
    sessions: int      # calls it has served
    in_flight: int = 0  # calls it is answering now


class Balancer:
    def __init__(self, run_dir: Path, binary: str | None = None):
        self.run_dir = Path(run_dir)
        self.binary = binary or shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.config = self.run_dir / "haproxy.cfg"
        self.proc: asyncio.subprocess.Process | None = None
        self.rendered: str | None = None
        self.lock = asyncio.Lock()

    def socket_of(self, endpoint_id: str) -> Path:
        """The Unix socket the gateway sends an endpoint's calls to."""
        return self.run_dir / haproxycfg.socket_name(endpoint_id)

    async def _run(self, *args: str) -> tuple[int, str]:
        p = await asyncio.create_subprocess_exec(
            self.binary, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await p.communicate()
        return p.returncode, out.decode(errors="replace")

    async def apply(self, routes: list[Route]) -> bool:
        """Serve ``routes``; True when the configuration changed."""
        text = haproxycfg.render(routes, str(self.run_dir))
        async with self.lock:
            if not routes:  # nothing to balance: no haproxy
                changed = self.running
                await self._stop()
                return changed
            if text == self.rendered and self.running:
                return False
            if not os.path.exists(self.binary):
                raise BalancerError(f"haproxy not found at {self.binary} (apt install haproxy)")
            self.run_dir.mkdir(parents=True, exist_ok=True)
            os.chmod(self.run_dir, 0o700)
            tmp = self.config.with_suffix(".new")
            tmp.write_text(text)
            code, out = await self._run("-c", "-q", "-f", str(tmp))
            if code != 0:
                raise BalancerError(f"haproxy refused its configuration: {out.strip()[-2000:]}")
            os.replace(tmp, self.config)
            if self.running:
                self.proc.send_signal(signal.SIGUSR2)
            else:
                self.proc = await asyncio.create_subprocess_exec(
                    self.binary, "-W", "-db", "-f", str(self.config),
                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
                    start_new_session=True, preexec_fn=_die_with_parent)
            self.rendered = text
            await self._wait_serving(routes)
            return True

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def _wait_serving(self, routes: list[Route], timeout: float = 15.0) -> None:
        want = {(r.endpoint_id, rep.name) for r in routes for rep in r.replicas}
        want_backends = {r.endpoint_id for r in routes}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if not self.running:
                raise BalancerError(f"haproxy exited with code {self.proc.returncode}")
            try:
                rows = await self._stat()
                have = {(s.endpoint_id, s.name) for s in rows if s.name not in (
                    "BACKEND", "FRONTEND")}
                backends = {s.endpoint_id for s in rows if s.name == "BACKEND"}
                if have == want and backends == want_backends and all(
                        self.socket_of(e).exists() for e in want_backends):
                    return
            except OSError:
                pass
            if loop.time() > deadline:
                raise BalancerError("haproxy did not serve its new configuration in time")
            await asyncio.sleep(0.05)

    async def _command(self, command: str) -> str:
        reader, writer = await asyncio.open_unix_connection(str(self.run_dir / "admin.sock"))
        try:
            writer.write(command.encode() + b"\n")
            await writer.drain()
            return (await reader.read()).decode(errors="replace")
        finally:
            writer.close()

    async def _stat(self) -> list[ServerState]:
        text = await self._command("show stat")
        rows = list(csv.DictReader(io.StringIO(text.lstrip("# "))))
        out = []
        for row in rows:
            px = row.get("pxname") or ""
            if not px.startswith("be_"):
                continue
            status = row.get("status") or ""
            out.append(ServerState(
                endpoint_id=px[3:], name=row.get("svname") or "",
                up=status.startswith("UP") or status == "no check",
                status=status, check=(row.get("check_status") or "").lstrip("* "),
                check_detail=row.get("check_desc") or "",
                down_transitions=int(row.get("chkdown") or 0),
                sessions=int(row.get("stot") or 0), in_flight=int(row.get("scur") or 0)))
        return out

    async def status(self) -> list[ServerState]:
        """Each replica's state (backend summary rows left out); none while
        haproxy does not run (no endpoint)."""
        if not self.running:
            return []
        return [s for s in await self._stat() if s.name != "BACKEND"]

    async def stop(self) -> None:
        async with self.lock:
            await self._stop()

    async def _stop(self) -> None:
        if self.running:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        self.rendered = None
