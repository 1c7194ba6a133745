"""hub_ext.servicewatch: the hub checks its managed services every
POLL_INTERVAL seconds (its service spawner takes no configuration and polls
every 30 s by default), user servers keep the hub's default; configure()
installs it, once."""

from __future__ import annotations

from jupyterhub.services import service
from jupyterhub.spawner import LocalProcessSpawner
from traitlets.config import Config

from hub_ext import config, servicewatch


def test_configure_makes_managed_services_polled_every_few_seconds(tmp_path):
    c = Config()
    config.configure(c, state_dir=tmp_path)
    config.configure(Config(), state_dir=tmp_path)  # again: still one subclass
    spawner = service._ServiceSpawner(cmd=["true"])
    assert spawner.poll_interval == servicewatch.POLL_INTERVAL < 30
    # not stacked twice: the hub's own _ServiceSpawner right under it
    assert [k.__name__ for k in service._ServiceSpawner.__mro__[:3]] == [
        "_ServiceSpawner", "_ServiceSpawner", "LocalProcessSpawner"]
    assert not getattr(service._ServiceSpawner.__mro__[1], "hubgrid_prompt", False)
    # users' servers: the hub's default, and what the admin configures
    assert LocalProcessSpawner().poll_interval == 30
    assert LocalProcessSpawner(config=Config({"Spawner": {"poll_interval": 7}})).poll_interval == 7
