"""Browser entry points: OAuth login through the hub."""

from __future__ import annotations

from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
from tornado import web


class OAuthCallbackHandler(HubOAuthCallbackHandler):
    """The hub's OAuth callback, on the service's own HubOAuth instance
    (it holds the PKCE verifier of the login it started)."""

    def initialize(self, service):
        self.hub_auth = service.hub_auth


class HomeHandler(HubOAuthenticated, web.RequestHandler):
    """Browser entry: log in through the hub (OAuth), then land on /me."""

    def initialize(self, service):
        self.service = service
        self.hub_auth = service.hub_auth

    @web.authenticated
    def get(self):
        self.redirect(self.service.api_prefix + "me")
