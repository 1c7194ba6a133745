"""hubgrid spawners: admission and placement by the hubgrid service."""

from .local import HubgridLocalProcessSpawner
from .mixin import HubgridSpawnerMixin

__all__ = ["HubgridSpawnerMixin", "HubgridLocalProcessSpawner"]
