"""REST handlers of uploads into a virtual folder: a plain streamed
``PUT .../upload`` and resumable tus 1.0.0 uploads (core, ``creation``,
``termination``) under ``.../tus``.

Both reserve their bytes against the owner's quota before the body comes
(``Uploads``, with the usage read through ``FolderFilesHandler.folder_to_fill``)
and record the usage when the file lands (``completing``). A refusal answers
after the body has been drained (``streamed.DrainingBody``), so it reaches
clients behind a proxy too. The tus state lives in the staging directory, so
uploads survive a restart of the service.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from urllib.parse import quote

from tornado import web

from ..storage import files
from ..core.errors import ApiError, Conflict
from .files import FolderFilesHandler, storage_errors
from .streamed import DrainingBody, declared_length

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,termination"
#: the Tus-Resumable header every tus request but discovery must send (a 412 otherwise)
TUS_HEADER = {"required": True, "description": "the tus protocol version (412 otherwise)",
              "schema": {"type": "string", "enum": [TUS_VERSION]}}
_BYTES = {"type": "integer", "minimum": 0}


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
        parts = self.path_arg()
        overwrite = self.flag("overwrite")
        length = declared_length(self)
        access = await self.folder_to_fill(self.path_kwargs["folder_id"], overwrite)
        self.request.connection.set_max_body_size(length)
        with storage_errors("upload"):
            self._pending = await self.uploads.begin(access, parts, length, overwrite)
        self._access = access
        self._sink = self._pending.upload

    def body_failed(self) -> None:
        self.uploads.abort(self._pending)

    async def put(self, folder_id):
        """Upload a file, its bytes the body, with Content-Length (needs rw; wd to overwrite)."""
        try:
            if self._failure is not None:
                raise self._failure
            async with self.completing() as usage_changed:
                with storage_errors("upload"):
                    entry, _ = await self.uploads.finish(self._pending, self._access,
                                                         usage_changed)
        finally:
            self.uploads.abort(self._pending)
        entry["path"] = files.show(self._pending.parts)
        self.created(entry, self.api_url("vfolders", folder_id, "files")
                     + "?path=" + quote(entry["path"], safe="/"))

    def on_connection_close(self):
        self.uploads.abort(self._pending)
        super().on_connection_close()

    def on_finish(self):
        self.uploads.abort(self._pending)
        super().on_finish()


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
    header_params = {"post": {
        "Tus-Resumable": TUS_HEADER,
        "Upload-Length": {"required": True, "description": "the upload's size in bytes",
                          "schema": _BYTES},
        "Upload-Metadata": {"required": True, "description": "'path' (or 'filename'), "
                            "optional 'overwrite' (true or false), each base64",
                            "schema": {"type": "string"}}}}
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
        """Create a tus upload (Upload-Length, Upload-Metadata ``path``; needs rw, wd to overwrite)."""
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
        parts = files.parse_path(target)
        access = await self.folder_to_fill(folder_id, overwrite)
        self.audit_detail = f"path={files.show(parts)} length={length}"
        created = dt.datetime.now(dt.timezone.utc).isoformat()
        async with self.completing() as usage_changed:
            with storage_errors("upload"):
                state = await self.uploads.tus_create(access, self.principal.name, parts,
                                                      length, overwrite, created)
                if length == 0:
                    upload = files.Upload.resume(access.staging, state.part_name, 0)
                    await self.uploads.tus_complete(access, state, upload, usage_changed)
        self.set_header("Upload-Offset", "0")
        self.created({"id": state.id, "path": state.path, "length": length},
                     self.api_url("vfolders", folder_id, "tus", state.id))


@web.stream_request_body
class TusUploadHandler(TusMixin, StreamedBody, FolderFilesHandler):
    actions = {"PATCH": "upload", "DELETE": "tus-terminate"}
    operations = {"HEAD": "tus-offset", "PATCH": "tus-append", "DELETE": "tus-terminate"}
    success = {"head": "200", "patch": "204", "delete": "204"}
    header_params = {
        "head": {"Tus-Resumable": TUS_HEADER},
        "patch": {"Tus-Resumable": TUS_HEADER,
                  "Upload-Offset": {"required": True, "description": "the upload's current "
                                    "offset (409 otherwise)", "schema": _BYTES}},
        "delete": {"Tus-Resumable": TUS_HEADER}}
    SUPPORTED_METHODS = ("HEAD", "PATCH", "DELETE")

    _state: files.TusState | None = None

    async def prepare(self):
        await super().prepare()
        self.check_tus_version()
        folder_id, upload_id = self.path_kwargs["folder_id"], self.path_kwargs["upload_id"]
        if self.request.method == "PATCH":  # may reserve its bytes again (after a restart)
            self._access = await self.folder_to_fill(folder_id)
        else:
            self._access = await self.folder(folder_id)
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
        """Append the body at Upload-Offset; the last byte lands the file (needs rw, wd to overwrite)."""
        upload = self._sink
        if self._failure is not None:
            raise self._failure
        offset = upload.offset
        async with self.completing() as usage_changed:
            with storage_errors("upload"):
                if upload.offset == self._state.length:
                    await self.uploads.tus_complete(self._access, self._state, upload,
                                                    usage_changed)
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


