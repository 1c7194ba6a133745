"""Downloads without a credential in the URL: the Lab asks
its server for a one-use ticket (an authenticated, XSRF-checked POST) and
the browser follows ``hubgrid/download/<ticket>``; through a real Jupyter
server forwarding to the real service (tests/lab_fixtures.py)."""

from __future__ import annotations

import pytest

from jupyterlab_hubgrid.downloads import Tickets
from lab_fixtures import TOKEN
from service_app import served  # noqa: F401
from test_lab_server import db_url, folder_with_file, lab, login_by_cookie  # noqa: F401


async def ticket_for(lab, folder_id: str, path: str, **kw):  # noqa: F811
    return await lab.call("POST", "hubgrid/download-tickets",
                          json_body={"folder": folder_id, "path": path}, **kw)


async def test_a_browser_downloads_with_a_one_use_ticket_and_no_token_in_the_url(lab):  # noqa: F811
    content = bytes(range(256)) * 64
    base = await folder_with_file(lab, "tick", content)
    folder_id = base.rsplit("/", 1)[1]
    await login_by_cookie(lab)
    # the browser's call: its login cookie and the XSRF header, no token
    resp, answer = await ticket_for(lab, folder_id, "big.bin", token=False, cookies=True,
                                    headers={"X-XSRFToken": lab.jar["_xsrf"]})
    assert resp.code == 201, answer
    url = answer["url"]
    assert "token" not in url and TOKEN not in url and answer["expires_in"] == 60
    assert url.startswith("/hubgrid/download/")
    # the link alone (a new tab, no cookie, no token) gets the file, once
    path = url[1:]
    resp, got = await lab.call("GET", path, token=False)
    assert resp.code == 200 and got == content
    assert resp.headers["Content-Disposition"].startswith("attachment")
    assert resp.headers["Cache-Control"] == "no-store"
    resp, err = await lab.call("GET", path, token=False)
    assert resp.code == 404 and "used already or has expired" in err["message"]


async def test_a_ticket_is_asked_for_like_any_write(lab):  # noqa: F811
    await login_by_cookie(lab)
    # without the XSRF header, a cookie is not enough (no ticket for a forged page)
    resp, err = await ticket_for(lab, "abc", "x", token=False, cookies=True)
    assert resp.code == 403 and "_xsrf" in err["message"]
    # nobody logged in: refused
    resp, err = await ticket_for(lab, "abc", "x", token=False)
    assert resp.code == 403
    for body in ({"folder": "../x", "path": "a"}, {"folder": "abc", "path": ""},
                 {"folder": 7, "path": "a"}):
        resp, err = await lab.call("POST", "hubgrid/download-tickets", json_body=body)
        assert resp.code == 400, err


async def test_a_made_up_ticket_and_other_verbs_are_refused(lab):  # noqa: F811
    resp, err = await lab.call("GET", "hubgrid/download/" + "A" * 43, token=False)
    assert resp.code == 404
    resp, _ = await lab.call("POST", "hubgrid/download/" + "A" * 43, json_body={})
    assert resp.code == 405


async def test_a_missing_file_is_the_services_404_and_uses_the_ticket(lab):  # noqa: F811
    base = await folder_with_file(lab, "miss", b"x")
    resp, answer = await ticket_for(lab, base.rsplit("/", 1)[1], "nothing.bin")
    assert resp.code == 201
    resp, err = await lab.call("GET", answer["url"][1:], token=False)
    assert resp.code == 404 and "nothing.bin" in err["message"]


def test_a_ticket_expires_and_works_once():
    now = [100.0]
    tickets = Tickets(ttl=60, clock=lambda: now[0])
    a, b = tickets.issue("f", "a.txt"), tickets.issue("f", "b.txt")
    assert a != b and len(a) >= 40
    assert tickets.take(a).path == "a.txt"
    assert tickets.take(a) is None  # once
    now[0] += 61
    assert tickets.take(b) is None  # expired
    assert tickets.take("nonsense") is None
