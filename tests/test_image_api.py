"""The image registry and the session facts over HTTP, through the service's
real app (tests/service_app.py) on SQLite and PostgreSQL, with Docker hosts
stood in for by ``FakeDockerImages`` (see tests/test_images.py)."""

from __future__ import annotations

import logging
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from quota_service.core.models import AuditEntry, Image
from service_app import served  # noqa: F401
from test_images import MARK, FakeDockerImages, UnreachableDocker

BASE = {"name": "hubgrid/base:latest",
        "labels": {"ai.hubgrid.resource.min.cpu": "0.5",
                   "ai.hubgrid.service-ports": "jupyterlab:http:lab,files:http:files/"},
        "domains": ["acme"]}
ENCODED = quote(BASE["name"], safe="")


def audit_rows(served, action):  # noqa: F811
    with served.svc.session_factory() as s:
        return [(e.actor, e.target, e.outcome, e.status, e.detail) for e in s.scalars(
            sa.select(AuditEntry).where(AuditEntry.action == action).order_by(AuditEntry.id))]


async def test_an_image_is_added_and_found_by_its_encoded_or_raw_name(served):  # noqa: F811
    resp, data = await served.call("POST", "images", "root", json_body=BASE)
    assert resp.code == 201
    assert resp.headers["Location"] == f"{served.svc.api_prefix}images/{ENCODED}"
    assert ENCODED == "hubgrid%2Fbase%3Alatest"
    for path in (f"images/{ENCODED}", "images/hubgrid/base:latest", "images/hubgrid%2Fbase:latest"):
        resp, got = await served.call("GET", path, "alice")
        assert (resp.code, got) == (200, data), path
    resp, _ = await served.call("GET", "images/hubgrid/base:latest/", "alice")
    assert resp.code == 404


async def test_image_writes_are_audited(served):  # noqa: F811
    await served.call("POST", "images", "root", json_body=BASE)
    await served.call("PATCH", f"images/{ENCODED}", "ada", json_body={"domains": []})
    await served.call("PATCH", f"images/{ENCODED}", "root", json_body={"domains": []})
    await served.call("DELETE", "images/hubgrid/base:latest", "root")
    await served.call("GET", "me", "root")  # the records are written after each answer
    assert [r[:4] for r in audit_rows(served, "image.create")] == [
        ("root", "hubgrid/base:latest", "success", 201)]
    assert [r[:4] for r in audit_rows(served, "image.update")] == [
        ("ada", "hubgrid/base:latest", "denied", 403),
        ("root", "hubgrid/base:latest", "success", 200)]
    assert [r[:4] for r in audit_rows(served, "image.delete")] == [
        ("root", "hubgrid/base:latest", "success", 204)]


@pytest.mark.parametrize("body, status, words", [
    ({**BASE, "labels": {"ai.hubgrid.service-ports": "lab:http:/etc"}}, 400, "must be relative"),
    ({**BASE, "labels": {"ai.hubgrid.resource.min.mem": "lots"}}, 400,
     "label ai.hubgrid.resource.min.mem"),
    ({**BASE, "labels": {"com.example": "x"}}, 400, "only ai.hubgrid.* labels"),
    ({**BASE, "name": "hubgrid/base"}, 422, "needs a tag"),
    ({**BASE, "name": "Hubgrid/base:1"}, 422, "the repository must be"),
    ({**BASE, "domains": ["nosuch"]}, 422, "no domain named 'nosuch'"),
    ({**BASE, "min_slots": {"cpu": "-1"}}, 422, "negative"),
    ({**BASE, "min_slots": {"cpu": True}}, 422, "integer or a decimal string"),
    ({**BASE, "min_slots": {"tpu": "1"}}, 422, "unknown slot"),
    ({**BASE, "service_ports": [{"name": "x", "path": "a/../../b"}]}, 422, "'..'"),
    ({**BASE, "service_ports": [{"name": "x", "protocol": "tcp"}]}, 422, "protocol"),
    ({**BASE, "colour": "red"}, 422, "unknown field"),
])
async def test_a_bad_image_body_is_refused_and_nothing_is_written(served, body, status, words):  # noqa: F811
    resp, data = await served.call("POST", "images", "root", json_body=body)
    assert resp.code == status, data
    assert words in data["message"]
    assert served.world.count(Image) == 0


async def test_the_image_listing_depends_on_the_callers_domain(served):  # noqa: F811
    await served.call("POST", "images", "root", json_body=BASE)
    await served.call("POST", "images", "root", json_body={"name": "every/one:1"})
    for user, names in (("alice", ["every/one:1", "hubgrid/base:latest"]),
                        ("gina", ["every/one:1"]), ("root", ["every/one:1", "hubgrid/base:latest"])):
        resp, data = await served.call("GET", "images", user)
        assert [i["name"] for i in data] == names, user
    resp, data = await served.call("GET", f"images/{ENCODED}", "gina")
    assert resp.code == 404 and data["message"] == "image 'hubgrid/base:latest' not found"


# ---------------------------------------------------------------- scans

def fake_hosts(svc, hosts: dict):
    """Point the service's Docker client at fakes: url -> FakeDockerImages;
    any other url is unreachable."""
    def factory(url, timeout):
        if url in hosts:
            return hosts[url]
        return UnreachableDocker()(url, timeout)

    svc.docker_client = factory


async def test_a_scan_reads_the_nodes_and_configured_hosts_and_reports_each(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    cluster.set_node("node-1", backend_url="unix:///fake/node-1.sock")
    svc = served.svc
    svc.docker_hosts = ["tcp://127.0.0.1:1"]
    fake_hosts(svc, {"unix:///fake/node-1.sock": FakeDockerImages([
        {"RepoTags": ["hubgrid/base:latest"], "Labels": {**MARK, **BASE["labels"]}},
        {"RepoTags": ["hubgrid/bad:1"], "Labels": {**MARK, "ai.hubgrid.service-ports": "x"}},
    ])})
    resp, report = await served.call("POST", "images/scan", "root")
    assert resp.code == 200
    assert report["hosts"] == [
        {"url": "tcp://127.0.0.1:1", "ok": False,
         "error": "ConnectionError: cannot connect to tcp://127.0.0.1:1"},
        {"url": "unix:///fake/node-1.sock", "ok": True, "images": 2},
    ]
    assert report["added"] == ["hubgrid/base:latest"]
    assert [s["name"] for s in report["skipped"]] == ["hubgrid/bad:1"]
    resp, image = await served.call("GET", f"images/{ENCODED}", "gina")
    assert resp.code == 200 and image["source"] == "scan" and image["domains"] == []
    await served.call("GET", "me", "root")
    [(actor, target, outcome, status, detail)] = audit_rows(served, "image.scan")
    assert (actor, target, outcome, status) == ("root", "scan", "success", 200)
    assert detail == ("2 host(s), added 1, updated 0, unchanged 0, skipped 1; "
                      "unreachable: tcp://127.0.0.1:1")


@pytest.mark.parametrize("caller", ["alice", "ada"])
async def test_only_a_superadmin_scans(served, caller):  # noqa: F811
    fake_hosts(served.svc, {})
    served.svc.docker_hosts = ["unix:///fake.sock"]
    resp, data = await served.call("POST", "images/scan", caller)
    assert resp.code == 403 and "superadmin" in data["message"]


async def test_the_scan_at_start_records_images_and_a_failure_only_logs(served, caplog):  # noqa: F811
    svc = served.svc
    svc.docker_hosts = ["unix:///fake.sock"]
    fake_hosts(svc, {"unix:///fake.sock": FakeDockerImages(
        [{"RepoTags": ["a/b:1"], "Labels": MARK}])})
    await svc._scan_at_start()
    assert served.world.count(Image) == 1

    def broken():
        raise RuntimeError("the database is gone")

    svc.docker_host_urls = broken
    with caplog.at_level(logging.ERROR):
        await svc._scan_at_start()
    assert "image scan at start failed" in caplog.text


# ---------------------------------------------------------------- sessions

SESSION = {"user": "alice", "project": "ml", "resource_group": "gpu",
           "slots": {"cpu": "1", "mem": "1G"}}


@pytest.fixture
def gpu(cluster):
    cluster.add_group("gpu", {"node-1": ()})
    return cluster


async def test_the_hub_asks_for_a_session_with_an_image_and_gets_its_apps(served, gpu):  # noqa: F811
    served.svc.hub_base_url = "/jhub"
    await served.call("POST", "images", "root", json_body=BASE)
    body = {**SESSION, "image": BASE["name"], "server_name": "work"}
    resp, a = await served.call("POST", "internal/allocations", "internal", json_body=body)
    assert resp.code == 201, a
    assert a["apps"] == [{"name": "jupyterlab", "url": "/jhub/user/alice/work/lab"},
                         {"name": "files", "url": "/jhub/user/alice/work/files/"}]
    for path, who in ((f"allocations/{a['id']}", "alice"),
                      (f"internal/allocations/{a['id']}", "internal")):
        resp, got = await served.call("GET", path, who)
        assert got["apps"] == a["apps"], path
    resp, listed = await served.call("GET", "allocations", "alice")
    assert listed[0]["apps"] == a["apps"]


async def test_the_hubs_base_url_comes_from_its_environment(served, monkeypatch):  # noqa: F811
    from quota_service.app import HubgridService

    monkeypatch.setenv("JUPYTERHUB_BASE_URL", "/jhub")
    assert HubgridService().hub_base_url == "/jhub/"
    monkeypatch.delenv("JUPYTERHUB_BASE_URL")
    assert HubgridService().hub_base_url == "/"


@pytest.mark.parametrize("image, status, words", [
    ("nosuch/image:1", 422, "unknown image 'nosuch/image:1'"),
    ("globex/only:1", 422, "unknown image 'globex/only:1'"),
])
async def test_an_image_the_user_may_not_use_is_refused_like_an_unknown_one(
        served, gpu, image, status, words):  # noqa: F811
    await served.call("POST", "images", "root", json_body={"name": "globex/only:1",
                                                           "domains": ["globex"]})
    resp, data = await served.call("POST", "internal/allocations", "internal",
                                   json_body={**SESSION, "image": image})
    assert (resp.code, data["message"]) == (status, words)
    resp, listed = await served.call("GET", "allocations", "root")
    assert listed == []


async def test_release_records_the_exit_code_once(served, gpu):  # noqa: F811
    body = {**SESSION, "session_type": "batch", "command": "exit 3"}
    resp, a = await served.call("POST", "internal/allocations", "internal", json_body=body)
    path = f"internal/allocations/{a['id']}?reason=done&exit_code=3"
    resp, first = await served.call("DELETE", path, "internal")
    assert (resp.code, first["exit_code"], first["command"]) == (200, 3, "exit 3")
    assert first["ended_at"] == first["released_at"] is not None
    resp, again = await served.call("DELETE", f"internal/allocations/{a['id']}?exit_code=0",
                                    "internal")
    assert (resp.code, again) == (200, first)


@pytest.mark.parametrize("code", ["256", "-256", "x", "1.0", "", "1e2", "0x1"])
async def test_an_exit_code_out_of_range_is_a_400_and_releases_nothing(served, gpu, code):  # noqa: F811
    resp, a = await served.call("POST", "internal/allocations", "internal", json_body=SESSION)
    resp, data = await served.call("DELETE", f"internal/allocations/{a['id']}?exit_code={quote(code)}",
                                   "internal")
    assert resp.code == 400 and data["message"].startswith("exit_code: must be an integer from -255")
    resp, after = await served.call("GET", f"internal/allocations/{a['id']}", "internal")
    assert after["state"] == "allocated"


@pytest.mark.parametrize("code", ["-255", "255", "0"])
async def test_exit_codes_at_the_bounds_are_recorded(served, gpu, code):  # noqa: F811
    resp, a = await served.call("POST", "internal/allocations", "internal", json_body=SESSION)
    resp, data = await served.call("DELETE", f"internal/allocations/{a['id']}?exit_code={code}",
                                   "internal")
    assert resp.code == 200 and data["exit_code"] == int(code)


async def test_the_public_release_takes_no_exit_code(served, gpu):  # noqa: F811
    body = {k: v for k, v in SESSION.items() if k != "user"}
    resp, a = await served.call("POST", "allocations", "alice", json_body=body)
    resp, data = await served.call("DELETE", f"allocations/{a['id']}?exit_code=0", "alice")
    assert resp.code == 422 and "exit_code" in data["message"]
