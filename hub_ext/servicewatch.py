"""Managed services started again within seconds of a crash.

JupyterHub starts a managed service (the hubgrid service, the serving
gateway) again when it finds the process gone, and looks every
``Spawner.poll_interval`` seconds: 30 by default, and its service spawner
takes no configuration. Every session's admission, release and the Lab
pages go through the hubgrid service, so a crash cost up to 30 s (15 on
average) of refusals. This gives the hub's service spawner a poll of
``POLL_INTERVAL`` seconds (checking a local child process is one
``waitpid``); user servers keep theirs.
"""

from __future__ import annotations

import logging

from traitlets import default

#: seconds between the hub's checks that a managed service still runs
POLL_INTERVAL = 2.0

log = logging.getLogger("JupyterHub")


def install() -> bool:
    """Make the hub's managed services' spawner poll every ``POLL_INTERVAL``
    seconds (idempotent); False when this JupyterHub has no such spawner to
    extend (its default stays)."""
    from jupyterhub.services import service

    base = getattr(service, "_ServiceSpawner", None)
    if base is None:
        log.warning("hubgrid: this JupyterHub has no _ServiceSpawner: a crashed service is "
                    "started again at the hub's default poll")
        return False
    if getattr(base, "hubgrid_prompt", False):
        return True

    class PromptServiceSpawner(base):
        hubgrid_prompt = True

        @default("poll_interval")
        def _poll_interval_default(self):
            return POLL_INTERVAL

    PromptServiceSpawner.__name__ = PromptServiceSpawner.__qualname__ = "_ServiceSpawner"
    service._ServiceSpawner = PromptServiceSpawner
    return True
