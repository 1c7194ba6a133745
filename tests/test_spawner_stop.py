"""Why a hub server's allocation ended: a stop someone asked for (its owner,
an admin, the culler: JupyterHub calls ``stop()``) reads "stopped"; only a
server ``poll()`` finds gone when nobody was stopping it reads "the server is
no longer running". Test doubles of the backend and the service, no hub."""

from __future__ import annotations

from types import SimpleNamespace

from jupyterhub.spawner import LocalProcessSpawner

from spawner.mixin import HubgridSpawnerMixin

ALLOCATED = {"id": "a-1", "state": "allocated", "reasons": [], "release_reason": None,
             "slots": {"cpu": "1"}, "gpus": [], "domain": "acme", "project": "ml",
             "resource_group": "default", "node": "n-1"}


class RecordingService:
    """The internal API for one spawn: allocated at once; releases noted."""

    def __init__(self):
        self.released: list[tuple[str, str]] = []

    async def allocate(self, body):
        return ALLOCATED

    async def allocation(self, alloc_id, wait=None):
        return ALLOCATED

    async def release(self, alloc_id, reason, exit_code=None):
        self.released.append((alloc_id, reason))


class ProcessThatDiesWhenSignalled(LocalProcessSpawner):
    """LocalProcessSpawner's own stop() (SIGINT, then polls until the
    process is gone), over a pretend process: alive until signalled, or
    until it crashes."""

    signalled = False
    crashed = False

    async def start(self):
        return "http://127.0.0.1:1"

    async def poll(self):
        return 0 if self.signalled or self.crashed else None

    async def _signal(self, sig):
        self.signalled = True
        return True


class Probe(HubgridSpawnerMixin, ProcessThatDiesWhenSignalled):
    service: RecordingService | None = None

    @property
    def hubgrid(self):
        return self.service


async def started() -> Probe:
    p = Probe(user=SimpleNamespace(name="alice", url="/user/alice/"),
              authenticator=SimpleNamespace(service_timeout=20),
              user_options={"project": "ml", "cpu": "1", "mem": "1G"}, death_interval=0.01)
    p.service = RecordingService()
    await p.start()
    assert p.allocation_id == "a-1"
    return p


async def test_a_stop_someone_asked_for_reads_stopped_even_when_the_backend_polls():
    """JupyterHub's User.stop polls first (alive), then calls stop(); the
    local backend's stop polls again until the process is gone."""
    p = await started()
    assert await p.poll() is None
    await p.stop()
    assert p.service.released == [("a-1", "stopped")]
    assert p.allocation_id is None


async def test_a_stop_right_away_reads_stopped():
    p = await started()
    await p.stop(now=True)
    assert p.service.released == [("a-1", "stopped")]


async def test_a_server_found_dead_by_poll_is_no_longer_running():
    p = await started()
    p.crashed = True
    assert await p.poll() == 0
    assert p.service.released == [("a-1", "the server is no longer running")]
    await p.stop()  # the hub stopping what already died releases nothing again
    assert p.service.released == [("a-1", "the server is no longer running")]
