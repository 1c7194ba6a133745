"""``python -m spawner.gpuhook install [SITE_DIR]``: see the package."""

from __future__ import annotations

import sys

from .installer import install


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "install" or len(argv) > 2:
        print("usage: python -m spawner.gpuhook install [SITE_DIR]", file=sys.stderr)
        return 2
    print(f"hubgrid GPU hook installed in {install(argv[1] if len(argv) == 2 else None)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
