"""``<base_url>hubgrid/this-session``: which hubgrid session this server is,
for its owner's Lab (the Data panel's "This session": the folders mounted
here, "Mount in this session").

The answer is this server's own environment, set by its spawner:
``allocation`` (``$HUBGRID_ALLOCATION``; "" outside a hubgrid session) and
``live_folders`` (``$HUBGRID_LIVE_FOLDERS``: where folders mounted while it
runs appear; "" when this session cannot have any).
"""

from __future__ import annotations

import os

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from .routes import HubgridLab, owner_only

INFO = "hubgrid/this-session"


def session_info(environ) -> dict:
    return {"allocation": environ.get("HUBGRID_ALLOCATION", "").strip(),
            "live_folders": environ.get("HUBGRID_LIVE_FOLDERS", "").strip()}


class SessionInfoHandler(APIHandler):
    """``GET``: :func:`session_info` of this server, for its owner."""

    def initialize(self, config: HubgridLab):
        self.hubgrid = config

    @web.authenticated
    def get(self):
        owner_only(self.hubgrid, self.current_user.username)
        self.finish(session_info(os.environ))


def setup_session_info_handler(web_app, config: HubgridLab) -> None:
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base, INFO), SessionInfoHandler,
                                  {"config": config})])
