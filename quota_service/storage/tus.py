"""tus uploads: their state on disk (``tus-<id>.json`` next to ``tus-<id>.part``
in the staging directory, so an upload survives a restart) and the
Upload-Metadata header."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from .staging import _STAGING_FLAGS, BadUpload, _staging_dir


_TUS_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class TusState:
    """A tus upload, as stored next to its bytes (``tus-<id>.json``)."""

    id: str
    folder_id: str
    owner: str
    path: str  # the parsed target path, '/'-joined
    length: int
    overwrite: bool
    created: str

    @property
    def part_name(self) -> str:
        return f"tus-{self.id}.part"

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("/"))


def new_tus_id() -> str:
    return secrets.token_hex(16)


def tus_save(staging: Path, state: TusState) -> None:
    """Write the state (atomically) and create the empty part file."""
    data = json.dumps(asdict(state)).encode()
    with _staging_dir(staging) as sfd:
        tmp = f"tus-{state.id}.json.tmp"
        fd = os.open(tmp, _STAGING_FLAGS, 0o600, dir_fd=sfd)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.close(os.open(state.part_name, _STAGING_FLAGS, 0o666, dir_fd=sfd))
        os.rename(tmp, f"tus-{state.id}.json", src_dir_fd=sfd, dst_dir_fd=sfd)
        os.fsync(sfd)


def tus_load(staging: Path, upload_id: str) -> TusState | None:
    """The state of upload ``upload_id``, or None (no such upload, or a malformed id)."""
    if not _TUS_ID.fullmatch(upload_id):
        return None
    try:
        with _staging_dir(staging) as sfd:
            fd = os.open(f"tus-{upload_id}.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=sfd)
            with os.fdopen(fd, "rb") as f:
                return TusState(**json.loads(f.read()))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def tus_offset(staging: Path, state: TusState) -> int:
    with _staging_dir(staging) as sfd:
        return os.stat(state.part_name, dir_fd=sfd, follow_symlinks=False).st_size


def tus_remove(staging: Path, upload_id: str) -> None:
    """Forget a tus upload: its state first (so no half-state remains), then its bytes."""
    with _staging_dir(staging) as sfd:
        for name in (f"tus-{upload_id}.json", f"tus-{upload_id}.part"):
            try:
                os.unlink(name, dir_fd=sfd)
            except FileNotFoundError:
                pass


def encode_metadata(meta: dict[str, str]) -> str:
    """The Upload-Metadata header for ``meta`` (for clients and tests)."""
    return ",".join(f"{k} {base64.b64encode(v.encode()).decode()}" for k, v in meta.items())


def parse_metadata(header: str) -> dict[str, str]:
    """Upload-Metadata: ``key base64,key2 base64`` -> {key: text}; BadUpload if malformed."""
    out: dict[str, str] = {}
    for item in filter(None, (i.strip() for i in header.split(","))):
        key, _, value = item.partition(" ")
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", key) or key in out:
            raise BadUpload(f"Upload-Metadata: bad or repeated key {key[:64]!r}")
        try:
            out[key] = base64.b64decode(value.strip(), validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            raise BadUpload(f"Upload-Metadata: the value of {key!r} is not base64 of UTF-8 "
                            "text") from None
    return out
