"""A refused upload answers its JSON 4xx to every client, whatever the body's size.

Through the real hub and configurable-http-proxy: each kind of refusal of
``PUT upload`` and tus ``PATCH`` with a 3 MiB body (before the service
drained refused bodies, the proxy answered 503 "socket hang up" for these).
On the service's own port: the drain keeps the connection alive, and it is
bounded (a body declared past ``drain_max_bytes``, a chunked one, or one
still arriving after ``drain_seconds`` is answered at once and the
connection closes).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from urllib.parse import urlparse

import pytest
from hub_fixtures import hub, world  # noqa: F401
from service_app import served  # noqa: F401

from quota_service.storage import files as vfiles
from quota_service.api.streamed import DrainingBody

BIG = bytes(range(256)) * (3 * 2**20 // 256)  # 3 MiB
TUS = {"Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream"}


def _ok(r, *codes):
    assert r.status_code in codes, f"{r.request.method} {r.url}: {r.status_code} {r.text[:300]}"
    return r.json() if r.content else {}


@pytest.fixture(scope="module")
def place(world):  # noqa: F811
    """alice's folder with f.txt and a 1 KiB tus upload of hers; rita (ro
    invitee) and quinn (a 1 MiB quota, a folder of her own), by keypair."""
    hub, tag = world.hub, uuid.uuid4().hex[:6]
    folder = _ok(hub.call("POST", "vfolders", "alice", json={"name": f"up-{tag}"}), 201)["id"]
    _ok(hub.call("PUT", f"vfolders/{folder}/upload?path=f.txt", "alice", data=b"f"), 201)
    r = hub.call("POST", f"vfolders/{folder}/tus", "alice", headers={
        "Tus-Resumable": "1.0.0", "Upload-Length": "1024",
        "Upload-Metadata": vfiles.encode_metadata({"path": "t.bin"})})
    upload = urlparse(_ok(r, 201) and r.headers["Location"]).path.rsplit("/", 1)[1]
    policy = f"small-{tag}"
    _ok(hub.call("POST", "resource-policies", "admin",
                 json={"name": policy, "max_vfolder_size": 2**20}), 201)
    keys = {}
    for user in (f"rita-{tag}", f"quinn-{tag}"):
        _ok(hub.call("POST", "users", "admin", json={"name": user, "domain": "acme"}), 201)
        kp = _ok(hub.call("POST", "keypairs", "admin", json={"user": user}), 201)
        keys[user.split("-")[0]] = f"Keypair {kp['access_key']}:{kp['secret_key']}"
    _ok(hub.call("PATCH", f"users/quinn-{tag}", "admin", json={"resource_policy": policy}), 200)
    inv = _ok(hub.call("POST", f"vfolders/{folder}/invitations", "alice",
                       json={"user": f"rita-{tag}", "permission": "ro"}), 201)
    _ok(hub.call("POST", f"invitations/{inv['id']}/accept", keys["rita"]), 200)
    quinns = _ok(hub.call("POST", "vfolders", keys["quinn"], json={"name": f"q-{tag}"}), 201)
    return {"folder": folder, "upload": upload, "quinns": quinns["id"], **keys}


# name, method, path, caller, extra headers, status, reason
REFUSALS = [
    ("anonymous", "PUT", "{folder}/upload?path=x.bin", None, {}, 401, "unauthenticated"),
    ("another domain", "PUT", "{folder}/upload?path=x.bin", "gina", {}, 404, "not-found"),
    ("ro invitee", "PUT", "{folder}/upload?path=x.bin", "rita", {}, 403, "forbidden"),
    ("over quota", "PUT", "{quinns}/upload?path=x.bin", "quinn", {}, 413, "quota-exceeded"),
    ("bad path", "PUT", "{folder}/upload?path=../x.bin", "alice", {}, 400, "bad-path"),
    ("missing directory", "PUT", "{folder}/upload?path=no/x.bin", "alice", {}, 404, "not-found"),
    ("existing file", "PUT", "{folder}/upload?path=f.txt", "alice", {}, 409, "conflict"),
    ("unknown query", "PUT", "{folder}/upload?path=x.bin&mode=1", "alice", {}, 422, "invalid"),
    ("method", "POST", "{folder}/upload?path=x.bin", "alice", {}, 405, "http"),
    ("tus anonymous", "PATCH", "{folder}/tus/{upload}", None, TUS, 401, "unauthenticated"),
    ("tus ro invitee", "PATCH", "{folder}/tus/{upload}", "rita", TUS, 403, "forbidden"),
    ("tus other user", "PATCH", "{folder}/tus/{upload}", "gina", TUS, 404, "not-found"),
    ("tus version", "PATCH", "{folder}/tus/{upload}", "alice",
     {**TUS, "Tus-Resumable": "0.2"}, 412, None),
    ("tus content type", "PATCH", "{folder}/tus/{upload}", "alice",
     {**TUS, "Content-Type": "application/json", "Upload-Offset": "0"}, 415, None),
    ("tus offset", "PATCH", "{folder}/tus/{upload}", "alice",
     {**TUS, "Upload-Offset": "7"}, 409, "conflict"),
    ("tus past the length", "PATCH", "{folder}/tus/{upload}", "alice",
     {**TUS, "Upload-Offset": "0"}, 400, "bad-upload"),
]


@pytest.mark.parametrize("name, method, path, caller, headers, status, reason", REFUSALS,
                         ids=[r[0] for r in REFUSALS])
def test_a_refused_upload_answers_its_json_through_the_proxy(
        world, place, name, method, path, caller, headers, status, reason):  # noqa: F811
    auth = place[caller] if caller in ("rita", "quinn") else caller
    target = "vfolders/" + path.format(**place)
    for _ in range(3):
        r = world.hub.call(method, target, auth, headers=dict(headers), data=BIG)
        assert r.status_code == status, (name, r.status_code, r.text[:300])
        assert r.headers["Content-Type"].startswith("application/json"), r.text[:300]
        body = r.json()
        assert body["status"] == status and body["message"], body
        if reason is not None:
            assert body["reason"] == reason, body
    # nothing landed and the tus upload did not move
    r = world.hub.call("HEAD", f"vfolders/{place['folder']}/tus/{place['upload']}", "alice",
                       headers={"Tus-Resumable": "1.0.0"})
    assert r.status_code == 200 and r.headers["Upload-Offset"] == "0"
    listing = _ok(world.hub.call("GET", f"vfolders/{place['folder']}/files", "alice"), 200)
    assert [e["name"] for e in listing["entries"]] == ["f.txt"]


def test_ten_anonymous_uploads_in_a_row_get_401(world, place):  # noqa: F811
    codes = [world.hub.call("PUT", f"vfolders/{place['folder']}/upload?path=x", None,
                            data=BIG).status_code for _ in range(10)]
    assert codes == [401] * 10


# --- the drain on the service's own port ------------------------------------------

async def exchange(served, head: str, body: bytes = b"", then: str | None = None):  # noqa: F811
    """Send a raw request (and ``then`` on the same connection); returns the
    answers [(status, headers, JSON body)] and whether the server closed the
    connection afterwards."""
    port = urlparse(served.svc.service_url).port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head.encode() + body)
        answers = [await read_answer(reader)]
        if then is not None:
            writer.write(then.encode())
            answers.append(await read_answer(reader))
        closed = await asyncio.wait_for(reader.read(1), 30) == b"" if then is None else False
        return answers, closed
    finally:
        writer.close()


async def read_answer(reader):
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    lines = raw.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
    data = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", 0))), 30)
    return int(lines[0].split()[1]), headers, json.loads(data) if data else None


def put(served, length: str, extra: str = "") -> str:  # noqa: F811
    path = f"{served.svc.api_prefix}vfolders/{'0' * 32}/upload?path=x"
    return (f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}"
            f"Content-Length: {length}\r\n\r\n")


def get(served) -> str:  # noqa: F811
    return f"GET {served.svc.api_prefix}vfolders HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def test_a_refused_body_is_drained_and_the_connection_stays_alive(served):  # noqa: F811
    answers, _ = await exchange(served, put(served, str(len(BIG))), BIG, then=get(served))
    (first, h1, b1), (second, _, b2) = answers
    assert first == 401 and b1["reason"] == "unauthenticated" and h1.get("connection") != "close"
    assert second == 401 and b2["reason"] == "unauthenticated"


async def test_a_body_declared_past_the_bound_is_answered_at_once_and_closed(served):  # noqa: F811
    length = str(DrainingBody.drain_max_bytes + 1)
    [(status, headers, body)], closed = await exchange(served, put(served, length), b"x" * 10)
    assert status == 401 and body["reason"] == "unauthenticated"
    assert headers["connection"] == "close" and closed


async def test_a_chunked_refused_body_is_not_drained(served):  # noqa: F811
    head = put(served, "0").replace("Content-Length: 0\r\n", "Transfer-Encoding: chunked\r\n")
    [(status, headers, body)], closed = await exchange(served, head, b"a\r\n0123456789\r\n")
    assert status == 401 and headers["connection"] == "close" and closed


async def test_a_drain_that_takes_too_long_is_cut(served, monkeypatch):  # noqa: F811
    monkeypatch.setattr(DrainingBody, "drain_seconds", 0.01)
    # 1000 bytes declared, 10 sent, and the client waits: the answer comes anyway
    [(status, headers, body)], closed = await exchange(served, put(served, "1000"), b"x" * 10)
    assert status == 401 and body["reason"] == "unauthenticated"
    assert headers["connection"] == "close" and closed



async def test_a_client_that_leaves_during_the_drain_breaks_nothing(served, caplog):  # noqa: F811
    port = urlparse(served.svc.service_url).port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(put(served, "100000").encode() + b"x" * 1000)
    await writer.drain()
    writer.close()
    await writer.wait_closed()
    # the service goes on answering; the held answer went nowhere, quietly
    answers, _ = await exchange(served, put(served, "5"), b"12345", then=get(served))
    assert [status for status, _, _ in answers] == [401, 401]
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
