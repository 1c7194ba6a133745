"""REST handlers for the files inside a virtual folder (issue #5, item 5).

Each handler declares the files operation of each verb (``operations``);
every request resolves the caller's permission on the folder through
``service.folder_access`` and asks ``files.require`` whether it covers the
operation: ro reads, rw makes new names (upload, mkdir, tus), and whatever
takes an existing entry away from its path -- delete, move, rename, replace
(``overwrite=true``) -- needs wd. Paths come in the ``path`` query argument
(or the JSON body), decoded once by tornado, and go through
``files.parse_path``.

Uploads: a plain ``PUT .../upload`` streams its body (declared with
Content-Length) to a staging file after the permission and quota checks in
``prepare()``; a dropped connection removes the staging file and releases
the bytes. Resumable uploads speak tus 1.0.0 (core, ``creation``,
``termination``) under ``.../tus``; their state lives in the staging
directory, so they survive a restart of the service. A refusal answers
after the body has been drained (``streamed.DrainingBody``), so it reaches
clients behind a proxy too.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
import os
import re
from contextlib import contextmanager
from urllib.parse import quote

from pydantic import StrictBool, StrictStr
from tornado import iostream, web

from ..storage import files
from ..core.errors import ApiError, Conflict, NotFound
from ..core.schemas import Body, parse
from .base import APIHandler
from .streamed import DrainingBody, declared_length

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,termination"
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


def uploads_of(service) -> files.Uploads:
    """The service process's uploads (made at its first upload)."""
    uploads = getattr(service, "file_uploads", None)
    if uploads is None:
        uploads = files.Uploads(
            staging_max_age=3600.0 * service.vfolder_staging_max_age_hours,
            tus_idle=3600.0 * service.vfolder_tus_expiry_hours,
        )
        service.file_uploads = uploads
    return uploads


class FolderFilesHandler(APIHandler):
    """Base: the folder access of the caller, path and flag arguments."""

    resource = "vfolder-file"
    #: audit action per HTTP verb
    actions: dict[str, str] = {}
    #: the files operation of each HTTP verb (``files.OPERATIONS``)
    operations: dict[str, str] = {}

    def audit_action(self, method: str) -> str:
        return f"{self.resource}.{self.actions.get(method, method.lower())}"

    def folder(self, folder_id: str, overwrite: bool = False):
        """The caller's access to the folder, if their permission covers
        this verb's operation (with ``overwrite``: replacing an entry)."""
        self.audit_target = f"vfolder:{folder_id}"
        access = self.service.folder_access(self.principal, folder_id, "read")
        self.permit(access, overwrite)
        return access

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

    def usage_changed(self, folder_id: str, delta: int) -> None:
        if delta:
            self.service.folder_usage_changed(folder_id, delta)

    @property
    def uploads(self) -> files.Uploads:
        return uploads_of(self.service)


class FilesHandler(FolderFilesHandler):
    actions = {"DELETE": "delete"}
    operations = {"GET": "list", "DELETE": "delete"}
    queries = {
        "get": {"path": "a directory to list or a file to describe; empty: the folder's root"},
        "delete": {"path": "the file, symlink or directory to delete",
                   "recursive": "true: delete a directory with everything inside"},
    }

    def get(self, folder_id):
        """List a directory (``entries``) or describe a file (needs ro)."""
        access = self.folder(folder_id)
        parts = self.path_arg(root_ok=True)
        fs = files.FolderFS(access.root)
        with storage_errors("list"):
            entry = fs.stat(parts)
            entry["path"] = files.show(parts)
            if entry["type"] == "dir":
                entry["entries"] = fs.list(parts)
        self.finish_json(entry)

    def delete(self, folder_id):
        """Delete a file, a symlink (not its target) or a directory (needs wd)."""
        access = self.folder(folder_id)
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
            self.usage_changed(folder_id, -freed)
        self.no_content()


class DownloadHandler(FolderFilesHandler):
    operations = {"GET": "download"}
    queries = {"get": {"path": "the file to download"}}
    produces = {"get": "application/octet-stream"}

    async def get(self, folder_id):
        """Download a file (streamed; a single HTTP Range answers 206; needs ro)."""
        access = self.folder(folder_id)
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


class StreamedBody(DrainingBody):
    """Mixin for handlers that take their body in ``data_received``: the
    bytes go to ``self._sink``; a write failure is kept and answered after
    the body, not raised mid-stream."""

    _sink: files.Upload | None = None
    _failure: Exception | None = None

    def body_received(self, chunk: bytes) -> None:
        if self._sink is None or self._failure is not None:
            return  # failed: the rest of the body is read and dropped
        try:
            with storage_errors("upload"):
                self._sink.write(chunk)
        except Exception as e:  # noqa: BLE001 - answered by the verb
            self._failure = e
            self.body_failed()

    def body_failed(self) -> None:
        raise NotImplementedError


@web.stream_request_body
class UploadHandler(StreamedBody, FolderFilesHandler):
    actions = {"PUT": "upload"}
    operations = {"PUT": "upload"}
    queries = {"put": {"path": "where the file goes (its directory must exist)",
                       "overwrite": "true: replace an existing file (needs wd)"}}
    success = {"put": "201"}
    SUPPORTED_METHODS = ("PUT",)

    _pending: files.Pending | None = None

    async def prepare(self):
        await super().prepare()
        folder_id = self.path_args[0]
        parts = self.path_arg()
        overwrite = self.flag("overwrite")
        length = declared_length(self)
        access = self.folder(folder_id, overwrite)
        self.request.connection.set_max_body_size(length)
        with storage_errors("upload"):
            self._pending = await self.uploads.begin(access, parts, length, overwrite)
        self._access = access
        self._sink = self._pending.upload

    def body_failed(self) -> None:
        self.uploads.abort(self._pending)

    async def put(self, folder_id):
        """Upload a new file (the body is its bytes; Content-Length required; needs rw,
        wd to overwrite)."""
        try:
            if self._failure is not None:
                raise self._failure
            with storage_errors("upload"):
                entry, _ = await self.uploads.finish(self._pending, self._access,
                                                     self.usage_changed)
        finally:
            self.uploads.abort(self._pending)
        entry["path"] = files.show(self._pending.parts)
        self.created(entry, self.service.api_url("vfolders", folder_id, "files")
                     + "?path=" + quote(entry["path"], safe="/"))

    def on_connection_close(self):
        self.uploads.abort(self._pending)
        super().on_connection_close()

    def on_finish(self):
        self.uploads.abort(self._pending)
        super().on_finish()


class MkdirHandler(FolderFilesHandler):
    actions = {"POST": "mkdir"}
    operations = {"POST": "mkdir"}
    bodies = {"post": MkdirBody}

    def post(self, folder_id):
        """Make a directory (``parents``: and its missing parents; needs rw)."""
        body = parse(MkdirBody, self.json_body())
        access = self.folder(folder_id)
        parts = files.parse_path(body.path)
        self.audit_detail = f"path={files.show(parts)}"
        with storage_errors("mkdir"):
            entry = files.FolderFS(access.root).mkdir(parts, body.parents)
        entry["path"] = files.show(parts)
        self.created(entry, self.service.api_url("vfolders", folder_id, "files")
                     + "?path=" + quote(entry["path"], safe="/"))


class MoveHandler(FolderFilesHandler):
    actions = {"POST": "move"}
    operations = {"POST": "move"}
    bodies = {"post": MoveBody}
    success = {"post": "200"}

    def post(self, folder_id):
        """Move or rename inside the folder (``overwrite`` replaces a file; needs wd)."""
        body = parse(MoveBody, self.json_body())
        access = self.folder(folder_id, body.overwrite)
        src, dst = files.parse_path(body.src), files.parse_path(body.dst)
        self.audit_detail = f"{files.show(src)} -> {files.show(dst)}"
        fs = files.FolderFS(access.root)
        with storage_errors("move"):
            freed = fs.move(src, dst, body.overwrite)
        self.usage_changed(folder_id, -freed)
        entry = fs.stat(dst)
        entry["path"] = files.show(dst)
        self.finish_json(entry)


# --- tus 1.0.0 ---------------------------------------------------------------

class TusMixin:
    def set_default_headers(self):
        self.set_header("Tus-Resumable", TUS_VERSION)
        self.set_header("Cache-Control", "no-store")

    def check_tus_version(self) -> None:
        if self.request.headers.get("Tus-Resumable") != TUS_VERSION:
            self.set_header("Tus-Version", TUS_VERSION)
            raise ApiError(f"Tus-Resumable: this server speaks tus {TUS_VERSION}", status=412)

    def write_error(self, status_code, **kwargs):
        if status_code == 412:
            self.set_header("Tus-Version", TUS_VERSION)
        super().write_error(status_code, **kwargs)


def _header_int(handler, name: str) -> int | None:
    value = handler.request.headers.get(name)
    if value is None:
        return None
    if not re.fullmatch(r"[0-9]{1,19}", value):
        raise files.BadUpload(f"{name}: not a byte count: {value[:30]!r}")
    return int(value)


class TusCreateHandler(TusMixin, FolderFilesHandler):
    actions = {"POST": "tus-create"}
    operations = {"POST": "tus-create"}
    success = {"post": "201", "options": "204"}
    SUPPORTED_METHODS = ("POST", "OPTIONS")

    async def prepare(self):
        if self.request.method == "OPTIONS":
            return  # discovery needs no caller and says nothing about folders
        await super().prepare()

    def options(self, folder_id):
        """tus discovery: version and extensions."""
        self.set_header("Tus-Version", TUS_VERSION)
        self.set_header("Tus-Extension", TUS_EXTENSIONS)
        self.set_status(204)
        self.finish()

    async def post(self, folder_id):
        """Create a tus upload (Upload-Length; Upload-Metadata ``path`` or ``filename``,
        ``overwrite``; needs rw, wd to overwrite)."""
        self.check_tus_version()
        if "Upload-Defer-Length" in self.request.headers:
            raise files.BadUpload("Upload-Defer-Length is not supported: send Upload-Length")
        length = _header_int(self, "Upload-Length")
        if length is None:
            raise files.BadUpload("Upload-Length: required (the upload's size in bytes)")
        if self.request.body:
            raise files.BadUpload("creation-with-upload is not supported: send the bytes "
                                   "with PATCH")
        meta = files.parse_metadata(self.request.headers.get("Upload-Metadata", ""))
        target = meta.get("path", meta.get("filename"))
        if target is None:
            raise files.BadUpload("Upload-Metadata: 'path' (or 'filename') is required")
        overwrite = meta.get("overwrite", "false").lower()
        if overwrite not in ("true", "false"):
            raise files.BadUpload("Upload-Metadata: 'overwrite' is true or false")
        overwrite = overwrite == "true"
        access = self.folder(folder_id, overwrite)
        parts = files.parse_path(target)
        self.audit_detail = f"path={files.show(parts)} length={length}"
        created = dt.datetime.now(dt.timezone.utc).isoformat()
        with storage_errors("upload"):
            state = await self.uploads.tus_create(access, self.principal.name, parts, length,
                                                  overwrite, created)
            if length == 0:
                upload = files.Upload.resume(access.staging, state.part_name, 0)
                await self.uploads.tus_complete(access, state, upload, self.usage_changed)
        self.set_header("Upload-Offset", "0")
        self.created({"id": state.id, "path": state.path, "length": length},
                     self.service.api_url("vfolders", folder_id, "tus", state.id))


@web.stream_request_body
class TusUploadHandler(TusMixin, StreamedBody, FolderFilesHandler):
    actions = {"PATCH": "upload", "DELETE": "tus-terminate"}
    operations = {"HEAD": "tus-offset", "PATCH": "tus-append", "DELETE": "tus-terminate"}
    success = {"head": "200", "patch": "204", "delete": "204"}
    SUPPORTED_METHODS = ("HEAD", "PATCH", "DELETE")

    _state: files.TusState | None = None

    async def prepare(self):
        await super().prepare()
        self.check_tus_version()
        folder_id, upload_id = self.path_args
        self._access = self.folder(folder_id)
        self._state = self.uploads.tus_get(self._access, self.principal.name, upload_id)
        if self.request.method == "PATCH":  # the last byte lands the file
            self.permit(self._access, self._state.overwrite)
        self.audit_detail = f"path={self._state.path}"
        if self.request.method != "PATCH":
            return
        ctype = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/offset+octet-stream":
            raise ApiError("Content-Type: must be application/offset+octet-stream", status=415)
        offset = _header_int(self, "Upload-Offset")
        if offset is None:
            raise files.BadUpload("Upload-Offset: required")
        nbytes = declared_length(self)
        self.request.connection.set_max_body_size(nbytes)
        await self.uploads.tus_reserve(self._access, self._state)
        with storage_errors("upload"):
            self._sink = self.uploads.tus_open(self._access, self._state, offset, nbytes)

    def body_failed(self) -> None:
        self.uploads.tus_pause(self._sink)

    def head(self, folder_id, upload_id):
        """The upload's offset and length (needs rw)."""
        with storage_errors("upload"):
            offset = files.tus_offset(self._access.staging, self._state)
        self.set_header("Upload-Offset", str(offset))
        self.set_header("Upload-Length", str(self._state.length))
        self.finish()

    async def patch(self, folder_id, upload_id):
        """Append the body at Upload-Offset; the last byte moves the file into place
        (needs rw, wd for an upload that overwrites)."""
        upload = self._sink
        if self._failure is not None:
            raise self._failure
        offset = upload.offset
        with storage_errors("upload"):
            if upload.offset == self._state.length:
                await self.uploads.tus_complete(self._access, self._state, upload,
                                                self.usage_changed)
            else:
                await asyncio.get_running_loop().run_in_executor(None, upload.sync)
                self.uploads.tus_pause(upload)
        self.set_header("Upload-Offset", str(offset))
        self.set_status(204)
        self.finish()

    def delete(self, folder_id, upload_id):
        """Terminate the upload: its bytes and its quota reservation go (needs rw)."""
        if self._state.part_name in self.uploads.busy:
            raise Conflict("a request is writing this upload; terminate it after that ends")
        self.uploads.tus_end(self._access, self._state)
        self.no_content()

    def _pause(self):
        if self._sink is not None and self._sink.open:
            self.uploads.tus_pause(self._sink)

    def on_connection_close(self):
        self._pause()
        super().on_connection_close()

    def on_finish(self):
        self._pause()
        super().on_finish()


ID = r"([^/]+)"

routes = [
    (rf"vfolders/{ID}/files", FilesHandler),
    (rf"vfolders/{ID}/download", DownloadHandler),
    (rf"vfolders/{ID}/upload", UploadHandler),
    (rf"vfolders/{ID}/mkdir", MkdirHandler),
    (rf"vfolders/{ID}/move", MoveHandler),
    (rf"vfolders/{ID}/tus", TusCreateHandler),
    (rf"vfolders/{ID}/tus/{ID}", TusUploadHandler),
]
