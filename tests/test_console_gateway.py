"""The console's forward to the serving gateway (``console/hubgrid/gateway/``,
quota_service/api/consolegateway.py) through the service's real app, no hub:
only the Chat page's calls are forwarded, a service without a gateway says
so, and a keypair caller (no hub login to pass on) is refused before anything
is sent; the hub's configuration tells the service where its gateway is.
tests/test_ui_console_serving.py chats through it in Chromium through the
real hub and gateway with the OAuth cookie.
"""

from __future__ import annotations

import pytest
from traitlets import TraitError
from traitlets.config import Config

from hub_ext.config import configure
from quota_service.api import consolegateway
from quota_service.app import HubgridService
from service_app import served  # noqa: F401


def url(served, path: str) -> str:  # noqa: F811
    return served.api[: -len("api/v1/")] + "console/hubgrid/gateway/" + path


async def call(served, method: str, path: str, user: str = "alice"):  # noqa: F811
    return await served.client.fetch(
        url(served, path), method=method, headers={"Authorization": served.auth(user)},
        body=b"{}" if method == "POST" else None, raise_error=False)


def test_only_the_chat_pages_calls_are_forwarded():
    assert consolegateway.forwarded_path("GET", "v1/models") == "v1/models"
    assert consolegateway.forwarded_path("POST", "v1/chat/completions") == "v1/chat/completions"
    for method, path in [("POST", "v1/models"), ("GET", "v1/chat/completions"),
                         ("POST", "v1/completions"), ("GET", "v1/models/../../api/v1/me"),
                         ("GET", "health"), ("DELETE", "v1/models")]:
        assert consolegateway.forwarded_path(method, path) is None, (method, path)


async def test_a_service_without_a_gateway_says_so(served):  # noqa: F811
    assert served.svc.gateway_url == ""
    resp = await call(served, "GET", "v1/models")
    assert resp.code == 503 and b"HUBGRID_GATEWAY_URL" in resp.body


async def test_other_paths_are_not_found_and_a_keypair_is_no_hub_login(served):  # noqa: F811
    served.svc.gateway_url = "http://127.0.0.1:9/services/hubgrid-gateway/"  # nothing listens
    resp = await call(served, "GET", "v1/embeddings")
    assert resp.code == 404
    resp = await call(served, "POST", "v1/chat/completions")
    assert resp.code == 403 and b"keypair" in resp.body
    unauthenticated = await served.client.fetch(url(served, "v1/models"), raise_error=False)
    assert unauthenticated.code == 401


def test_configure_tells_the_service_where_the_gateway_is(tmp_path):
    c = Config()
    configure(c, state_dir=tmp_path, gateway_port=10998)
    env = c.JupyterHub.services.get_value([])[0]["environment"]
    assert env["HUBGRID_GATEWAY_URL"] == "http://127.0.0.1:10998/services/hubgrid-gateway/"
    c2 = Config()
    configure(c2, state_dir=tmp_path, gateway_port=None)
    assert "HUBGRID_GATEWAY_URL" not in c2.JupyterHub.services.get_value([])[0]["environment"]


def test_gateway_url_is_an_http_url(monkeypatch):
    monkeypatch.setenv("HUBGRID_GATEWAY_URL", "http://127.0.0.1:10102/services/hubgrid-gateway/")
    assert HubgridService().gateway_url == "http://127.0.0.1:10102/services/hubgrid-gateway/"
    with pytest.raises(TraitError):
        HubgridService(gateway_url="file:///etc/passwd")


def test_the_gateway_takes_the_hubs_oauth_access_tokens_as_hub_tokens():
    """The console passes on the OAuth token the hub's provider made
    (oauthlib's generate_token: 30 letters and digits), not a 32-hex one."""
    from oauthlib.common import generate_token

    from gateway.usercred import plausible
    assert plausible(generate_token()) and plausible("0123456789abcdef" * 2)
    for other in ("EMPTY", "hge_" + "a" * 26, "a" * 29, "a" * 31, "x" * 32, generate_token() + "!"):
        assert not plausible(other), other
