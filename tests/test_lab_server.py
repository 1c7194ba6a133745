"""The JupyterLab extension's server side (labextension/jupyterlab_hubgrid/routes.py):
a real Jupyter server (tests/lab_fixtures.py) forwarding ``hubgrid/api/`` to
the real hubgrid service (tests/service_app.py), as the server's owner.

The service here runs without a hub, so the server's credential is alice's
keypair (``c.HubgridLab.keypair``); through the real hub, at the end, it is
the session's own hub token.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

import requests

from hub_fixtures import sqlite_hub  # noqa: F401
from jupyterlab_hubgrid.routes import forwarded_query, local_location, upstream_path
from lab_fixtures import TOKEN, lab_server
from service_app import served  # noqa: F401
from session_fixtures import eventually
from vfolder_world import Folders


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """The forwarder does not care which database the service runs on: SQLite only."""
    return sqlite_db_url


def keypair_of(served, user: str) -> str:  # noqa: F811
    return served.auth(user).removeprefix("Keypair ")


@pytest.fixture
async def lab(served, tmp_path, monkeypatch):  # noqa: F811
    """alice's Jupyter server, forwarding to the service with alice's keypair;
    alice may create folders (an unlimited default resource policy)."""
    Folders(served.world, tmp_path / "unused").set_policy("default")
    async with lab_server(tmp_path, monkeypatch, user="alice", owner="alice",
                          api_url=served.api, keypair=keypair_of(served, "alice")) as lab:
        yield lab


# -- forwarding -------------------------------------------------------------------


async def test_me_is_answered_by_the_service_for_the_servers_owner(lab):
    resp, me = await lab.call("GET", "hubgrid/api/me")
    assert resp.code == 200, me
    assert (me["name"], me["domain"], me["role"]) == ("alice", "acme", "user")
    # the service saw the server's credential, not the browser's
    assert me["credential"] == "keypair"


async def test_a_folder_lives_through_every_verb(lab):
    name = "data-" + uuid.uuid4().hex[:6]
    resp, folder = await lab.call("POST", "hubgrid/api/vfolders", json_body={"name": name})
    assert resp.code == 201, folder
    assert folder["name"] == name
    # the service's Location, moved under this server's prefix
    assert resp.headers["Location"] == f"/hubgrid/api/vfolders/{folder['id']}"

    resp, listed = await lab.call("GET", "hubgrid/api/vfolders?status=all")
    assert resp.code == 200 and [f["name"] for f in listed] == [name]

    resp, renamed = await lab.call("PATCH", f"hubgrid/api/vfolders/{folder['id']}",
                                   json_body={"name": name + "-2"})
    assert resp.code == 200 and renamed["name"] == name + "-2"

    content = b"hello \x00 world\n" * 100
    resp, _ = await lab.call("PUT", f"hubgrid/api/vfolders/{folder['id']}/upload?path=hello.bin",
                             body=content, headers={"Content-Type": "application/octet-stream"})
    assert resp.code == 201
    resp, got = await lab.call("GET", f"hubgrid/api/vfolders/{folder['id']}/download?path=hello.bin")
    assert resp.code == 200 and got == content
    assert resp.headers["Content-Type"] == "application/octet-stream"
    resp, part = await lab.call("GET", f"hubgrid/api/vfolders/{folder['id']}/download?path=hello.bin",
                                headers={"Range": "bytes=0-4"})
    assert (resp.code, part) == (206, b"hello")

    resp, body = await lab.call("DELETE", f"hubgrid/api/vfolders/{folder['id']}")
    assert (resp.code, body) == (204, b"")
    resp, listed = await lab.call("GET", "hubgrid/api/vfolders?status=trashed")
    assert [f["id"] for f in listed] == [folder["id"]]


async def test_the_services_errors_pass_through_with_their_status_and_message(lab):
    # the service's own JSON, unchanged
    resp, err = await lab.call("GET", "hubgrid/api/vfolders?colour=red")
    assert (resp.code, err) == (422, {"status": 422, "reason": "invalid",
                                      "message": "unknown query parameter(s): colour"})
    resp, err = await lab.call("GET", "hubgrid/api/vfolders/" + uuid.uuid4().hex)
    assert resp.code == 404 and err["status"] == 404 and err["message"]
    resp, err = await lab.call("POST", "hubgrid/api/vfolders", json_body={"name": ""})
    assert resp.code == 422 and err["status"] == 422 and err["message"]
    resp, err = await lab.call("POST", "hubgrid/api/domains", json_body={"name": "initech"})
    assert resp.code == 403 and err["status"] == 403 and err["message"]  # alice is no admin


async def test_jupyterlabs_cache_busting_timestamp_is_not_forwarded(lab):
    # ServerConnection.makeRequest appends "?<ms>" (or "&<ms>") to every no-store GET
    resp, me = await lab.call("GET", "hubgrid/api/me?1795487473600")
    assert resp.code == 200, me
    resp, listed = await lab.call("GET", "hubgrid/api/vfolders?status=all&1795487473600")
    assert resp.code == 200 and listed == []


async def test_jupyters_login_token_is_not_forwarded(lab):
    # a ?token= login must not reach the service (its secret; an unknown query there)
    resp, me = await lab.call("GET", f"hubgrid/api/me?token={TOKEN}", token=False)
    assert resp.code == 200 and me["name"] == "alice"


@pytest.mark.parametrize("path", ["hubgrid/api/vfolders/%2E%2E/me", "hubgrid/api/%2E%2E/x",
                                  "hubgrid/api/vfolders//x"])
async def test_a_path_that_could_leave_the_api_is_refused(lab, path):
    resp, err = await lab.call("GET", path)
    assert resp.code == 400 and "not an API path" in err["message"]


def test_paths_queries_and_locations_are_rewritten_only_inside_the_api():
    assert upstream_path("vfolders/a b/files") == "vfolders/a%20b/files"
    assert upstream_path("vfolders/x/../../hub") is None
    assert upstream_path("") is None and upstream_path("/me") is None
    assert forwarded_query("status=all&token=s3cret&path=a%2Fb") == "status=all&path=a%2Fb"
    assert forwarded_query("path=tokens") == "path=tokens"
    # JupyterLab's cache buster (ServerConnection's no-store GETs) never reaches the service
    assert forwarded_query("1795487473600") == ""
    assert forwarded_query("status=all&1795487473600") == "status=all"
    assert forwarded_query("path=1795487473600&%74oken=x") == "path=1795487473600"
    api = "http://127.0.0.1:8000/services/hubgrid/api/v1/"
    assert local_location("/services/hubgrid/api/v1/vfolders/1", api, "/user/a/hubgrid/api/") \
        == "/user/a/hubgrid/api/vfolders/1"
    assert local_location("/hub/api/users", api, "/hubgrid/api/") is None


# -- who may use it -----------------------------------------------------------------


async def test_a_visitor_of_a_shared_server_is_refused(served, tmp_path, monkeypatch):  # noqa: F811
    # gina reaches alice's server (a share); the calls would act as alice
    async with lab_server(tmp_path, monkeypatch, user="gina", owner="alice",
                          api_url=served.api, keypair=keypair_of(served, "alice")) as lab:
        for method in ("GET", "POST", "DELETE"):
            resp, err = await lab.call(method, "hubgrid/api/me")
            assert resp.code == 403, method
            assert "only alice" in err["message"] and "gina" in err["message"]


async def test_an_unauthenticated_caller_is_refused(lab):
    resp, err = await lab.call("GET", "hubgrid/api/me", token=False)
    assert resp.code == 403 and "message" in err


async def login_by_cookie(lab) -> None:
    """A browser's state: Jupyter's login cookie and its _xsrf cookie."""
    resp, _ = await lab.call("GET", f"api/status?token={TOKEN}", token=False)
    assert resp.code == 200
    resp, _ = await lab.call("GET", "login", token=False)
    assert "_xsrf" in lab.jar and any(k.startswith("username-") for k in lab.jar), lab.jar


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_a_browser_call_without_the_xsrf_token_is_refused(lab, method):
    await login_by_cookie(lab)
    resp, me = await lab.call("GET", "hubgrid/api/me", token=False, cookies=True)
    assert resp.code == 200 and me["name"] == "alice"  # the cookie alone logs in
    resp, err = await lab.call(method, "hubgrid/api/vfolders", json_body={"name": "x"},
                               token=False, cookies=True)
    assert resp.code == 403 and "_xsrf" in err["message"]


async def test_a_browser_call_with_the_xsrf_token_is_forwarded(lab):
    await login_by_cookie(lab)
    resp, folder = await lab.call("POST", "hubgrid/api/vfolders", json_body={"name": "viaxsrf"},
                                  token=False, cookies=True,
                                  headers={"X-XSRFToken": lab.jar["_xsrf"]})
    assert resp.code == 201, folder
    assert folder["name"] == "viaxsrf"


# -- a service that cannot be reached --------------------------------------------


async def test_an_unreachable_service_is_a_502_with_a_message(tmp_path, monkeypatch):
    from tornado.testing import bind_unused_port

    sock, port = bind_unused_port()
    sock.close()  # nothing listens there now
    async with lab_server(tmp_path, monkeypatch, owner="alice", api_token="t",
                          api_url=f"http://127.0.0.1:{port}/services/hubgrid/api/v1/") as lab:
        resp, err = await lab.call("GET", "hubgrid/api/me")
        assert resp.code == 502 and "unreachable" in err["message"]


async def test_a_server_without_the_api_url_or_a_credential_answers_503(tmp_path, monkeypatch):
    async with lab_server(tmp_path, monkeypatch, owner="alice", api_token="t") as lab:
        resp, err = await lab.call("GET", "hubgrid/api/me")
        assert resp.code == 503 and "HUBGRID_API_URL" in err["message"]
    async with lab_server(tmp_path, monkeypatch, owner="alice",
                          api_url="http://127.0.0.1:9/api/") as lab:
        resp, err = await lab.call("GET", "hubgrid/api/me")
        assert resp.code == 503 and "JUPYTERHUB_API_TOKEN" in err["message"]


def test_the_defaults_come_from_the_sessions_environment(monkeypatch):
    from traitlets import TraitError

    from jupyterlab_hubgrid.routes import HubgridLab

    for name in ("HUBGRID_ACCESS_KEY", "HUBGRID_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HUBGRID_API_URL", "http://127.0.0.1:8000/services/hubgrid/api/v1")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "session-token")
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    cfg = HubgridLab()
    assert cfg.api_url == "http://127.0.0.1:8000/services/hubgrid/api/v1/"
    assert cfg.authorization() == "token session-token"
    assert cfg.owner == "alice"
    # a keypair, set in config or as the hubgrid command takes it, wins over the token
    assert HubgridLab(keypair="AK:SK").authorization() == "Keypair AK:SK"
    monkeypatch.setenv("HUBGRID_ACCESS_KEY", "AK2")
    assert HubgridLab().authorization() == "token session-token"  # half a keypair: none
    monkeypatch.setenv("HUBGRID_SECRET_KEY", "SK2")
    assert HubgridLab().authorization() == "Keypair AK2:SK2"
    with pytest.raises(TraitError, match="http"):
        HubgridLab(api_url="file:///etc/passwd")


# -- through the real hub ---------------------------------------------------------


@pytest.mark.hub
def test_a_session_calls_hubgrid_with_its_own_token_and_refuses_a_visitor(hub):  # noqa: F811
    """A real session (local process spawner): its Lab's server extension reaches
    the service through the proxy (HUBGRID_API_URL from the spawner) with the
    server's own token (access:services!service=hubgrid from
    server_token_scopes); a user the owner shared the server with is refused."""
    name, visitor = "lab" + uuid.uuid4().hex[:6], "vis" + uuid.uuid4().hex[:6]
    for user in (name, visitor):
        assert hub.login(user).status_code == 302
    r = hub.hub_call("POST", f"users/{name}/server",
                     json={"user_options": {"cpu": "0.5", "mem": "512M"}})
    assert r.status_code in (201, 202), r.text
    url = f"{hub.url}/user/{name}/hubgrid/api/me"

    def me(user):
        return requests.get(url, headers={"Authorization": f"token {hub.token(user)}"},
                            timeout=30, allow_redirects=False)

    try:
        r = eventually(lambda: (r := me(name)).status_code == 200 and r, timeout=60)
        assert r, f"{url}: {me(name).status_code} {me(name).text[:300]}"
        assert (r.json()["name"], r.json()["credential"]) == (name, "token")

        # users may not share by default here (no `shares` scope): the admin does
        r = hub.hub_call("POST", f"shares/{name}/", json={"user": visitor})
        assert r.status_code == 200, r.text
        r = me(visitor)
        assert r.status_code == 403, r.text
        assert f"only {name}" in r.json()["message"]
    finally:
        hub.hub_call("DELETE", f"users/{name}/server")


# -- how sessions are wired to it (hub_ext.config, the spawner mixin) ----------------


def test_configure_adds_the_hubgrid_scope_to_the_hubs_default_server_scopes(tmp_path):
    from traitlets.config import Config

    from hub_ext.config import configure

    c = Config()
    configure(c, state_dir=tmp_path)
    # JupyterHub's `server` role (what a server token gets when nothing is set), plus ours
    assert c.Spawner.server_token_scopes == [
        "users:activity!user", "access:servers!server", "access:services!service=hubgrid",
        "servers!user"]


def test_configure_extends_server_token_scopes_set_before(tmp_path):
    from traitlets.config import Config

    from hub_ext.config import configure

    c = Config()
    c.Spawner.server_token_scopes = ["users:activity!user", "read:users:name!user"]
    configure(c, state_dir=tmp_path)
    assert c.Spawner.server_token_scopes == [
        "users:activity!user", "read:users:name!user", "access:services!service=hubgrid",
        "servers!user"]


async def test_configure_extends_a_callable_server_token_scopes(tmp_path):
    from traitlets.config import Config

    from hub_ext.config import configure

    async def per_user(spawner):
        return ["users:activity!user", f"read:users!user={spawner.user.name}"]

    c = Config()
    c.Spawner.server_token_scopes = per_user
    configure(c, state_dir=tmp_path)
    spawner = SimpleNamespace(user=SimpleNamespace(name="alice"))
    assert await c.Spawner.server_token_scopes(spawner) == [
        "users:activity!user", "read:users!user=alice", "access:services!service=hubgrid",
        "servers!user"]


def local_spawner(proxy_url: str, **traits):
    from spawner import HubgridLocalProcessSpawner

    hub = SimpleNamespace(base_url="/hub/", api_url="http://127.0.0.1:8081/hub/api",
                          public_host="")
    user = SimpleNamespace(name="alice", escaped_name="alice", url="/user/alice/",
                           settings={"proxy": SimpleNamespace(public_url=proxy_url)})
    return HubgridLocalProcessSpawner(user=user, hub=hub, **traits)


def test_a_session_gets_the_api_url_through_the_proxy_on_loopback():
    env = local_spawner("http://:8000").get_env()
    assert env["HUBGRID_API_URL"] == "http://127.0.0.1:8000/services/hubgrid/api/v1/"
    assert env["JUPYTERHUB_API_URL"] == "http://127.0.0.1:8081/hub/api"  # reached the same way
    assert local_spawner("http://127.0.0.2:9000").get_env()["HUBGRID_API_URL"] \
        == "http://127.0.0.2:9000/services/hubgrid/api/v1/"


def test_a_configured_api_url_or_public_url_wins():
    sp = local_spawner("http://:8000", public_hub_url="https://hub.example.org/x/hub/")
    assert sp.get_env()["HUBGRID_API_URL"] == "https://hub.example.org/services/hubgrid/api/v1/"
    sp = local_spawner("http://:8000", hubgrid_api_url="https://gw.example.org/hg/api/v1/")
    assert sp.get_env()["HUBGRID_API_URL"] == "https://gw.example.org/hg/api/v1/"


def test_session_api_url_reads_wildcards_as_loopback_and_keeps_the_base_url():
    from spawner.mixin import session_api_url

    assert session_api_url("", "http://0.0.0.0:8000", "/") \
        == "http://127.0.0.1:8000/services/hubgrid/api/v1/"
    assert session_api_url("", "https://[::]:443", "/jh/") \
        == "https://127.0.0.1:443/jh/services/hubgrid/api/v1/"
    assert session_api_url("", "http://[::1]:8000", "/") \
        == "http://[::1]:8000/services/hubgrid/api/v1/"
    assert session_api_url("", "", "/") == ""


# -- resumable uploads and downloads (the Data menu's tus client) ---------------


def tus_headers(lab, **more) -> dict:
    """What tus-js-client sends from Lab: tus headers and Jupyter's XSRF token
    (the browser's login cookie goes with ``cookies=True``)."""
    return {"Tus-Resumable": "1.0.0", "X-XSRFToken": lab.jar["_xsrf"], **more}


async def test_a_tus_upload_goes_through_in_chunks_and_resumes_from_the_offset(lab):
    import base64

    await login_by_cookie(lab)
    resp, folder = await lab.call("POST", "hubgrid/api/vfolders", json_body={"name": "tusdata"})
    assert resp.code == 201, folder
    base = f"hubgrid/api/vfolders/{folder['id']}"
    content = bytes(range(256)) * 40  # 10240 bytes, sent as 4096 + 4096 + 2048
    meta = "path " + base64.b64encode("réglé big.bin".encode()).decode()
    resp, created = await lab.call(
        "POST", f"{base}/tus", token=False, cookies=True,
        headers=tus_headers(lab, **{"Upload-Length": str(len(content)),
                                    "Upload-Metadata": meta}))
    assert resp.code == 201, created
    # tus-js-client resolves this against the endpoint: it must stay under the forwarder
    location = resp.headers["Location"]
    assert location == f"/{base}/tus/{created['id']}"
    assert (resp.headers["Upload-Offset"], resp.headers["Tus-Resumable"]) == ("0", "1.0.0")
    upload = location.lstrip("/")

    patch = tus_headers(lab, **{"Content-Type": "application/offset+octet-stream"})
    resp, _ = await lab.call("PATCH", upload, body=content[:4096], token=False, cookies=True,
                             headers={**patch, "Upload-Offset": "0"})
    assert (resp.code, resp.headers["Upload-Offset"]) == (204, "4096")

    # a lost answer: the client sends the same chunk again at its old offset
    resp, err = await lab.call("PATCH", upload, body=content[:4096], token=False, cookies=True,
                               headers={**patch, "Upload-Offset": "0"})
    assert resp.code == 409 and err["message"]
    # ... so it asks where the service is, and goes on from there
    resp, _ = await lab.call("HEAD", upload, token=False, cookies=True, headers=tus_headers(lab))
    assert resp.code == 200
    assert (resp.headers["Upload-Offset"], resp.headers["Upload-Length"]) == ("4096", "10240")
    assert resp.headers["Cache-Control"] == "no-store"
    for start in (4096, 8192):
        resp, _ = await lab.call("PATCH", upload, body=content[start:start + 4096], token=False,
                                 cookies=True, headers={**patch, "Upload-Offset": str(start)})
        assert resp.code == 204
    assert resp.headers["Upload-Offset"] == "10240"

    # the browser's download: a plain GET with the login cookie, a file name to save as
    resp, got = await lab.call("GET", f"{base}/download?path=r%C3%A9gl%C3%A9%20big.bin",
                               token=False, cookies=True)
    assert resp.code == 200 and got == content
    assert resp.headers["Content-Disposition"].startswith("attachment")
    assert "r%C3%A9gl%C3%A9%20big.bin" in resp.headers["Content-Disposition"]


async def test_a_tus_upload_refused_by_the_service_shows_its_message_and_terminates(lab):
    await login_by_cookie(lab)
    resp, folder = await lab.call("POST", "hubgrid/api/vfolders", json_body={"name": "tusrefuse"})
    base = f"hubgrid/api/vfolders/{folder['id']}"
    resp, _ = await lab.call("PUT", f"{base}/upload?path=taken.txt", body=b"x",
                             headers={"Content-Type": "application/octet-stream"})
    assert resp.code == 201
    # the name exists: 409 with the service's words (the Data menu offers to replace)
    resp, err = await lab.call("POST", f"{base}/tus", token=False, cookies=True,
                               headers=tus_headers(lab, **{"Upload-Length": "5",
                                                           "Upload-Metadata": "filename dGFrZW4udHh0"}))
    assert resp.code == 409 and "exists" in err["message"]
    # cancel: an upload is terminated with DELETE, through the forwarder too
    resp, created = await lab.call("POST", f"{base}/tus", token=False, cookies=True,
                                   headers=tus_headers(lab, **{"Upload-Length": "5",
                                                               "Upload-Metadata": "filename bmV3LnR4dA=="}))
    assert resp.code == 201
    upload = resp.headers["Location"].lstrip("/")
    resp, body = await lab.call("DELETE", upload, token=False, cookies=True, headers=tus_headers(lab))
    assert (resp.code, body) == (204, b"")
    resp, _ = await lab.call("HEAD", upload, token=False, cookies=True, headers=tus_headers(lab))
    assert resp.code == 404
    # without Jupyter's XSRF token a browser's tus call is refused before the service
    resp, err = await lab.call("POST", f"{base}/tus", token=False, cookies=True,
                               headers={"Tus-Resumable": "1.0.0", "Upload-Length": "1",
                                        "Upload-Metadata": "filename eA=="})
    assert resp.code == 403 and "_xsrf" in err["message"]


async def folder_with_file(lab, name: str, content: bytes) -> str:
    """A new folder ``name`` holding ``big.bin`` (PUT through the forwarder): its API path."""
    resp, folder = await lab.call("POST", "hubgrid/api/vfolders", json_body={"name": name})
    assert resp.code == 201, folder
    base = f"hubgrid/api/vfolders/{folder['id']}"
    resp, created = await lab.call("PUT", f"{base}/upload?path=big.bin", body=content,
                                   headers={"Content-Type": "application/octet-stream"})
    assert resp.code == 201, created
    return base


async def test_a_download_is_streamed_whatever_its_size(lab):
    from tornado.httpclient import AsyncHTTPClient

    # the forwarder buffers answers up to 16 KiB here (tornado's 100 MB in life):
    # only a streamed one gets past that
    config = lab.app.web_app.settings["hubgrid_lab"]
    config.close()
    config._client = AsyncHTTPClient(force_instance=True, max_body_size=16384)
    content = bytes(range(256)) * 256  # 64 KiB
    base = await folder_with_file(lab, "big", content)
    await login_by_cookie(lab)
    resp, got = await lab.call("GET", f"{base}/download?path=big.bin", token=False, cookies=True)
    assert resp.code == 200 and got == content
    assert resp.headers["Content-Length"] == str(len(content))
    assert resp.headers["Content-Type"] == "application/octet-stream"
    assert resp.headers["Content-Disposition"].startswith("attachment")
    # ranges, and the service's refusals, stream through unchanged
    resp, part = await lab.call("GET", f"{base}/download?path=big.bin",
                                headers={"Range": "bytes=65530-"})
    assert (resp.code, part, resp.headers["Content-Range"]) == (206, content[-6:],
                                                                "bytes 65530-65535/65536")
    resp, err = await lab.call("GET", f"{base}/download?path=nothing.bin")
    assert resp.code == 404 and err["status"] == 404 and "nothing.bin" in err["message"]
    # a buffered answer past the limit is refused (what the download would get unstreamed)
    names = [f"n{i:03}-" + "x" * 200 for i in range(100)]
    for name in names:
        resp, _ = await lab.call("POST", f"{base}/mkdir", json_body={"path": name})
        assert resp.code == 201
    resp, err = await lab.call("GET", f"{base}/files?path=")
    assert resp.code == 502 and "unreachable" in err["message"]


# -- request bodies are streamed, not buffered -------------------------------------


async def test_a_body_over_the_servers_buffer_limit_streams_through(served, tmp_path, monkeypatch):  # noqa: F811
    """Jupyter's server holds at most ``max_body_size`` of a buffered body (64 KiB
    here): a 1 MiB upload gets through only because the forwarder streams it."""
    Folders(served.world, tmp_path / "unused").set_policy("default")
    async with lab_server(tmp_path, monkeypatch, user="alice", owner="alice",
                          api_url=served.api, keypair=keypair_of(served, "alice"),
                          max_body_size=65536) as lab:
        content = bytes(range(256)) * 4096  # 1 MiB
        base = await folder_with_file(lab, "stream", content)
        resp, got = await lab.call("GET", f"{base}/download?path=big.bin")
        assert resp.code == 200 and got == content


async def tus_upload(lab, name: str, length: int) -> str:
    """A tus upload of ``length`` bytes created through the forwarder: its path."""
    import base64

    resp, folder = await lab.call("POST", "hubgrid/api/vfolders", json_body={"name": name})
    assert resp.code == 201, folder
    meta = "path " + base64.b64encode(b"part.bin").decode()
    resp, created = await lab.call(
        "POST", f"hubgrid/api/vfolders/{folder['id']}/tus",
        headers={"Tus-Resumable": "1.0.0", "Upload-Length": str(length), "Upload-Metadata": meta})
    assert resp.code == 201, created
    return resp.headers["Location"].lstrip("/")


async def offset_of(lab, upload: str) -> int:
    resp, _ = await lab.call("HEAD", upload, headers={"Tus-Resumable": "1.0.0"})
    assert resp.code == 200
    return int(resp.headers["Upload-Offset"])


async def test_the_service_gets_a_bodys_first_bytes_before_the_browser_sends_the_rest(lab):
    """While the browser still sends, the service already wrote what came
    (a buffering forwarder would show it nothing until the end)."""
    import asyncio

    half = 512 * 1024
    content = bytes(range(256)) * (2 * half // 256)
    upload = await tus_upload(lab, "early", len(content))
    seen = []

    async def body(write):
        await write(content[:half])
        for _ in range(200):  # at most 10 s
            seen.append(await offset_of(lab, upload))
            if seen[-1] > 0:
                break
            await asyncio.sleep(0.05)
        await write(content[half:])

    resp = await lab.client.fetch(
        lab.url + upload, method="PATCH", body_producer=body, raise_error=False,
        headers={"Authorization": f"token {TOKEN}", "Tus-Resumable": "1.0.0",
                 "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0",
                 "Content-Length": str(len(content))})
    assert seen and 0 < seen[-1] <= half, seen
    assert (resp.code, resp.headers["Upload-Offset"]) == (204, str(len(content)))


async def test_a_body_broken_off_by_the_browser_keeps_its_offset_and_resumes(lab):
    """The browser goes away mid-PATCH: the service keeps the bytes it got
    (the upstream call is aborted, not completed short), and the upload goes
    on from that offset."""
    import asyncio

    from tornado.iostream import IOStream

    half = 256 * 1024
    content = bytes(range(256)) * (2 * half // 256)
    upload = await tus_upload(lab, "broken", len(content))
    host, port = lab.url.split("//")[1].rstrip("/").split(":")
    stream = await IOStream(__import__("socket").socket()).connect((host, int(port)))
    head = (f"PATCH /{upload} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: token {TOKEN}\r\nTus-Resumable: 1.0.0\r\n"
            f"Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\n"
            f"Content-Length: {len(content)}\r\n\r\n").encode()
    await stream.write(head + content[:half])
    offsets = []
    for _ in range(200):  # at most 10 s for the half to land
        offsets.append(await offset_of(lab, upload))
        if offsets[-1] == half:
            break
        await asyncio.sleep(0.05)
    stream.close()
    assert offsets[-1] == half, offsets
    for _ in range(200):  # the service ends the broken PATCH: the upload is free again
        resp, _ = await lab.call("PATCH", upload, body=content[half:], headers={
            "Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream",
            "Upload-Offset": str(half)})
        if resp.code != 423:
            break
        await asyncio.sleep(0.05)
    assert (resp.code, resp.headers.get("Upload-Offset")) == (204, str(len(content)))
    folder = upload.split("/tus/")[0]
    resp, got = await lab.call("GET", f"{folder}/download?path=part.bin")
    assert resp.code == 200 and got == content


async def test_a_log_followed_through_lab_gets_the_positions_to_go_on_from(lab, served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    alloc_id = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    resp, _ = await served.call("POST", f"internal/allocations/{alloc_id}/logs", "internal",
                                body=b"one\ntwo\n")
    assert resp.code == 200
    resp, text = await lab.call("GET", f"hubgrid/api/allocations/{alloc_id}/logs?offset=4")
    assert (resp.code, text) == (200, b"two\n")
    assert (resp.headers["X-Hubgrid-Log-Start"], resp.headers["X-Hubgrid-Log-End"]) == ("4", "8")
