"""The files of a virtual folder: who may do what, and the layers that do it.

No database and no HTTP here: the handlers (``api/files.py``) resolve
the caller's permission on a folder, ask :func:`require` whether it covers
the operation, and call the layers below with the folder's root and staging
directories. Each layer is a module of its own in ``storage``; this module
re-exports their public names for the handlers:

- ``paths``: user text -> a tuple of names (:func:`parse_path`), refusing
  anything that could escape or spoof;
- ``tree``: :class:`FolderFS`, the tree under a folder's root, walked
  without ever following a symlink (list, stat, mkdir, move, delete, read);
- ``staging``: staged uploads (:class:`Upload`, moved into place when
  complete), quota reservations (:class:`QuotaBook`), the staging sweep;
- ``tus``: the state of tus uploads on disk and Upload-Metadata;
- ``uploads``: :class:`Uploads`, the uploads of one service process.

Permissions (Backend.AI's ro / rw / wd; a folder's owner has wd). ``ro``
reads. ``rw`` reads, makes new names and writes them: upload a new file,
make a directory. Whatever takes an existing entry away from its path --
delete, move or rename (even of a file the caller made), replace
(``overwrite=true`` in uploads and moves) -- needs ``wd``. An upload that
does not overwrite lands with a link that fails if the name exists, so
``rw`` can never replace a file, however the steps are ordered.
:func:`required_permission` is that rule, for every operation of the files
API.
"""

from __future__ import annotations

from ..core.errors import Denied
from .folders import RANK
from .paths import ( # noqa: F401
    _BIDI,
    _REFUSED_CATEGORIES,
    MAX_DEPTH,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    BadPath,
    parse_path,
    show,
)
from .staging import ( # noqa: F401
    BadUpload,
    QuotaBook,
    QuotaExceeded,
    Reservation,
    Upload,
    check_target,
    plan_sweep,
    sweep_staging,
)
from .tree import MAX_TREE_DEPTH, DeleteFailed, FolderFS, file_bytes  # noqa: F401
from .tus import ( # noqa: F401
    TusState,
    encode_metadata,
    new_tus_id,
    parse_metadata,
    tus_load,
    tus_offset,
    tus_remove,
    tus_save,
)
from .uploads import Pending, Uploads  # noqa: F401

#: the permission each operation of the files API needs as asked
OPERATIONS: dict[str, str] = {
    # reading
    "list": "ro",
    "download": "ro",
    # making new names (never replacing: a no-replace link or mkdir)
    "mkdir": "rw",
    "upload": "rw",
    "tus-create": "rw",
    "tus-append": "rw",
    # the caller's own upload in progress: no entry of the folder is touched
    "tus-offset": "rw",
    "tus-terminate": "rw",
    # taking an existing entry away from its path
    "move": "wd",
    "delete": "wd",
}
#: operations that replace an existing entry when asked to overwrite
REPLACING = frozenset({"upload", "tus-create", "tus-append", "move"})
#: why an operation needs wd, for the refusal
_WHY_WD = "moving, renaming, replacing or deleting an existing entry needs wd"


def required_permission(op: str, overwrite: bool = False) -> str:
    """The permission ("ro" | "rw" | "wd") operation ``op`` needs on a
    folder; ``overwrite``: the caller asked to replace an existing entry.

    >>> required_permission("upload"), required_permission("upload", overwrite=True)
    ('rw', 'wd')
    """
    if op not in OPERATIONS:
        raise ValueError(f"unknown files operation {op!r}")
    if overwrite:
        if op not in REPLACING:
            raise ValueError(f"{op!r} never overwrites")
        return "wd"
    return OPERATIONS[op]


def require(perm: str, op: str, overwrite: bool = False, folder: str = "") -> None:
    """Denied (403) unless permission ``perm`` ("ro" | "rw" | "wd") covers
    ``op`` (see :func:`required_permission`); ``folder`` names it in the message."""
    need = required_permission(op, overwrite)
    if RANK[perm] >= RANK[need]:
        return
    what = f"{op} with overwrite" if overwrite else op
    why = f" ({_WHY_WD})" if need == "wd" else ""
    where = f"vfolder {folder!r}" if folder else "this vfolder"
    raise Denied(f"your permission on {where} is {perm}: {what} needs {need}{why}")
