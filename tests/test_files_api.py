"""The files API of vfolders through the real service over loopback HTTP.

The world is alice's folder ``data`` (tests/files_world.py), shared with
carl (ro), dora (rw) and erin (wd); gina is in another domain; who may do
what is in tests/test_files_permissions.py. Uploads that break off are driven over a raw socket; the test waits
for the server's side through probes on the upload code (events, no sleeps).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from urllib.parse import urlparse

import pytest
from files_world import Probe, files, served  # noqa: F401
from tusclient import client as tusclient
from tusclient.exceptions import TusCommunicationError

from quota_service.storage import files as vfiles


# --- round trips -----------------------------------------------------------------

async def test_upload_list_download_and_ranges(files):
    r, body = await files.upload("hello.txt", b"hello world")
    assert r.code == 201, body
    assert body["size"] == 11 and body["path"] == "hello.txt"
    assert r.headers["Location"].endswith(f"/vfolders/{files.id}/files?path=hello.txt")
    assert (files.root / "hello.txt").read_bytes() == b"hello world"
    assert files.used() == 11

    r, listing = await files.call("GET", "files")
    assert r.code == 200 and listing["type"] == "dir" and listing["path"] == "/"
    assert [(e["name"], e["type"], e["size"]) for e in listing["entries"]] == [
        ("hello.txt", "file", 11)]
    r, entry = await files.call("GET", "files?path=hello.txt")
    assert entry["type"] == "file" and "entries" not in entry

    r = await files.fetch("download?path=hello.txt")
    assert r.code == 200 and r.body == b"hello world"
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Accept-Ranges"] == "bytes"
    assert r.headers["Content-Disposition"] == (
        "attachment; filename=\"hello.txt\"; filename*=UTF-8''hello.txt")

    r = await files.fetch("download?path=hello.txt", headers={"Range": "bytes=6-"})
    assert (r.code, r.body, r.headers["Content-Range"]) == (206, b"world", "bytes 6-10/11")
    r = await files.fetch("download?path=hello.txt", headers={"Range": "bytes=-3"})
    assert (r.code, r.body, r.headers["Content-Range"]) == (206, b"rld", "bytes 8-10/11")
    r = await files.fetch("download?path=hello.txt", headers={"Range": "bytes=0-0"})
    assert (r.code, r.body) == (206, b"h")
    r = await files.fetch("download?path=hello.txt", headers={"Range": "bytes=11-"})
    assert r.code == 416 and r.headers["Content-Range"] == "bytes */11"
    assert json.loads(r.body)["reason"] == "range-not-satisfiable"


async def test_a_unicode_name_downloads_with_an_encoded_disposition(files):
    r, _ = await files.upload("r%C3%A9sum%C3%A9%20%22v2%22.txt", b"x")
    assert r.code == 201
    r = await files.fetch("download?path=r%C3%A9sum%C3%A9%20%22v2%22.txt")
    assert r.headers["Content-Disposition"] == (
        "attachment; filename=\"r_sum_ _v2_.txt\"; "
        "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.txt")


async def test_mkdir_move_and_delete(files):
    r, body = await files.call("POST", "mkdir", json_body={"path": "a/b/c", "parents": True})
    assert r.code == 201 and body["type"] == "dir"
    r, body = await files.call("POST", "mkdir", json_body={"path": "a"})
    assert r.code == 409
    await files.upload("a/b/f.bin", b"12345")
    await files.upload("g.bin", b"123")
    assert files.used() == 8

    r, body = await files.call("POST", "move", json_body={"src": "a/b/f.bin", "dst": "g.bin"})
    assert r.code == 409 and "overwrite=true" in body["message"]
    r, body = await files.call("POST", "move", json_body={"src": "a/b/f.bin", "dst": "g.bin",
                                                          "overwrite": True})
    assert r.code == 200 and body["path"] == "g.bin" and body["size"] == 5
    assert files.used() == 5
    r, body = await files.call("POST", "move", json_body={"src": "a/b", "dst": "b"})
    assert r.code == 200 and (files.root / "b" / "c").is_dir()

    r, body = await files.call("DELETE", "files?path=a")
    assert r.code == 204
    r, body = await files.call("DELETE", "files?path=b")
    assert r.code == 409 and "recursive=true" in body["message"]
    await files.upload("b/c/h.bin", b"1234567")
    r, _ = await files.call("DELETE", "files?path=b&recursive=true")
    assert r.code == 204 and not (files.root / "b").exists()
    r, _ = await files.call("DELETE", "files?path=g.bin")
    assert r.code == 204 and files.used() == 0
    r, body = await files.call("DELETE", "files?path=g.bin")
    assert r.code == 404


async def test_bad_input_is_a_4xx_with_a_message(files):
    for method, tail, kw in [
        ("POST", "mkdir", {"json_body": {"path": 3}}),
        ("POST", "mkdir", {"json_body": {"path": "x", "extra": 1}}),
        ("POST", "move", {"json_body": {"src": "a"}}),
        ("POST", "mkdir", {"body": b"not json"}),
        ("GET", "files?path=x&nope=1", {}),
        ("DELETE", "files?path=x&recursive=maybe", {}),
        ("PUT", "upload?path=x&overwrite=yes", {"body": b"x"}),
        ("PUT", "upload", {"body": b"x"}),
        ("GET", "download?path=", {}),
    ]:
        r, body = await files.call(method, tail, **kw)
        assert 400 <= r.code < 500 and body["message"], (method, tail, r.code, body)
    assert files.staging.is_dir() and os.listdir(files.staging) == []


# --- quota ----------------------------------------------------------------------

async def test_an_upload_over_quota_is_refused_and_writes_nothing(files):
    files.driver.set_policy("default", max_vfolder_size=100)
    r, body = await files.upload("big.bin", b"x" * 101)
    assert r.code == 413 and body["reason"] == "quota-exceeded"
    assert body["message"] == "vfolder quota: used 0 + in flight 0 + upload 101 > limit 100 bytes"
    assert os.listdir(files.root) == [] and os.listdir(files.staging) == []
    r, body = await files.upload("exact.bin", b"x" * 100)
    assert r.code == 201 and files.used() == 100
    r, body = await files.upload("one.bin", b"x")
    assert r.code == 413 and "used 100 + in flight 0 + upload 1 > limit 100" in body["message"]


async def test_an_upload_cut_short_leaves_nothing_and_the_quota_is_whole(files, monkeypatch):
    files.driver.set_policy("default", max_vfolder_size=100)
    await files.upload("first.bin", b"x" * 10)
    probe = Probe(monkeypatch)
    _, writer = await files.raw("PUT", "upload?path=half.bin", {"Content-Length": "90"},
                                b"y" * 45)
    await probe.offset(45)
    assert files.in_flight() == 90 and len(os.listdir(files.staging)) == 1
    writer.close()
    await writer.wait_closed()
    await asyncio.wait_for(probe.aborted.wait(), 30)
    assert os.listdir(files.root) == ["first.bin"]
    assert os.listdir(files.staging) == []
    assert files.in_flight() == 0 and files.used() == 10
    r, body = await files.upload("rest.bin", b"z" * 90)
    assert r.code == 201, body
    assert files.used() == 100


async def test_an_upload_without_a_declared_size_is_411(files):
    reader, writer = await files.raw("PUT", "upload?path=c.bin",
                                     {"Transfer-Encoding": "chunked"}, b"3\r\nabc\r\n0\r\n\r\n")
    status = await reader.readline()
    writer.close()
    assert status.split()[1] == b"411"
    assert os.listdir(files.root) == [] and os.listdir(files.staging) == []


async def test_concurrent_uploads_racing_for_the_last_bytes_one_lands(files):
    files.driver.set_policy("default", max_vfolder_size=100)
    await files.upload("base.bin", b"x" * 40)
    results = await asyncio.gather(*(files.upload(f"r{i}.bin", b"y" * 60) for i in range(3)))
    codes = sorted(r.code for r, _ in results)
    assert codes == [201, 413, 413]
    assert files.used() == 100 and files.in_flight() == 0
    assert len(os.listdir(files.root)) == 2 and os.listdir(files.staging) == []


# --- traversal and symlinks -------------------------------------------------------

TRAVERSALS = ["%2e%2e%2fsecret", "..%2fsecret", "%2e%2e/secret", "../secret", "%2fetc%2fpasswd",
              "a%00b", "a%2F%2E%2E%2F%2E%2E%2Fsecret", "%EF%BC%8F..%EF%BC%8Fsecret",
              "%E2%80%A4%E2%80%A4/secret", "a%5C..%5Csecret"]


@pytest.mark.parametrize("path", TRAVERSALS)
async def test_traversal_in_the_query_is_refused_everywhere(files, path):
    for method, tail, kw in [
        ("GET", f"files?path={path}", {}),
        ("GET", f"download?path={path}", {}),
        ("PUT", f"upload?path={path}", {"body": b"pwned"}),
        ("PUT", f"upload?path={path}&overwrite=true", {"body": b"pwned"}),
        ("DELETE", f"files?path={path}&recursive=true", {}),
    ]:
        r, body = await files.call(method, tail, **kw)
        assert r.code == 400 and body["reason"] == "bad-path", (method, tail, r.code, body)
    from urllib.parse import unquote
    raw = unquote(path)
    for tail, body in [("mkdir", {"path": raw, "parents": True}),
                       ("move", {"src": raw, "dst": "x"}), ("move", {"src": "x", "dst": raw})]:
        r, answer = await files.call("POST", tail, json_body=body)
        assert r.code == 400 and answer["reason"] == "bad-path", (tail, body, answer)
    files.assert_secret_untouched()
    assert os.listdir(files.root) == [] and os.listdir(files.staging) == []


async def test_query_paths_are_taken_exactly_as_sent(files):
    r, body = await files.upload("%20spaced%20", b"x")
    assert r.code == 201 and body["path"] == " spaced "
    assert (files.root / " spaced ").read_bytes() == b"x"
    for tail in ("files?path=%FF", "files?path=a&path=b", "files?path=a%0Db"):
        r, body = await files.call("GET", tail)
        assert r.code == 400 and body["reason"] == "bad-path", (tail, body)


async def test_a_doubly_encoded_name_is_a_plain_name_inside(files):
    r, body = await files.call("POST", "mkdir", json_body={"path": "%2e%2e"})
    assert r.code == 201
    r, body = await files.upload("%252e%252e/secret", b"inside")
    assert r.code == 201 and body["path"] == "%2e%2e/secret"
    assert (files.root / "%2e%2e" / "secret").read_bytes() == b"inside"
    files.assert_secret_untouched()


async def test_a_symlink_in_the_folder_is_listed_never_followed(files):
    (files.root / "escape").symlink_to(files.secret)
    (files.root / "updir").symlink_to(files.host.path)
    r, listing = await files.call("GET", "files")
    assert {e["name"]: e["type"] for e in listing["entries"]} == {"escape": "symlink",
                                                                 "updir": "symlink"}
    for method, tail, kw in [
        ("GET", "download?path=escape", {}),
        ("GET", "files?path=updir/secret", {}),
        ("GET", "download?path=updir/secret", {}),
        ("PUT", "upload?path=updir/new", {"body": b"x"}),
        ("DELETE", "files?path=updir/secret", {}),
    ]:
        r, body = await files.call(method, tail, **kw)
        assert r.code == 409 and "symlink" in body["message"], (method, tail, body)
    r, _ = await files.call("DELETE", "files?path=escape")
    assert r.code == 204
    files.assert_secret_untouched()


# --- permissions ----------------------------------------------------------------

async def test_another_domains_user_gets_404_for_everything(files):
    await files.upload("f.txt", b"data")
    for method, tail, kw in [
        ("GET", "files", {}), ("GET", "download?path=f.txt", {}),
        ("PUT", "upload?path=x", {"body": b"x"}),
        ("POST", "mkdir", {"json_body": {"path": "d"}}),
        ("POST", "move", {"json_body": {"src": "f.txt", "dst": "g"}}),
        ("DELETE", "files?path=f.txt", {}),
    ]:
        r, body = await files.call(method, tail, "gina", **kw)
        assert r.code == 404 and body["reason"] == "not-found", (method, tail, r.code, body)
    assert os.listdir(files.root) == ["f.txt"]


# --- tus --------------------------------------------------------------------------

def tus_client(files, user="alice") -> tusclient.TusClient:
    return tusclient.TusClient(files.served.api + files.url("tus"),
                               headers={"Authorization": files.served.auth(user)})


async def test_tus_upload_with_the_tuspy_client(files):
    data = bytes(range(256)) * 40
    client = tus_client(files)

    def upload():
        up = client.uploader(file_stream=io.BytesIO(data), chunk_size=1000,
                             metadata={"path": "tus/\u00e9t\u00e9.bin"})
        up.upload()
        return up.url

    await files.call("POST", "mkdir", json_body={"path": "tus"})
    url = await asyncio.to_thread(upload)
    assert f"/vfolders/{files.id}/tus/" in url
    assert (files.root / "tus" / "\u00e9t\u00e9.bin").read_bytes() == data
    assert files.used() == len(data) and files.in_flight() == 0
    assert os.listdir(files.staging) == []
    # the finished upload is gone
    r = await files.served.client.fetch(url, method="HEAD", raise_error=False, headers={
        "Authorization": files.served.auth("alice"), "Tus-Resumable": "1.0.0"})
    assert r.code == 404


async def test_tus_resumes_after_an_interruption(files, monkeypatch):
    data = os.urandom(3000)
    client = tus_client(files)
    first = client.uploader(file_stream=io.BytesIO(data), chunk_size=1000,
                            metadata={"path": "resumed.bin"})
    await asyncio.to_thread(first.upload_chunk)
    assert first.offset == 1000
    # a PATCH that breaks off after 500 of its 1000 bytes
    probe = Probe(monkeypatch)
    tail = first.url.split(files.url(""), 1)[1]
    _, writer = await files.raw("PATCH", tail, {
        "Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": "1000", "Content-Length": "1000"}, data[1000:1500])
    await probe.offset(1500)
    writer.close()
    await writer.wait_closed()
    await asyncio.wait_for(probe.paused.wait(), 30)
    assert not (files.root / "resumed.bin").exists()
    assert files.in_flight() == 3000 and files.used() == 0
    # a new client learns the offset with HEAD and continues from there
    second = await asyncio.to_thread(client.uploader, file_stream=io.BytesIO(data),
                                     chunk_size=1000, url=first.url)
    assert second.offset == 1500
    await asyncio.to_thread(second.upload)
    assert (files.root / "resumed.bin").read_bytes() == data
    assert files.used() == 3000 and files.in_flight() == 0 and os.listdir(files.staging) == []


async def test_tus_uploads_are_their_owners_only(files):
    client = tus_client(files)
    up = client.uploader(file_stream=io.BytesIO(b"abc"), chunk_size=1, metadata={"path": "t"})
    await asyncio.to_thread(up.upload_chunk)
    for user in ("dora", "erin", "gina"):
        other = tus_client(files, user)
        with pytest.raises(TusCommunicationError) as e:
            await asyncio.to_thread(other.uploader, file_stream=io.BytesIO(b"abc"), url=up.url)
        assert e.value.status_code == 404, user
        r = await files.served.client.fetch(up.url, method="DELETE", raise_error=False, headers={
            "Authorization": files.served.auth(user), "Tus-Resumable": "1.0.0"})
        assert r.code == 404
    # the owner terminates it: bytes and reservation go
    r = await files.served.client.fetch(up.url, method="DELETE", raise_error=False, headers={
        "Authorization": files.served.auth("alice"), "Tus-Resumable": "1.0.0"})
    assert r.code == 204
    assert os.listdir(files.staging) == [] and files.in_flight() == 0
    assert os.listdir(files.root) == []


async def test_tus_protocol_refusals(files):
    files.driver.set_policy("default", max_vfolder_size=100)
    api = files.served.api + files.url("tus")
    auth = files.served.auth("alice")

    async def create(**headers):
        h = {"Authorization": auth, "Tus-Resumable": "1.0.0", **headers}
        return await files.served.client.fetch(api, method="POST", body=b"", headers=h,
                                               raise_error=False)

    r = await files.served.client.fetch(api, method="OPTIONS", raise_error=False)
    assert r.code == 204 and r.headers["Tus-Version"] == "1.0.0"
    assert r.headers["Tus-Extension"] == "creation,termination"
    meta = vfiles.encode_metadata({"path": "t.bin"})
    r = await create(**{"Tus-Resumable": "0.2.2", "Upload-Length": "1", "Upload-Metadata": meta})
    assert r.code == 412 and r.headers["Tus-Version"] == "1.0.0"
    r = await create(**{"Upload-Defer-Length": "1", "Upload-Metadata": meta})
    assert r.code == 400 and "not supported" in json.loads(r.body)["message"]
    r = await create(**{"Upload-Metadata": meta})
    assert r.code == 400
    r = await create(**{"Upload-Length": "1"})
    assert r.code == 400 and "'path'" in json.loads(r.body)["message"]
    r = await create(**{"Upload-Length": "1",
                        "Upload-Metadata": vfiles.encode_metadata({"path": "../t"})})
    assert r.code == 400 and json.loads(r.body)["reason"] == "bad-path"
    r = await create(**{"Upload-Length": "101", "Upload-Metadata": meta})
    assert r.code == 413
    r = await create(**{"Upload-Length": "60", "Upload-Metadata": meta})
    assert r.code == 201
    url = urlparse(r.headers["Location"])
    upload = f"http://127.0.0.1:{urlparse(files.served.svc.service_url).port}{url.path}"
    # the reservation holds: a second upload cannot take the same bytes
    r = await create(**{"Upload-Length": "41",
                        "Upload-Metadata": vfiles.encode_metadata({"path": "u.bin"})})
    assert r.code == 413 and "in flight 60" in json.loads(r.body)["message"]

    async def patch(offset, body, ctype="application/offset+octet-stream"):
        return await files.served.client.fetch(upload, method="PATCH", body=body,
                                               raise_error=False, headers={
                                                   "Authorization": auth, "Tus-Resumable": "1.0.0",
                                                   "Content-Type": ctype,
                                                   "Upload-Offset": str(offset)})

    assert (await patch(0, b"x", "application/json")).code == 415
    assert (await patch(5, b"x")).code == 409
    assert (await patch(0, b"x" * 61)).code == 400
    r = await patch(0, b"x" * 60)
    assert r.code == 204 and r.headers["Upload-Offset"] == "60"
    assert (files.root / "t.bin").read_bytes() == b"x" * 60
    assert files.used() == 60 and files.in_flight() == 0


async def test_an_empty_tus_upload_lands_at_creation(files):
    client = tus_client(files)
    up = client.uploader(file_stream=io.BytesIO(b""), metadata={"filename": "empty"})
    await asyncio.to_thread(up.upload)
    assert (files.root / "empty").read_bytes() == b""
    assert os.listdir(files.staging) == []
