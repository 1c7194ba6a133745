"""Generate docs/config-reference.md from the traitlets help texts.

    .venv/bin/python scripts/configdoc.py > docs/config-reference.md

A docs tool, not part of any package: it imports the service, the
authenticator and the spawners, which the hub-side ``hub_ext`` must not.
Run as a script, it documents the checkout it sits in.
``tests/test_docs.py`` fails when the committed file is out of date.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout first

from authenticator import HubgridAuthenticator  # noqa: E402
from quota_service.app import HubgridService  # noqa: E402
from spawner import HubgridLocalProcessSpawner, HubgridSpawnerMixin  # noqa: E402
from spawner.docker import HubgridDockerSpawner  # noqa: E402
from spawner.slurm import HubgridSlurmSpawner, SlurmJobSpawner  # noqa: E402

COMMAND = "python scripts/configdoc.py > docs/config-reference.md"

CLASSES = [HubgridService, HubgridAuthenticator, HubgridSpawnerMixin,
           HubgridLocalProcessSpawner, HubgridDockerSpawner, SlurmJobSpawner, HubgridSlurmSpawner]

# defaults that depend on the environment are shown as what they read
DYNAMIC = {
    ("HubgridService", "config_file"): "$HUBGRID_CONFIG_FILE, else none",
    ("HubgridService", "db_url"): "$HUBGRID_DB_URL, else sqlite:///hubgrid.sqlite",
    ("HubgridService", "bootstrap_superadmin"): "$HUBGRID_BOOTSTRAP_SUPERADMIN, else empty",
    ("HubgridService", "internal_token"): "$HUBGRID_INTERNAL_TOKEN",
    ("HubgridService", "service_url"): "$JUPYTERHUB_SERVICE_URL",
    ("HubgridService", "service_prefix"): "$JUPYTERHUB_SERVICE_PREFIX",
    ("HubgridService", "hub_base_url"): "$JUPYTERHUB_BASE_URL, else /",
    ("HubgridService", "session_log_dir"):
        "session-logs next to the SQLite database, else in the working directory",
    ("HubgridLocalProcessSpawner", "output_dir"): "local-sessions in the hub's working directory",
    ("HubgridService", "resource_presets"):
        "small (0.5 CPU, 1 GiB), medium (1 CPU, 2 GiB; default), large (2 CPU, 4 GiB)",
    ("HubgridService", "vfolder_hosts"):
        "{'local': {'path': 'vfolders'}}, next to the SQLite database, else in the working directory",
}


def _default(cls, name, trait) -> str:
    if (cls.__name__, name) in DYNAMIC:
        return DYNAMIC[(cls.__name__, name)]
    value = trait.default()
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)


def documented_traits(cls) -> dict:
    """The settings ``cls`` adds: its own, and those of its mixins from the
    same package that have no section of their own (e.g. ``HubgridService``'s
    ``runtime.settings`` groups); not those of its library base classes."""
    top = cls.__module__.split(".")[0]
    return {name: trait for name, trait in cls.class_traits(config=True).items()
            if trait.this_class is cls or (trait.this_class.__module__.split(".")[0] == top
                                           and trait.this_class not in CLASSES)}


def render() -> str:
    out = [
        "# Configuration reference",
        "",
        "Generated from the traitlets help texts by",
        f"`{COMMAND}`; do not edit by hand.",
        "",
        "- `HubgridAuthenticator` settings go in `jupyterhub_config.py`",
        "  (`c.HubgridAuthenticator.<name> = ...`); so do the spawner mixin's",
        "  (`c.HubgridSpawnerMixin.<name>`, or under the spawner class used).",
        "- `HubgridService` runs as its own process: its settings go in the service's",
        "  own config file, `hub_ext.config.configure(c, ..., service_config_file=PATH)`,",
        "  a Python file of `c.HubgridService.<name> = ...` lines (setting them in",
        "  `jupyterhub_config.py` has no effect). `configure()` itself passes",
        "  `db_url`, the first superadmin, the default domain and the internal token.",
        "",
    ]
    for cls in CLASSES:
        out += [f"## {cls.__name__}", "", inspect.getdoc(cls).split("\n\n")[0], ""]
        for name, trait in sorted(documented_traits(cls).items()):
            out += [
                f"### `c.{cls.__name__}.{name}`",
                "",
                f"- type: `{type(trait).__name__}`",
                f"- default: `{_default(cls, name, trait)}`",
                "",
                # EntryPointType appends this machine's installed entry points
                inspect.cleandoc((trait.help or "(no help)").split("Currently installed:")[0]),
                "",
            ]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
