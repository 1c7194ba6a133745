"""``python -m gateway``: the hub-managed service ``hubgrid-gateway``.

Environment (hub_ext/config.py sets it): ``JUPYTERHUB_SERVICE_URL`` (where
to listen), ``JUPYTERHUB_SERVICE_PREFIX``, ``HUBGRID_API_URL`` (the
service's API), ``HUBGRID_INTERNAL_TOKEN``, ``HUBGRID_GATEWAY_RUN_DIR``
(haproxy's configuration and sockets; default ./gateway-run),
``HUBGRID_GATEWAY_SYNC_INTERVAL`` (seconds, default 2),
``HUBGRID_GATEWAY_COLD_START_TIMEOUT`` (how long a call waits for a replica
of an endpoint that is starting or woken from zero; seconds, default 180),
``HUBGRID_GATEWAY_TABLE_MAX_AGE`` (seconds, default 30: how long the
endpoints and tokens last read from the service are trusted while it cannot
be reached; past that every call is refused with 503 until a sync succeeds,
so a token revoked meanwhile stops working within this bound; keep it a few
sync intervals long, or a slow sync refuses calls), ``HUBGRID_GATEWAY_USER_TTL``
(seconds, default 10: how long the answer about a hub token is kept;
gateway/usercred.py). It exits when the hub that started it is gone
(``HUBGRID_GATEWAY_EXIT_WITH_PARENT=0``: not), and haproxy with it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path
from urllib.parse import urlparse

from .app import TABLE_MAX_AGE, State, make_app
from .balancer import Balancer
from .coldstart import Hold
from .sync import Sync


def seconds(name: str, default: float) -> float:
    """A setting in seconds from the environment: a number above 0."""
    text = os.environ.get(name, "")
    try:
        value = float(text) if text.strip() else default
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise SystemExit(f"gateway: {name} must be a number of seconds above 0, not {text!r}")
    return value


async def main() -> None:
    logging.basicConfig(level=logging.INFO,
                        format="[%(levelname)1.1s %(asctime)s gateway] %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per sync
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10102"))
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/hubgrid-gateway/")
    balancer = Balancer(Path(os.environ.get("HUBGRID_GATEWAY_RUN_DIR", "gateway-run")).resolve())
    state = State(balancer.socket_of,
                  max_age=seconds("HUBGRID_GATEWAY_TABLE_MAX_AGE", TABLE_MAX_AGE))
    sync = Sync(os.environ["HUBGRID_API_URL"], os.environ["HUBGRID_INTERNAL_TOKEN"], balancer,
                state, seconds("HUBGRID_GATEWAY_SYNC_INTERVAL", 2))
    if state.max_age < 2 * sync.interval:
        logging.warning("HUBGRID_GATEWAY_TABLE_MAX_AGE (%g s) is under two sync intervals "
                        "(%g s): one slow sync refuses every call", state.max_age, sync.interval)
    state.hold = Hold(lambda: state.table, lambda: state.changed, sync.ask_wake, sync.nudge,
                      float(os.environ.get("HUBGRID_GATEWAY_COLD_START_TIMEOUT", "180")))
    server = make_app(prefix, state).listen(url.port or 80, url.hostname or "127.0.0.1",
                                            xheaders=True)
    sync.start()
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    # never outlive the hub that started us (a killed hub re-parents us):
    # its successor starts its own gateway on the same port
    parent = os.getppid()

    def orphaned():
        if os.getppid() != parent:
            logging.warning("the hub that started the gateway is gone: stopping")
            done.set()
        else:
            loop.call_later(1.0, orphaned)

    if os.environ.get("HUBGRID_GATEWAY_EXIT_WITH_PARENT", "1") != "0":
        loop.call_later(1.0, orphaned)
    logging.info("serving on %s%s", url.geturl(), prefix)
    await done.wait()
    server.stop()
    await sync.stop()
    await balancer.stop()


if __name__ == "__main__":
    asyncio.run(main())
