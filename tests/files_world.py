"""The files API's test world: alice's folder ``data`` through the served app.

Folders are made with the vfolder managers (tests/vfolder_world.py): alice's
``data`` shared with carl (ro), dora (rw) and erin (wd); gina is in another
domain. Import the fixture into a test module::

    from files_world import files  # noqa: F401
"""

from __future__ import annotations

import asyncio
import os
from urllib.parse import urlparse

import pytest
import sqlalchemy as sa
from service_app import served  # noqa: F401
from vfolder_world import Folders, add_extra_users

from quota_service.storage import files as vfiles
from quota_service.core.foldermodels import VFolderShare
from quota_service.core.models import User

SECRET = b"outside the folder"


class Files:
    """alice's folder ``data`` (shared ro/rw/wd with carl/dora/erin), its
    directory, and helpers over the served API."""

    def __init__(self, served, tmp_path):  # noqa: F811
        self.served = served
        add_extra_users(served.world)
        self.driver = Folders(served.world, tmp_path / "unused")
        self.driver.hosts = served.svc.vfolder_hosts_resolved
        self.driver.set_policy("default")
        self.id = self.driver.matrix_folders()["user"]
        self.host = served.svc.vfolder_hosts_resolved["local"]
        self.root = self.host.folder_dir(self.id)
        self.staging = self.host.staging
        self.secret = self.host.path / "secret"
        self.secret.write_bytes(SECRET)
        self.secret_mtime = self.secret.stat().st_mtime_ns
        self.host_entries = {p.name for p in self.host.path.iterdir()}

    def url(self, tail: str) -> str:
        return f"vfolders/{self.id}/{tail}"

    async def call(self, method, tail, user="alice", **kw):
        return await self.served.call(method, self.url(tail), user, **kw)

    async def upload(self, path: str, data: bytes, user="alice", overwrite=False):
        q = f"upload?path={path}" + ("&overwrite=true" if overwrite else "")
        return await self.call("PUT", q, user, body=data)

    async def fetch(self, tail, user="alice", headers=None):
        h = {"Authorization": self.served.auth(user), **(headers or {})}
        return await self.served.client.fetch(self.served.api + self.url(tail), headers=h,
                                              raise_error=False)

    def used(self) -> int:
        return self.served.svc.folder_access(self.served.world.principal("alice"),
                                             self.id, "read").used

    def in_flight(self) -> int:
        uploads = getattr(self.served.svc, "file_uploads", None)
        return uploads.book.in_flight("user:alice") if uploads else 0

    def set_share(self, user: str, perm: str) -> None:
        """Change ``user``'s permission on the folder (as an admin would)."""
        with self.served.world.tx() as s:
            uid = s.scalar(sa.select(User.id).where(User.name == user))
            s.execute(sa.update(VFolderShare)
                      .where(VFolderShare.folder_id == self.id, VFolderShare.user_id == uid)
                      .values(permission=perm))

    def tree(self) -> dict[str, object]:
        """The folder's tree: relative path -> bytes (a file) or "dir"."""
        out: dict[str, object] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel = os.path.relpath(dirpath, self.root)
            for d in dirnames:
                out[os.path.normpath(os.path.join(rel, d))] = "dir"
            for f in filenames:
                with open(os.path.join(dirpath, f), "rb") as fh:
                    out[os.path.normpath(os.path.join(rel, f))] = fh.read()
        return out

    def assert_secret_untouched(self):
        assert self.secret.read_bytes() == SECRET
        assert self.secret.stat().st_mtime_ns == self.secret_mtime
        # nothing new next to the folders
        assert {p.name for p in self.host.path.iterdir()} == self.host_entries

    async def raw(self, method: str, tail: str, headers: dict, body: bytes, user="alice"):
        """Send a request over a raw socket (its body may be cut short); the
        writer closes the connection."""
        port = urlparse(self.served.svc.service_url).port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        lines = [f"{method} {self.served.svc.api_prefix}{self.url(tail)} HTTP/1.1",
                 "Host: 127.0.0.1", f"Authorization: {self.served.auth(user)}",
                 *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        return reader, writer

    async def tus(self, method: str, tail: str = "tus", user="alice", headers=None,
                  body: bytes | None = None):
        """A tus request (Tus-Resumable sent) as ``user``: the response."""
        h = {"Authorization": self.served.auth(user), "Tus-Resumable": "1.0.0",
             **(headers or {})}
        if body is None and method in ("POST", "PATCH"):
            body = b""
        return await self.served.client.fetch(self.served.api + self.url(tail), method=method,
                                              headers=h, body=body, raise_error=False)

    async def tus_create(self, path: str, length: int, user="alice", overwrite=False):
        meta = {"path": path, **({"overwrite": "true"} if overwrite else {})}
        return await self.tus("POST", "tus", user, {
            "Upload-Length": str(length), "Upload-Metadata": vfiles.encode_metadata(meta)})


@pytest.fixture
def files(served, tmp_path):  # noqa: F811
    return Files(served, tmp_path)


class Probe:
    """Events set by the upload code: bytes written, uploads aborted or paused."""

    def __init__(self, monkeypatch):
        self.written = 0
        self.reached: dict[int, asyncio.Event] = {}
        self.aborted = asyncio.Event()
        self.paused = asyncio.Event()
        write, abort, pause = vfiles.Upload.write, vfiles.Uploads.abort, vfiles.Uploads.tus_pause
        probe = self

        def on_write(upload, chunk):
            write(upload, chunk)
            probe.written += len(chunk)
            for n, ev in probe.reached.items():
                if upload.offset >= n:
                    ev.set()

        def on_abort(uploads, pending):
            abort(uploads, pending)
            if pending is not None:
                probe.aborted.set()

        def on_pause(uploads, upload):
            pause(uploads, upload)
            probe.paused.set()

        monkeypatch.setattr(vfiles.Upload, "write", on_write)
        monkeypatch.setattr(vfiles.Uploads, "abort", on_abort)
        monkeypatch.setattr(vfiles.Uploads, "tus_pause", on_pause)

    async def offset(self, n: int) -> None:
        ev = self.reached.setdefault(n, asyncio.Event())
        await asyncio.wait_for(ev.wait(), 30)
