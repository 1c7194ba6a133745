"""REST handlers for the files inside a virtual folder.

Each handler declares the files operation of each verb (``operations``);
every request resolves the caller's permission on the folder
(``storage.folders.access``, off the event loop) and asks ``files.require``
whether it covers the operation: ro reads, rw makes new names (upload, mkdir, tus), and whatever
takes an existing entry away from its path -- delete, move, rename, replace
(``overwrite=true``) -- needs wd. Paths come in the ``path`` query argument
(or the JSON body), decoded once by tornado, and go through
``files.parse_path``.

Uploads (``api/uploads.py``): a plain ``PUT .../upload`` streams its body (declared with
Content-Length) to a staging file after the permission and quota checks in
``prepare()``; a dropped connection removes the staging file and releases
the bytes. Resumable uploads speak tus 1.0.0 (core, ``creation``,
``termination``) under ``.../tus``; their state lives in the staging
directory, so they survive a restart of the service. A refusal answers
after the body has been drained (``streamed.DrainingBody``), so it reaches
clients behind a proxy too.
"""

from __future__ import annotations

import errno
import os
import re
from contextlib import asynccontextmanager, contextmanager
from typing import AsyncIterator, Callable
from urllib.parse import quote

from pydantic import StrictBool, StrictStr
from tornado import iostream

from ..storage import files, folders
from ..core.errors import ApiError, Conflict, NotFound
from ..core.schemas import Body, parse
from ..storage.folders import FolderAccess
from .base import APIHandler

DOWNLOAD_CHUNK = 1 << 20


class MkdirBody(Body):
    path: StrictStr
    parents: StrictBool = False


class MoveBody(Body):
    src: StrictStr
    dst: StrictStr
    overwrite: StrictBool = False


class RangeNotSatisfiable(ApiError):
    status = 416
    reason = "range-not-satisfiable"

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """A single ``Range: bytes=...`` -> (first, last) inclusive, or None for
    the whole file (no header, a malformed one, or several ranges, which
    RFC 9110 lets a server ignore). RangeNotSatisfiable past the end."""
    if not header:
        return None
    m = re.fullmatch(r"\s*bytes\s*=\s*([0-9]{0,19})\s*-\s*([0-9]{0,19})\s*", header)
    if m is None or (m.group(1) == "" and m.group(2) == ""):
        return None
    first, last = m.group(1), m.group(2)
    if first == "":  # the last N bytes
        n = int(last)
        if n == 0 or size == 0:
            raise RangeNotSatisfiable(f"Range {header.strip()}: the file has {size} bytes", size)
        return max(size - n, 0), size - 1
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if last != "" and int(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise RangeNotSatisfiable(f"Range {header.strip()}: the file has {size} bytes", size)
    return start, end


def attachment(name: str) -> str:
    """Content-Disposition for a download: an ASCII fallback and the exact
    name RFC 5987-encoded."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\%;' else "_" for c in name)
    return f"attachment; filename=\"{fallback or 'download'}\"; filename*=UTF-8''{quote(name, safe='')}"


@contextmanager
def storage_errors(what: str):
    """The storage's own refusals as API errors (never a 500 for a full disk)."""
    try:
        yield
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ApiError(f"{what}: the storage is full", status=507) from None
        if e.errno == errno.ENOENT:
            raise NotFound(f"{what}: no such file or directory") from None
        raise Conflict(f"{what}: {e.strerror or e}") from None


class FolderFilesHandler(APIHandler):
    """Base: the folder access of the caller, path and flag arguments, usage."""

    resource = "vfolder-file"
    #: audit action per HTTP verb
    actions: dict[str, str] = {}
    #: the files operation of each HTTP verb (``files.OPERATIONS``)
    operations: dict[str, str] = {}

    def audit_action(self, method: str) -> str:
        return f"{self.resource}.{self.actions.get(method, method.lower())}"

    async def folder(self, folder_id: str, overwrite: bool = False) -> FolderAccess:
        """The caller's access to the folder, if their permission covers
        this verb's operation (with ``overwrite``: replacing an entry)."""
        self.audit_target = f"vfolder:{folder_id}"
        hosts = self.vfolder_hosts
        access = await self.db(lambda s: folders.access(s, self.principal, folder_id, "read",
                                                         hosts))
        self.permit(access, overwrite)
        return access

    async def folder_to_fill(self, folder_id: str, overwrite: bool = False) -> FolderAccess:
        """``folder``, read so that a reservation may follow it at once
        (no ``await`` in between): see ``uploadbook.UsageGate``."""
        return await self.uploads.usage.read(lambda: self.folder(folder_id, overwrite))

    def permit(self, access, overwrite: bool = False) -> None:
        """Denied unless ``access`` covers this verb's operation."""
        files.require(access.perm, self.operations[self.request.method], overwrite,
                       access.name)

    def raw_argument(self, name: str) -> str:
        """A query argument exactly as sent, percent-decoded once: tornado's
        own getters would turn control characters into spaces and strip
        whitespace, changing the name instead of refusing it."""
        values = self.request.query_arguments.get(name, [])
        if len(values) > 1:
            raise files.BadPath(f"{name}: given {len(values)} times")
        try:
            return values[0].decode("utf-8") if values else ""
        except UnicodeDecodeError:
            raise files.BadPath(f"{name}: not valid UTF-8") from None

    def path_arg(self, name: str = "path", root_ok: bool = False) -> tuple[str, ...]:
        parts = files.parse_path(self.raw_argument(name), root_ok=root_ok)
        self.audit_detail = f"{name}={files.show(parts)}"
        return parts

    def flag(self, name: str) -> bool:
        value = self.get_query_argument(name, "false").lower()
        if value not in ("true", "false", "1", "0"):
            raise ApiError(f"{name}: true or false, not {value[:20]!r}")
        return value in ("true", "1")

    async def usage_changed(self, folder_id: str, delta: int) -> None:
        """Keep the folder's cached usage right after a write or a delete."""
        if delta:
            await self.db(lambda s: folders.add_usage(s, folder_id, delta))

    @asynccontextmanager
    async def completing(self) -> AsyncIterator[Callable[[str, int], None]]:
        """The ``usage_changed`` callback of a completing upload
        (``Uploads.finish``, ``tus_complete``): the usage it notes is
        written on the way out, and reservations wait for it meanwhile."""
        gate, noted = self.uploads.usage, []

        def note(folder_id: str, delta: int) -> None:
            if delta > 0:  # a shrink over-counts for a moment: never too little
                gate.recording()
            noted.append((folder_id, delta))

        try:
            yield note
        finally:
            for folder_id, delta in noted:
                try:
                    await self.usage_changed(folder_id, delta)
                finally:
                    if delta > 0:
                        gate.recorded()


class FilesHandler(FolderFilesHandler):
    actions = {"DELETE": "delete"}
    operations = {"GET": "list", "DELETE": "delete"}
    queries = {
        "get": {"path": "a directory to list or a file to describe; empty: the folder's root"},
        "delete": {"path": "the file, symlink or directory to delete",
                   "recursive": "true: delete a directory with everything inside"},
    }

    async def get(self, folder_id):
        """List a directory (``entries``) or describe a file (needs ro)."""
        access = await self.folder(folder_id)
        parts = self.path_arg(root_ok=True)
        fs = files.FolderFS(access.root)
        with storage_errors("list"):
            entry = fs.stat(parts)
            entry["path"] = files.show(parts)
            if entry["type"] == "dir":
                entry["entries"] = fs.list(parts)
        self.finish_json(entry)

    async def delete(self, folder_id):
        """Delete a file, a symlink (not its target) or a directory (needs wd)."""
        access = await self.folder(folder_id)
        parts = self.path_arg()
        recursive = self.flag("recursive")
        freed = 0
        try:
            with storage_errors("delete"):
                freed = files.FolderFS(access.root).delete(parts, recursive)
        except files.DeleteFailed as e:
            freed = e.freed
            raise
        finally:
            await self.usage_changed(folder_id, -freed)
        self.no_content()


class DownloadHandler(FolderFilesHandler):
    operations = {"GET": "download"}
    success = {"get": ("200", "206")}  # the file; a part of it for a Range
    queries = {"get": {"path": "the file to download"}}
    produces = {"get": "application/octet-stream"}

    async def get(self, folder_id):
        """Download a file (streamed; a single HTTP Range answers 206; needs ro)."""
        access = await self.folder(folder_id)
        parts = self.path_arg()
        with storage_errors("download"):
            fd, st = files.FolderFS(access.root).open_read(parts)
        try:
            size = st.st_size
            rng = parse_range(self.request.headers.get("Range"), size)
            first, last = rng if rng is not None else (0, size - 1)
            self.set_header("Content-Type", "application/octet-stream")
            self.set_header("X-Content-Type-Options", "nosniff")
            self.set_header("Accept-Ranges", "bytes")
            self.set_header("Content-Disposition", attachment(parts[-1]))
            self.set_header("Content-Length", str(last - first + 1))
            if rng is not None:
                self.set_status(206)
                self.set_header("Content-Range", f"bytes {first}-{last}/{size}")
            pos = first
            while pos <= last:
                chunk = os.pread(fd, min(DOWNLOAD_CHUNK, last - pos + 1), pos)
                if not chunk:  # the file shrank while we sent it
                    self.log.warning("download of %s in vfolder %s: file shrank; closing",
                                     files.show(parts), folder_id)
                    self.request.connection.close()
                    return
                self.write(chunk)
                pos += len(chunk)
                try:
                    await self.flush()
                except iostream.StreamClosedError:
                    return
        finally:
            os.close(fd)
        self.finish()

    def write_error(self, status_code, **kwargs):
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, RangeNotSatisfiable):
            self.set_header("Content-Range", f"bytes */{exc.size}")
        super().write_error(status_code, **kwargs)


class MkdirHandler(FolderFilesHandler):
    actions = {"POST": "mkdir"}
    operations = {"POST": "mkdir"}
    bodies = {"post": MkdirBody}

    async def post(self, folder_id):
        """Make a directory (``parents``: and its missing parents; needs rw)."""
        body = parse(MkdirBody, self.json_body())
        access = await self.folder(folder_id)
        parts = files.parse_path(body.path)
        self.audit_detail = f"path={files.show(parts)}"
        with storage_errors("mkdir"):
            entry = files.FolderFS(access.root).mkdir(parts, body.parents)
        entry["path"] = files.show(parts)
        self.created(entry, self.api_url("vfolders", folder_id, "files")
                     + "?path=" + quote(entry["path"], safe="/"))


class MoveHandler(FolderFilesHandler):
    actions = {"POST": "move"}
    operations = {"POST": "move"}
    bodies = {"post": MoveBody}
    success = {"post": "200"}

    async def post(self, folder_id):
        """Move or rename inside the folder (``overwrite`` replaces a file; needs wd)."""
        body = parse(MoveBody, self.json_body())
        access = await self.folder(folder_id, body.overwrite)
        src, dst = files.parse_path(body.src), files.parse_path(body.dst)
        self.audit_detail = f"{files.show(src)} -> {files.show(dst)}"
        fs = files.FolderFS(access.root)
        with storage_errors("move"):
            freed = fs.move(src, dst, body.overwrite)
        await self.usage_changed(folder_id, -freed)
        entry = fs.stat(dst)
        entry["path"] = files.show(dst)
        self.finish_json(entry)
