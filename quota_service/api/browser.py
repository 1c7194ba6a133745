"""Browser entry points: OAuth login through the hub, and the landing page
the hub's navbar links (Services -> hubgrid)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from jupyterhub.services.auth import HubOAuthCallbackHandler
from tornado import template

from ..core import authz
from ..core.errors import Unauthenticated
from .base import APIHandler

#: autoescaping templates (tornado's default: every ``{{ }}`` is HTML-escaped)
TEMPLATES = template.Loader(str(Path(__file__).parent / "templates"))
HTML_TYPES = ("text/html", "application/xhtml+xml")


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


class HomeHandler(APIHandler):
    """``/services/hubgrid/``: a browser not logged in logs in through the
    hub (OAuth), then sees who it is and where hubgrid lives; an API client
    (any credential of the API) is sent on to ``api/v1/me`` as before."""

    resource = "home"

    async def prepare(self):
        try:
            await self.authenticate()
        except Unauthenticated:
            if self.service.hub_auth is None or "Authorization" in self.request.headers:
                raise
            self.redirect(self.get_login_url())  # back here once logged in

    def get(self):
        """The landing page for a browser; for an API client, a redirect to ``me``."""
        if not wants_html(self.request.headers.get("Accept", "")):
            self.redirect(self.api_prefix + "me")
            return
        p = self.principal
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(TEMPLATES.load("home.html").generate(
            name=p.name, domain=p.domain, role=p.role.value, admin=authz.has_admin_pages(p),
            lab_url=f"{self.hub_base_url}user/{quote(p.name, safe='@~')}/lab",
            openapi_url=self.api_prefix + "openapi.json", me_url=self.api_prefix + "me",
            docs_url=self.service.docs_url,
        ))
