"""The access log's source address: forwarded headers count only from trusted proxies.

The pure rule with plain data first; then over real HTTP, on the service's
own port (``served``) and through the real hub's configurable-http-proxy
(``hub``). Callers that must not be trusted connect from 127.0.0.2 (still
loopback on Linux, but not a default trusted proxy address).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from requests.adapters import HTTPAdapter
from tornado.httpclient import HTTPRequest

from hub_fixtures import free_port, require, sqlite_hub  # noqa: F401
from quota_service.core.forwarded import LOOPBACK, client_address, parse_networks
from service_app import served  # noqa: F401
from session_fixtures import eventually

DEFAULT = parse_networks(LOOPBACK)
CHP = "127.0.0.1"
UNTRUSTED = "127.0.0.2"


@pytest.mark.parametrize("peer, headers, trusted, expected", [
    # a caller that is no trusted proxy: its own address, whatever it claims
    ("203.0.113.9", {}, DEFAULT, "203.0.113.9"),
    ("203.0.113.9", {"X-Forwarded-For": "10.9.9.9"}, DEFAULT, "203.0.113.9"),
    ("203.0.113.9", {"X-Real-IP": "10.9.9.9"}, DEFAULT, "203.0.113.9"),
    # the proxy appends its peer: that one, never what the client put before it
    (CHP, {"X-Forwarded-For": "203.0.113.9"}, DEFAULT, "203.0.113.9"),
    (CHP, {"X-Forwarded-For": "6.6.6.6, 203.0.113.9"}, DEFAULT, "203.0.113.9"),
    (CHP, {"X-Forwarded-For": "6.6.6.6,203.0.113.9", "X-Real-IP": "6.6.6.6"}, DEFAULT,
     "203.0.113.9"),
    # a chain of trusted proxies is skipped from the right
    (CHP, {"X-Forwarded-For": "6.6.6.6, 203.0.113.9, 10.0.0.5"},
     parse_networks(("127.0.0.1", "10.0.0.0/8")), "203.0.113.9"),
    # ... and when every hop is trusted, the left-most of them
    (CHP, {"X-Forwarded-For": "10.0.0.7, 10.0.0.5"},
     parse_networks(("127.0.0.1", "10.0.0.0/8")), "10.0.0.7"),
    # garbage stops the walk: the hop right of it
    (CHP, {"X-Forwarded-For": "6.6.6.6, not-an-ip"}, DEFAULT, CHP),
    (CHP, {"X-Forwarded-For": "10.0.0.7, junk, 10.0.0.5"},
     parse_networks(("127.0.0.1", "10.0.0.0/8")), "10.0.0.5"),
    # X-Real-IP only from a trusted peer that sent no X-Forwarded-For
    (CHP, {"X-Real-IP": "203.0.113.9"}, DEFAULT, "203.0.113.9"),
    (CHP, {"X-Real-IP": "nonsense"}, DEFAULT, CHP),
    (CHP, {}, DEFAULT, CHP),
    # IPv6 and IPv4-mapped addresses (a dual-stack proxy reports those)
    ("::1", {"X-Forwarded-For": "2001:db8::7"}, DEFAULT, "2001:db8::7"),
    ("::ffff:127.0.0.1", {"X-Forwarded-For": "::ffff:203.0.113.9"}, DEFAULT, "203.0.113.9"),
    (CHP, {"X-Forwarded-For": "[2001:db8::7]"}, DEFAULT, "2001:db8::7"),
    # nothing trusted: forwarded headers never count
    (CHP, {"X-Forwarded-For": "203.0.113.9"}, (), CHP),
])
def test_the_client_address_believes_only_trusted_proxies(peer, headers, trusted, expected):
    assert client_address(peer, headers, trusted) == expected


@pytest.mark.parametrize("bad", ["localhost", "10.0.0.0/33", "", "1.2.3.4.5"])
def test_a_bad_trusted_proxy_is_refused_with_its_name(bad):
    with pytest.raises(ValueError, match="is not an IP address or network"):
        parse_networks((bad,))


def test_the_setting_is_checked_at_configuration():
    from traitlets import TraitError

    from quota_service.app import HubgridService

    svc = HubgridService()
    assert svc.trusted_proxies == ["127.0.0.1", "::1"]
    with pytest.raises(TraitError, match="'nope' is not an IP address"):
        svc.trusted_proxies = ["127.0.0.1", "nope"]


# --- over HTTP ----------------------------------------------------------------

FORGED = {"X-Forwarded-For": "6.6.6.6", "X-Real-IP": "7.7.7.7"}


async def _refused_post(served, headers, source_ip):  # noqa: F811
    """A refused write by ada from ``source_ip``: recorded all the same."""
    req = HTTPRequest(served.api + "domains", method="POST", body=b"{}",
                      headers={"Authorization": served.auth("ada"), **headers},
                      network_interface=source_ip)
    resp = await served.client.fetch(req, raise_error=False)
    assert resp.code == 422


async def _source(served) -> str:  # noqa: F811
    for _ in range(200):  # the record is written just after the answer
        resp, page = await served.call("GET", "audit?action=domain.create&limit=1", "root")
        if page["entries"]:
            return page["entries"][0]["source"]
        await asyncio.sleep(0.05)
    raise AssertionError("no access-log entry")


async def test_on_the_service_port_an_untrusted_caller_cannot_forge_its_source(served):  # noqa: F811
    await _refused_post(served, FORGED, UNTRUSTED)
    assert await _source(served) == UNTRUSTED


async def test_on_the_service_port_a_trusted_proxy_is_believed(served):  # noqa: F811
    await _refused_post(served, {"X-Forwarded-For": "6.6.6.6, 203.0.113.9"}, CHP)
    assert await _source(served) == "203.0.113.9"


async def test_an_empty_trust_list_believes_nobody(served):  # noqa: F811
    served.svc.trusted_proxies = []
    await _refused_post(served, FORGED, CHP)
    assert await _source(served) == CHP


class _SourceAdapter(HTTPAdapter):
    """requests sent from a chosen local address."""

    def __init__(self, source: str):
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.source, 0)
        super().init_poolmanager(*args, **kwargs)


_SESSIONS: list[requests.Session] = []


@pytest.fixture(autouse=True)
def _close_sessions():
    """Close what ``_from`` opened (a collected session leaves sockets unclosed)."""
    yield
    while _SESSIONS:
        _SESSIONS.pop().close()


def _from(source: str) -> requests.Session:
    s = requests.Session()
    s.mount("http://", _SourceAdapter(source))
    _SESSIONS.append(s)
    return s


def test_through_the_hub_proxy_forged_headers_do_not_become_the_source(hub):  # noqa: F811
    """configurable-http-proxy appends its peer to X-Forwarded-For and passes
    X-Real-IP on as sent: the service records the appended address. Straight
    to the service's port, the peer address."""
    auth = {"Authorization": f"token {hub.token('admin')}", **FORGED}
    direct = f"http://127.0.0.1:{hub.ports['HUBGRID_SERVICE_PORT']}/services/hubgrid/api/v1/"
    for base, resource in ((hub.api, "domain"), (direct, "user")):
        r = _from(UNTRUSTED).post(base + resource + "s", json={"name": "Bad Name"},
                                  headers=auth, timeout=30)
        assert r.status_code == 422, r.text

        def source():
            page = hub.call("GET", f"audit?action={resource}.create&limit=1", "admin").json()
            return page["entries"][0]["source"] if page["entries"] else None

        assert eventually(lambda: source() == UNTRUSTED, 15, 0.2), (base, source())


@pytest.fixture
def echo():
    """A listener that keeps the headers and peer of the last request."""
    seen: dict = {}

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self):
            seen["headers"] = self.headers  # case-insensitive, as the service's
            seen["peer"] = self.client_address[0]
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port, seen
    server.shutdown()
    server.server_close()


def test_configurable_http_proxy_sends_what_the_rule_expects(echo, tmp_path):
    """The hub's proxy (the same binary) in front of a listener: the client's
    forged X-Forwarded-For comes first, the address it connected from last,
    X-Real-IP unchanged -- so the rule yields the real address."""
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test` (it installs it from npm)")
    port, seen = echo
    proxy_port, api_port = free_port(), free_port()
    with open(tmp_path / "chp.log", "wb") as log:
        proc = subprocess.Popen(
            ["configurable-http-proxy", "--ip", "127.0.0.1", "--port", str(proxy_port),
             "--api-ip", "127.0.0.1", "--api-port", str(api_port),
             "--default-target", f"http://127.0.0.1:{port}", "--log-level", "warn"],
            env={**os.environ, "CONFIGPROXY_AUTH_TOKEN": "probe-token"},
            stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        def answered():
            try:
                return _from(UNTRUSTED).get(f"http://127.0.0.1:{proxy_port}/x", headers=FORGED,
                                            timeout=5).status_code == 204
            except requests.ConnectionError:
                return proc.poll() is not None  # gave up: the asserts below say why

        assert eventually(answered, 30, 0.2), (tmp_path / "chp.log").read_text()
        headers = seen["headers"]
        assert seen["peer"] == CHP
        assert [h.strip() for h in headers["X-Forwarded-For"].split(",")] == ["6.6.6.6", UNTRUSTED]
        assert headers["X-Real-IP"] == "7.7.7.7"
        assert client_address(seen["peer"], headers, DEFAULT) == UNTRUSTED
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_login_through_the_hub_proxy_records_where_it_came_from(hub):  # noqa: F811
    """The hub believes any X-Real-IP itself; the authenticator starts again
    from the connection's peer."""
    hub.token("admin")  # (reading the log needs a token: a login of its own, first)
    browser = _from(UNTRUSTED)
    browser.headers.update(FORGED)  # the hub ties its login form to the address it believes
    browser.get(hub.url + "/hub/login", timeout=30)
    r = browser.post(hub.url + "/hub/login?next=", allow_redirects=False,
                     data={"username": "admin", "password": hub.admin_password,
                           "_xsrf": browser.cookies.get("_xsrf")}, timeout=30)
    assert r.status_code == 302, r.text[:300]
    page = hub.call("GET", "audit?action=login&user=admin&limit=1", "admin").json()
    assert page["entries"][0]["source"] == UNTRUSTED


def test_the_authenticator_checks_its_trusted_proxies():
    from traitlets import TraitError

    from authenticator import HubgridAuthenticator

    auth = HubgridAuthenticator()
    assert auth.trusted_proxies == ["127.0.0.1", "::1"]
    with pytest.raises(TraitError, match="'10.0.0.0/99' is not an IP address"):
        auth.trusted_proxies = ["10.0.0.0/99"]
