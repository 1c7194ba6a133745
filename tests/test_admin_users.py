"""The Users page's endpoints: searching users (q, role,
active) and adding many from a CSV file or JSON rows, each row created
whole or refused with its reason."""

from __future__ import annotations

import json

import pytest

from quota_service.core.errors import Invalid
from quota_service.tenancy import bulkusers
from service_app import served  # noqa: F401


def test_csv_rows_read_like_json_rows():
    rows = bulkusers.rows_from_csv(
        "name,domain,projects,active\r\nnina,acme,ml;web,false\r\nomar,,,\r\n")
    assert rows == [{"name": "nina", "domain": "acme", "projects": ["ml", "web"],
                     "active": False}, {"name": "omar"}]
    with pytest.raises(Invalid, match="header"):
        bulkusers.rows_from_csv("nina,acme\r\n")
    with pytest.raises(Invalid, match="unknown CSV column"):
        bulkusers.rows_from_csv("name,password\r\nnina,x\r\n")


def test_the_search_filter():
    users = [{"name": "Alice", "role": "user", "active": True},
             {"name": "ada", "role": "domain-admin", "active": False}]
    keep = bulkusers.search_filter("AL", None, None)
    assert [u["name"] for u in users if keep(u)] == ["Alice"]
    keep = bulkusers.search_filter(None, "domain-admin", "false")
    assert [u["name"] for u in users if keep(u)] == ["ada"]
    with pytest.raises(Invalid):
        bulkusers.search_filter(None, "root", None)


async def test_a_domain_admins_bulk_add_creates_whole_rows_and_refuses_the_rest(served):  # noqa: F811
    csv_text = ("name,domain,role,projects,resource_policy\r\n"
                "nina,,,ml,\r\n"  # created in ada's domain, in acme/ml
                "omar,globex,,,\r\n"  # another domain: refused
                "pia,,superadmin,,\r\n"  # a domain admin never makes one
                "quin,,,ml;nope,\r\n"  # one project is missing: nothing of quin stays
                "alice,,,,\r\n"  # exists
                "rex,acme,domain-admin,web,\r\n")
    resp = await served.client.fetch(served.api + "users/bulk", method="POST", body=csv_text,
                                     headers={"Authorization": served.auth("ada"),
                                              "Content-Type": "text/csv"}, raise_error=False)
    report = json.loads(resp.body)
    assert resp.code == 200, report
    results = {r["name"]: r for r in report["results"]}
    assert (report["created"], report["refused"]) == (2, 4)
    assert results["nina"]["user"]["projects"] == ["ml"]
    assert results["rex"]["user"]["role"] == "domain-admin"
    assert results["omar"]["status"] == 404 and results["pia"]["status"] == 403
    assert results["quin"]["result"] == "refused" and "nope" in results["quin"]["reason"]
    assert results["alice"]["status"] == 409
    assert served.world.user("quin") is None and served.world.user("omar") is None
    _, log = await served.call("GET", "audit?action=user.bulk-create", "ada")
    assert log["entries"][0]["detail"] == "created 2, refused 4: nina, rex"


async def test_json_rows_search_and_refusals(served):  # noqa: F811
    resp, body = await served.call("POST", "users/bulk", "root", json_body={"users": [
        {"name": "sam", "domain": "globex", "projects": ["lab"], "active": False},
        {"name": "tia", "domain": "globex", "resource_policy": "nope"}]})
    assert resp.code == 200 and body["created"] == 1, body
    assert body["results"][1]["result"] == "refused"
    resp, body = await served.call("GET", "users?q=S&active=false", "gus")
    assert [u["name"] for u in body] == ["sam"]
    resp, body = await served.call("GET", "users?role=domain-admin", "root")
    assert {u["name"] for u in body} == {"ada", "gus"}
    for who, payload, code in (("alice", {"users": [{"name": "x1"}]}, 403),
                               ("ada", {"users": []}, 422), ("ada", {"rows": []}, 422)):
        resp, body = await served.call("POST", "users/bulk", who, json_body=payload)
        assert resp.code == code and body["message"], (who, body)
    resp, body = await served.call("GET", "users?role=root", "root")
    assert resp.code == 422
