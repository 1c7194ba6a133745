"""hubgrid spawners declare JupyterHub's ``apply_user_options`` hook: the
hub no longer warns "Received unhandled user_options" at every spawn, and
the options still reach the allocation request exactly as before. Test
doubles of the backend and the service, no hub."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from jupyterhub.spawner import Spawner

from spawner import HubgridLocalProcessSpawner
from spawner.docker import HubgridDockerSpawner
from spawner.mixin import HubgridSpawnerMixin, options_read_at_start
from spawner.slurm import HubgridSlurmSpawner

OPTIONS = {"project": "ml", "resource_group": "gpuhalf", "cpu": "1", "mem": "2G",
           "gpu_shares": "0.5"}
ALLOCATED = {"id": "a-1", "state": "allocated", "reasons": [], "release_reason": None,
             "slots": {"cpu": "1", "mem": "2147483648", "gpu.shares": "0.5"},
             "gpus": [{"index": 0, "share": "0.5"}], "domain": "acme", "project": "ml",
             "resource_group": "gpuhalf", "node": "n-1"}


class StartsAtOnce(Spawner):
    """A backend whose start returns at once."""

    async def start(self):
        return "http://127.0.0.1:1"

    async def poll(self):
        return None

    async def stop(self, now=False):
        pass


class RecordingService:
    """The internal API: allocated at once; the request's body noted."""

    def __init__(self):
        self.bodies: list[dict] = []

    async def allocate(self, body):
        self.bodies.append(body)
        return ALLOCATED


class Probe(HubgridSpawnerMixin, StartsAtOnce):
    service: RecordingService | None = None

    @property
    def hubgrid(self):
        return self.service


def spawner(cls, log: logging.Logger):
    return cls(user=SimpleNamespace(name="newton", url="/user/newton/"),
               orm_spawner=SimpleNamespace(name="gpuhalf", display_name="gpuhalf", server=None),
               authenticator=SimpleNamespace(service_timeout=20), user_options=dict(OPTIONS),
               log=log)


async def test_hubgrid_options_are_handled_without_a_warning_and_still_applied(caplog):
    log = logging.getLogger("test.spawner.user_options")
    caplog.set_level(logging.WARNING, logger=log.name)
    plain = spawner(StartsAtOnce, log)  # the capture sees the warning of a plain spawner
    await plain._run_apply_user_options(plain.user_options)
    assert [r.getMessage() for r in caplog.records] == [
        "Received unhandled user_options for newton:gpuhalf: "
        "project, resource_group, cpu, mem, gpu_shares"]
    caplog.clear()
    p = spawner(Probe, log)
    p.service = RecordingService()
    await p._run_apply_user_options(p.user_options)
    assert caplog.records == []
    assert await p.start() == "http://127.0.0.1:1"
    [body] = p.service.bodies
    assert (body["project"], body["resource_group"], body["server_name"]) == (
        "ml", "gpuhalf", "gpuhalf")
    assert body["slots"] == {"cpu": "1", "mem": "2147483648", "gpu.shares": "0.5"}
    assert (p.cpu_limit, p.mem_limit) == (1.0, 2 * 2**30)
    assert caplog.records == []


@pytest.mark.parametrize("cls", [HubgridLocalProcessSpawner, HubgridDockerSpawner,
                                 HubgridSlurmSpawner])
def test_every_hubgrid_spawner_declares_the_hook(cls):
    assert cls().apply_user_options is options_read_at_start


def test_an_admins_own_hook_still_wins():
    def mine(spawner, user_options):
        pass

    assert HubgridLocalProcessSpawner(apply_user_options=mine).apply_user_options is mine


class ChoosingService(RecordingService):
    """... whose spawn choices are those of the spawn form's tests."""

    async def spawn_choices(self, user):
        from test_spawn_options import CHOICES

        return CHOICES


async def test_a_request_without_a_size_asks_for_the_default_size_and_the_form_shows_it():
    log = logging.getLogger("test.spawner.default_size")
    service = ChoosingService()
    for options in ({}, {"cpu": "2"}):
        p = spawner(Probe, log)
        p.default_size = {"cpu": "0.5", "mem": "1G"}
        p.service = service
        p.user_options = {"project": "ml", "resource_group": "gpuhalf", **options}
        await p.start()
    assert [b["slots"] for b in service.bodies] == [
        {"cpu": "0.5", "mem": str(2**30)}, {"cpu": "2", "mem": str(2**30)}]
    from bs4 import BeautifulSoup

    form = BeautifulSoup(await p._hubgrid_form(), "html.parser")
    assert (form.select_one("input[name=cpu]")["value"],
            form.select_one("input[name=mem]")["value"]) == ("0.5", "1G")


@pytest.mark.parametrize("size, problem", [
    ({"gpu": "1"}, "default_size: only cpu and mem, not gpu"),
    ({"cpu": "lots"}, "default_size: cpu"),
    ({"mem": "-1G"}, "default_size: slot 'mem'"),
])
def test_a_default_size_that_is_not_a_size_is_refused_at_configuration(size, problem):
    from traitlets import TraitError

    with pytest.raises(TraitError, match=problem):
        HubgridLocalProcessSpawner(default_size=size)
