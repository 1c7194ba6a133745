"""hubgrid spawners: admission and placement by the hubgrid service."""

from jupyterhub.spawner import SimpleLocalProcessSpawner

from .mixin import HubgridSpawnerMixin


class HubgridLocalProcessSpawner(HubgridSpawnerMixin, SimpleLocalProcessSpawner):
    """Local processes, for the embedded demo only: NOT isolated (every server
    runs as the hub's user and sees the others); limits are advisory."""


__all__ = ["HubgridSpawnerMixin", "HubgridLocalProcessSpawner"]
