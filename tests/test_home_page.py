"""The service's landing page, where the hub's navbar (Services -> hubgrid)
links: a browser sees who it is and where hubgrid lives, escaped; an API
client keeps its redirect to ``api/v1/me``. Through the service's real app."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup

from quota_service.api.browser import wants_html
from quota_service.core.schemas import UserCreate
from quota_service.tenancy import accounts
from service_app import served  # noqa: F401

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"


async def home(served, user: str | None, accept: str = BROWSER):  # noqa: F811
    headers = {"Accept": accept}
    if user:
        headers["Authorization"] = served.auth(user)
    url = served.api[: -len("api/v1/")]
    return await served.client.fetch(url, headers=headers, follow_redirects=False,
                                     raise_error=False)


async def page(served, user: str):  # noqa: F811
    resp = await home(served, user)
    assert resp.code == 200, resp.body[:300]
    assert resp.headers["Content-Type"] == "text/html; charset=UTF-8"
    return BeautifulSoup(resp.body.decode(), "html.parser")


async def test_a_browser_sees_who_it_is_and_where_hubgrid_lives(served):  # noqa: F811
    doc = await page(served, "alice")
    assert [doc.find(id=k).get_text() for k in ("name", "domain", "role")] == [
        "alice", "acme", "user"]
    assert doc.find(id="lab")["href"] == "/user/alice/lab"
    assert doc.find(id="openapi")["href"] == "/services/hubgrid/api/v1/openapi.json"
    assert doc.find(id="me")["href"] == "/services/hubgrid/api/v1/me"
    assert doc.find(id="admin") is None  # the admin menu is for admins
    assert "docs/user.md" in doc.find(id="docs").get_text()


async def test_an_admin_is_told_of_the_admin_menu(served):  # noqa: F811
    doc = await page(served, "ada")
    assert doc.find(id="role").get_text() == "domain-admin"
    assert "hubgrid Admin" in doc.find(id="admin").get_text()


async def test_every_value_on_the_page_is_escaped(served):  # noqa: F811
    with served.world.tx() as s:
        accounts.create_user(s, served.world.principal("root"),
                             UserCreate(name="x+y@lab", domain="acme"))
    served.svc.hub_base_url = "/hub-base/"
    served.svc.docs_url = 'https://docs.example.org/?a=1&b="><script>alert(1)</script>'
    resp = await home(served, "x+y@lab")
    assert b"<script>" not in resp.body
    doc = BeautifulSoup(resp.body.decode(), "html.parser")
    assert doc.find(id="name").get_text() == "x+y@lab"
    assert doc.find(id="lab")["href"] == "/hub-base/user/x%2By@lab/lab"
    assert doc.find(id="docs")["href"] == served.svc.docs_url


@pytest.mark.parametrize("accept", ["application/json", "*/*", "",
                                    "text/html;q=0.5, application/json"])
async def test_an_api_client_is_still_sent_to_me(served, accept):  # noqa: F811
    resp = await home(served, "alice", accept)
    assert resp.code == 302
    assert resp.headers["Location"] == "/services/hubgrid/api/v1/me"


async def test_without_a_hub_and_a_credential_the_answer_is_a_json_401(served):  # noqa: F811
    resp = await home(served, None)
    assert resp.code == 401, (resp.headers.get("Location"), resp.body)
    assert json.loads(resp.body)["reason"] == "unauthenticated"


@pytest.mark.parametrize("accept, html", [
    (BROWSER, True), ("text/html", True), ("application/xhtml+xml", True),
    ("application/json", False), ("*/*", False), ("", False),
    ("application/json, text/html", False), ("text/html, application/json;q=0.5", True),
    ("text/html;q=0", False), ("text/html;q=x", False),
])
def test_which_accept_headers_ask_for_the_page(accept, html):
    assert wants_html(accept) is html
