"""The console as the service serves it, through its real app
(no hub: callers send keypairs; tests/ui_console_checks.py drives it in
Chromium through the real hub, logged in with the OAuth cookie):

- the page, for any user, carries who they are (as JSON no user string can
  end) and loads the bundle; without a built bundle a 503 says how to build;
- the bundle is served; ``console/hubgrid/api/<path>`` is the API itself
  (the same handlers, so the same answers and refusals), without the hub's
  internal routes; an unknown path there is the API's JSON 404;
- the home page links the console.
"""

from __future__ import annotations

import json

from bs4 import BeautifulSoup

from quota_service.api import browser, routes
from quota_service.core.schemas import UserCreate
from quota_service.tenancy import accounts
from service_app import served  # noqa: F401

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def root(served) -> str:  # noqa: F811
    return served.api[: -len("api/v1/")]


async def get(served, path: str, user: str | None, accept: str = BROWSER):  # noqa: F811
    headers = {"Accept": accept}
    if user:
        headers["Authorization"] = served.auth(user)
    return await served.client.fetch(root(served) + path, headers=headers,
                                     follow_redirects=False, raise_error=False)


def config_of(body: bytes) -> dict:
    doc = BeautifulSoup(body.decode(), "html.parser")
    return json.loads(doc.find(id="hubgrid-console-config").string)


async def test_the_page_says_who_and_loads_the_bundle(served, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(browser, "CONSOLE_STATIC", tmp_path)
    (tmp_path / browser.CONSOLE_SCRIPT).write_text("// the console")
    resp = await get(served, "console/", "alice")
    assert resp.code == 200 and resp.headers["Cache-Control"] == "no-store"
    config = config_of(resp.body)
    assert config == {
        "baseUrl": "/services/hubgrid/console/", "hubUrl": served.svc.hub_base_url,
        "name": "alice", "domain": "acme", "role": "user", "admin": False,
        "homeUrl": "/services/hubgrid/", "labUrl": f"{served.svc.hub_base_url}user/alice/lab"}
    doc = BeautifulSoup(resp.body.decode(), "html.parser")
    assert doc.find("script", src=True)["src"] == "/services/hubgrid/console/static/console.js"
    assert config_of((await get(served, "console/", "ada")).body)["admin"] is True
    bundle = await get(served, "console/static/console.js", None, "*/*")
    assert bundle.code == 200 and bundle.body == b"// the console"


async def test_no_user_string_ends_the_pages_script(served, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(browser, "CONSOLE_STATIC", tmp_path)
    (tmp_path / browser.CONSOLE_SCRIPT).write_text("")
    name = "x</script><script>alert(1)</script>@lab"
    with served.world.tx() as s:
        accounts.create_user(s, served.world.principal("root"), UserCreate(name="xs@lab", domain="acme"))
    served.svc.hub_base_url = '/hub"</script>/'
    resp = await get(served, "console/", "xs@lab")
    assert resp.body.count(b"</script>") == 2  # the config's and the bundle's
    assert config_of(resp.body)["hubUrl"] == '/hub"</script>/'
    assert name  # (a user name may not hold '<': the hub base URL stands in for it)


async def test_an_unbuilt_console_says_how_to_build_it(served, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(browser, "CONSOLE_STATIC", tmp_path / "absent")
    resp = await get(served, "console/", "alice")
    assert resp.code == 503
    assert "console.webpack.config.js" in json.loads(resp.body)["message"]


async def test_a_client_without_a_credential_gets_the_apis_401(served):  # noqa: F811
    resp = await get(served, "console/", None)
    assert resp.code == 401 and json.loads(resp.body)["reason"] == "unauthenticated"


async def test_the_consoles_api_is_the_api(served):  # noqa: F811
    for user, path in (("alice", "me"), ("alice", "vfolders"), ("ada", "users?domain=acme"),
                       ("alice", "audit"), ("ada", "users/gina")):
        direct = await get(served, "api/v1/" + path, user, "application/json")
        console = await get(served, "console/hubgrid/api/" + path, user, "application/json")
        assert (console.code, json.loads(console.body)) == (direct.code, json.loads(direct.body)), path
    assert (await get(served, "console/hubgrid/api/audit", "alice", "*/*")).code == 403
    resp = await served.client.fetch(
        root(served) + "console/hubgrid/api/vfolders", method="POST", raise_error=False,
        headers={"Authorization": served.auth("alice")}, body=json.dumps({"name": "viaconsole"}))
    assert resp.code == 201 and json.loads(resp.body)["name"] == "viaconsole"


async def test_the_hubs_internal_routes_are_not_in_the_console(served):  # noqa: F811
    assert all(h.caller_kind == "user" for _, h in routes.console_api())
    assert {h for _, h in routes.API} - {h for _, h in routes.console_api()} == {
        h for _, h in routes.API if h.caller_kind == "internal"}
    for path in ("internal/sync", "no/such/thing"):
        resp = await get(served, "console/hubgrid/api/" + path, "internal", "application/json")
        assert resp.code == 404 and json.loads(resp.body)["reason"] == "not-found", path


async def test_the_home_page_links_the_console(served):  # noqa: F811
    resp = await get(served, "", "alice")
    doc = BeautifulSoup(resp.body.decode(), "html.parser")
    assert doc.find(id="console")["href"] == "/services/hubgrid/console/"
