"""How the hub starts configurable-http-proxy: with hub_ext/proxy/unix_keepalive.mjs
preloaded, so that the proxy keeps its connections to isolated sessions'
Unix sockets alive (the file says why)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PRELOAD = Path(__file__).parent / "proxy" / "unix_keepalive.mjs"


def proxy_command(found: str | None = None) -> list[str]:
    """``c.ConfigurableHTTPProxy.command``: ``node --import <preload> <the
    configurable-http-proxy on PATH>``; JupyterHub's default when it is not
    on PATH (the hub then says so) or node is missing."""
    chp = found if found is not None else shutil.which("configurable-http-proxy")
    node = shutil.which("node")
    if not chp or not node:
        return ["configurable-http-proxy"]
    return [node, "--import", PRELOAD.as_uri(), os.path.realpath(chp)]
