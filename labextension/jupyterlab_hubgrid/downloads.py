"""Downloads without a credential in the URL.

A browser downloads a file by following a link, and a link cannot carry an
``Authorization`` header: the Data panel used to put the server's token in
the URL (``?token=...``), where it lands in the browser's history, the
proxy's logs and any ``Referer``. Instead the Lab asks for a *download
ticket* with an ordinary authenticated call (``POST
<base_url>hubgrid/download-tickets`` ``{"folder": ID, "path": P}``: Jupyter's
login and XSRF checks, the server's owner only), and follows the link it
answers, ``<base_url>hubgrid/download/<ticket>``. A ticket:

- names one file of one folder, nothing else (the path is fixed in it);
- works once: the first GET takes it (a second answers 404);
- expires ``TICKET_TTL`` seconds (60) after it was issued;
- is 256 random bits (``secrets.token_urlsafe``), kept in this server's
  memory only (a restart forgets them), at most ``MAX_TICKETS`` at once.

The download itself is forwarded like any other (``routes.ForwardHandler``:
the service's answer streamed at the browser's pace, with the server's
own credential, which the browser never sees).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Callable

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from .routes import ForwardHandler, HubgridLab

#: seconds a ticket may wait for its download
TICKET_TTL = 60.0
#: tickets outstanding at once (the oldest go first)
MAX_TICKETS = 1000
#: where tickets are asked for and used, under the server's base_url
TICKETS = "hubgrid/download-tickets"
DOWNLOAD = "hubgrid/download/"
#: a folder id as the service makes them (no slash, nothing to escape)
FOLDER_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Ticket:
    folder: str
    path: str
    expires: float


@dataclass
class Tickets:
    """The outstanding tickets of this server: issue, take (once).

    In memory on purpose: a ticket lives a minute in this one server, and a
    restart may well forget it (the user clicks again). The service's tus
    uploads (quota_service/storage/tus.py) keep their state on disk instead,
    because an upload must survive a restart and runs for hours; and this
    package runs in the session's image, where the service's code is not."""

    ttl: float = TICKET_TTL
    clock: Callable[[], float] = time.monotonic
    _open: dict[str, Ticket] = field(default_factory=dict)

    def issue(self, folder: str, path: str) -> str:
        now = self.clock()
        self._prune(now)
        while len(self._open) >= MAX_TICKETS:
            self._open.pop(next(iter(self._open)))
        ticket = secrets.token_urlsafe(32)
        self._open[ticket] = Ticket(folder, path, now + self.ttl)
        return ticket

    def take(self, ticket: str) -> Ticket | None:
        """The ticket's file, once, while it is valid; None otherwise."""
        found = self._open.pop(ticket, None)
        if found is None or found.expires < self.clock():
            return None
        return found

    def _prune(self, now: float) -> None:
        for key in [k for k, t in self._open.items() if t.expires < now]:
            del self._open[key]


class TicketHandler(APIHandler):
    """``POST hubgrid/download-tickets``: a one-use link to download one file."""

    def initialize(self, config: HubgridLab, tickets: Tickets):
        self.hubgrid, self.tickets = config, tickets

    @web.authenticated
    async def post(self):
        owner = self.hubgrid.owner
        if owner and self.current_user.username != owner:
            raise web.HTTPError(403, f"hubgrid: only {owner}, who owns this server, may "
                                     "download through it")
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "hubgrid: the body is not JSON") from None
        folder = body.get("folder") if isinstance(body, dict) else None
        path = body.get("path") if isinstance(body, dict) else None
        if not isinstance(folder, str) or not FOLDER_ID.fullmatch(folder):
            raise web.HTTPError(400, "hubgrid: folder: a folder id")
        if not isinstance(path, str) or not path or len(path) > 4096:
            raise web.HTTPError(400, "hubgrid: path: the file's path in the folder")
        ticket = self.tickets.issue(folder, path)
        self.set_status(201)
        self.set_header("Cache-Control", "no-store")
        self.finish({"url": url_path_join(self.base_url, DOWNLOAD, ticket),
                     "expires_in": int(self.tickets.ttl)})


class TicketDownloadHandler(ForwardHandler):
    """``GET hubgrid/download/<ticket>``: the ticket's file, streamed from the
    service; the ticket is the only credential (Jupyter's login is not
    asked: the link is followed by the browser, maybe in a new tab)."""

    _ticket: Ticket | None = None

    def initialize(self, config: HubgridLab, tickets: Tickets):
        super().initialize(config)
        self.tickets = tickets

    def check_owner(self) -> None:
        """The ticket was issued to the server's owner."""

    def upstream(self, path: str) -> str:
        url = super().upstream(path)
        return url.split("?", 1)[0] + "?" + _query(self._ticket.path)

    @allow_unauthenticated
    async def get(self, ticket):
        found = self.tickets.take(ticket)
        if found is None:
            raise web.HTTPError(404, "hubgrid: this download link was used already or has "
                                     "expired: download the file again from the Data panel")
        self._ticket = found
        self.set_header("Cache-Control", "no-store")
        self.set_header("Referrer-Policy", "no-referrer")
        await self.forward(f"vfolders/{found.folder}/download")

    #: only GET: the other verbs of the forwarder answer 405 here
    SUPPORTED_METHODS = ("GET",)


def _query(path: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"path": path})


def setup_download_handlers(web_app, config: HubgridLab) -> Tickets:
    """Add the ticket routes to ``web_app``; returns the tickets' store."""
    tickets = Tickets()
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [
        (url_path_join(base, TICKETS), TicketHandler, {"config": config, "tickets": tickets}),
        (url_path_join(base, DOWNLOAD, "([A-Za-z0-9_-]{20,100})"), TicketDownloadHandler,
         {"config": config, "tickets": tickets}),
    ])
    web_app.settings["hubgrid_download_tickets"] = tickets
    return tickets
