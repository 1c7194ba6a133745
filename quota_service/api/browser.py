"""Browser entry points: OAuth login through the hub, the landing page the
hub's navbar links (Services -> hubgrid), and the console: the Lab's admin
pages, Summary and Data as a page of the service, usable with no server
running.

The console's page loads a bundle built from the Lab extension's own
components (``labextension/console.webpack.config.js``, served from
``quota_service/console_static``), whose calls go to
``console/hubgrid/api/<path>``: the very API handlers (``routes``), so the
same authorization, authenticated by the service's OAuth cookie. A cookie
is a credential a browser sends by itself: JupyterHub's ``HubOAuth`` takes
it only with the ``_xsrf`` token this page sets (sent back as
``X-XSRFToken``) on every request but a plain page view."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from jupyterhub.services.auth import HubOAuthCallbackHandler
from tornado import template, web

from ..core import authz
from ..core.errors import Unauthenticated
from .base import APIHandler

#: autoescaping templates (tornado's default: every ``{{ }}`` is HTML-escaped)
TEMPLATES = template.Loader(str(Path(__file__).parent / "templates"))
HTML_TYPES = ("text/html", "application/xhtml+xml")
#: the console's built bundle (labextension/console.webpack.config.js; scripts/install.sh builds it)
CONSOLE_STATIC = Path(__file__).resolve().parent.parent / "console_static"
#: the console's entry script in CONSOLE_STATIC
CONSOLE_SCRIPT = "console.js"


class OAuthCallbackHandler(HubOAuthCallbackHandler):
    """The hub's OAuth callback, on the service's own HubOAuth instance
    (it holds the PKCE verifier of the login it started)."""

    def initialize(self, service):
        self.hub_auth = service.hub_auth


def wants_html(accept: str) -> bool:
    """Does an Accept header ask for a page (a browser's does) rather than
    JSON? ``*/*`` alone (curl, requests) and ``application/json`` do not."""
    weight: dict[str, float] = {}
    for part in accept.split(","):
        kind, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        weight[kind.lower()] = max(q, weight.get(kind.lower(), 0.0))
    html = max(weight.get(t, 0.0) for t in HTML_TYPES)
    return html > 0 and html > weight.get("application/json", 0.0)


class BrowserPage(APIHandler):
    """A page for a browser: a browser not logged in logs in through the
    hub (OAuth) and comes back; an API client's missing credential is the
    API's JSON 401."""

    async def prepare(self):
        try:
            await self.authenticate()
        except Unauthenticated:
            if self.service.hub_auth is None or "Authorization" in self.request.headers:
                raise
            self.redirect(self.get_login_url())  # back here once logged in

    def page(self, template_name: str, **values) -> None:
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(TEMPLATES.load(template_name).generate(**values))


class HomeHandler(BrowserPage):
    """``/services/hubgrid/``: a browser not logged in logs in through the
    hub (OAuth), then sees who it is and where hubgrid lives; an API client
    (any credential of the API) is sent on to ``api/v1/me`` as before."""

    resource = "home"

    def get(self):
        """The landing page for a browser; for an API client, a redirect to ``me``."""
        if not wants_html(self.request.headers.get("Accept", "")):
            self.redirect(self.api_prefix + "me")
            return
        p = self.principal
        self.page(
            "home.html",
            name=p.name, domain=p.domain, role=p.role.value, admin=authz.has_admin_pages(p),
            lab_url=f"{self.hub_base_url}user/{quote(p.name, safe='@~')}/lab",
            console_url=self.console_prefix,
            openapi_url=self.api_prefix + "openapi.json", me_url=self.api_prefix + "me",
            docs_url=self.service.docs_url,
        )

    @property
    def console_prefix(self) -> str:
        return self.service.service_prefix.rstrip("/") + "/console/"


class ConsoleHandler(HomeHandler):
    """``/services/hubgrid/console/``: the console page (Summary, Data and,
    for superadmins and domain admins, the admin pages), for any logged-in
    user, with or without a server. It sets the ``_xsrf`` cookie its calls
    send back."""

    resource = "console"

    def get(self):
        """The console page."""
        p = self.principal
        if not (CONSOLE_STATIC / CONSOLE_SCRIPT).is_file():
            raise web.HTTPError(503, "the console is not built: run `bash scripts/install.sh` "
                                     "(it runs `npx webpack --config console.webpack.config.js` "
                                     "in labextension/)")
        if self.service.hub_auth is not None:
            self.xsrf_token  # sets the _xsrf cookie (a page view): the console's calls send it back
        config = {
            "baseUrl": self.console_prefix, "hubUrl": self.hub_base_url, "name": p.name,
            "domain": p.domain, "role": p.role.value, "admin": authz.has_admin_pages(p),
            "homeUrl": self.service.service_prefix,
            "labUrl": f"{self.hub_base_url}user/{quote(p.name, safe='@~')}/lab",
        }
        self.page(
            "console.html",
            name=p.name, role=p.role.value,
            # JSON in a <script> element: "</" is escaped, so no user string ends it
            config=json.dumps(config).replace("</", "<\\/"),
            script=self.console_prefix + "static/" + CONSOLE_SCRIPT,
        )


class ConsoleStaticHandler(web.StaticFileHandler):
    """The console's bundle (code, styles, icons: nothing of anyone's)."""

    def initialize(self, service):
        super().initialize(path=str(CONSOLE_STATIC))

    def set_extra_headers(self, path):
        self.set_header("Cache-Control", "no-cache")
