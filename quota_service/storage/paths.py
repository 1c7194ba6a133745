"""Safe paths inside a virtual folder: user text -> a tuple of names, or BadPath.

A user path is text relative to the folder's root, ``/`` between names.
:func:`parse_path` turns it into a tuple of names or refuses it: NUL and
other control characters, bidi overrides, backslashes, a leading ``/``,
empty names (``a//b``; one trailing ``/`` is dropped), ``.`` and ``..``
anywhere (``a/./b`` is refused, not normalised: a path has one spelling),
names whose NFKC form is ``.``/``..`` or holds a ``/`` (ONE DOT LEADER,
fullwidth solidus, ...), names over 255 bytes, paths over 4096 bytes or 64
levels. Text is normalised to NFC first, so an NFD name and its NFC twin
are the same file. Percent-decoding is the handler's job and happens
exactly once: ``%2e%2e`` reaching this module is a plain name.
"""

from __future__ import annotations

import unicodedata

from ..core.errors import ApiError
from ..core.names import (
    BIDI_CONTROLS,
    UNSAFE_CATEGORIES,
    looks_like_dots_or_separator,
    unsafe_char,
)


MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
MAX_DEPTH = 64

# the characters no name may hold: one rule for paths and entity names (names.py)
_BIDI = BIDI_CONTROLS
_REFUSED_CATEGORIES = UNSAFE_CATEGORIES


class BadPath(ApiError):
    status = 400
    reason = "bad-path"



def show(parts: tuple[str, ...]) -> str:
    """A parsed path as the user would write it (the root is ``/``)."""
    return "/".join(parts) or "/"


def parse_path(text: str, *, root_ok: bool = False) -> tuple[str, ...]:
    """A user path -> its names (``()`` is the folder's root), or BadPath."""
    if not isinstance(text, str):
        raise BadPath("path: must be text")
    ch = unsafe_char(text)
    if ch is not None:
        raise BadPath(f"path: contains the control character U+{ord(ch):04X}")
    if "\\" in text:
        raise BadPath("path: backslashes are not allowed ('/' separates names)")
    text = unicodedata.normalize("NFC", text)
    if text.startswith("/"):
        raise BadPath("path: must be relative to the folder (no leading '/')")
    if len(text.encode()) > MAX_PATH_BYTES:
        raise BadPath(f"path: longer than {MAX_PATH_BYTES} bytes")
    if text.endswith("/"):
        text = text[:-1]  # 'dir/' names the directory 'dir'
    if text == "":
        if root_ok:
            return ()
        raise BadPath("path: names the folder itself; name a file or directory inside it")
    parts = tuple(text.split("/"))
    if len(parts) > MAX_DEPTH:
        raise BadPath(f"path: deeper than {MAX_DEPTH} levels")
    for part in parts:
        if part == "":
            raise BadPath("path: empty name (two '/' in a row)")
        if part in (".", ".."):
            raise BadPath("path: '.' and '..' are not allowed")
        if looks_like_dots_or_separator(part):
            raise BadPath(f"path: the name {part!r} looks like '.', '..' or a path separator")
        if len(part.encode()) > MAX_NAME_BYTES:
            raise BadPath(f"path: a name is longer than {MAX_NAME_BYTES} bytes")
    return parts
