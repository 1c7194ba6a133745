"""Copies the hook into a site directory (see the package)."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = ("hubgrid_gpu_hook.py", "hubgrid-gpu-hook.pth")


def install(site_dir: str | None = None) -> Path:
    """Copy the hook into ``site_dir`` (default: purelib); returns the dir."""
    target = Path(site_dir or sysconfig.get_paths()["purelib"])
    for name in FILES:
        shutil.copyfile(HERE / name, target / name)
    return target
