"""Which request paths an endpoint's own URL (``e/<id>/``) passes on: pure.

An endpoint's definition may list the paths its model serves
(``service.paths``). Each entry is a path in normal form, or a prefix
ending in ``/*`` that stands for every path beneath it::

    paths: [/v1/chat/completions, /predict, /v2/models/*]

Without that list, an endpoint passes on the OpenAI API's inference routes
(:data:`DEFAULT_PATHS`) and its health check's path; a model server's other
routes (vLLM's ``/v1/load_lora_adapter``, metrics, admin routes) stay
behind the gateway.

A request's path is judged as the model server will read it: percent-escapes
decoded once. A path that is not in normal form -- an empty, ``.`` or ``..``
segment, an encoded ``/`` or ``\\``, a control character -- is refused
before any match (:func:`normal`), so no spelling of a path reaches what its
normal form would not. The gateway then sends the normal form on, quoted
again, never the caller's spelling.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

#: what ``e/<id>/`` passes on when a definition lists no paths (and the
#: health check's path, where the definition has one)
DEFAULT_PATHS = ("/v1/models", "/v1/chat/completions", "/v1/completions", "/v1/embeddings")
#: the most entries a definition may list, and the longest entry
MAX_PATHS = 64
MAX_PATH_LEN = 256
#: characters a path may hold (RFC 3986's path characters, unescaped)
_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                     "-._~!$&'()*+,;=:@/")
#: what ``quote`` leaves as it is when the normal form is sent on
_SAFE = "/-._~!$&'()*+,;=:@"


class BadPath(ValueError):
    """A path that is not in normal form, with why."""


def _check(path: str) -> str:
    if not path.startswith("/"):
        raise BadPath("must start with /")
    if "\\" in path:
        raise BadPath("must not contain \\")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise BadPath("must not contain control characters")
    segments = path.split("/")[1:]
    for i, seg in enumerate(segments):
        if seg in (".", ".."):
            raise BadPath(f"must not contain a {seg!r} segment")
        if seg == "" and i != len(segments) - 1:
            raise BadPath("must not contain an empty segment (//)")
    return path


def normal(raw: str) -> str:
    """The path a server reads from ``raw`` (a request's path as sent,
    percent-escaped), when it is in normal form; BadPath otherwise."""
    low = raw.lower()
    if "%2f" in low or "%5c" in low:
        raise BadPath("must not contain an encoded / or \\")
    try:
        path = unquote(raw, errors="strict") if "%" in raw else raw
    except UnicodeDecodeError:
        raise BadPath("must be UTF-8 once decoded") from None
    if "%" in path and path != raw:
        raise BadPath("must not be percent-encoded twice")
    return _check(path)


def wire(path: str) -> str:
    """A normal path as sent on: escaped again where it must be."""
    return quote(path, safe=_SAFE)


def pattern_problem(entry: str) -> str | None:
    """Why ``entry`` cannot be a ``service.paths`` entry (None when it can)."""
    if len(entry) > MAX_PATH_LEN:
        return f"must be at most {MAX_PATH_LEN} characters"
    if not entry.startswith("/"):
        return "must start with /"
    bad = sorted(set(entry) - _ALLOWED)
    if bad:
        return f"must not contain {bad[0]!r} (path characters only, not escaped)"
    star = entry.find("*")
    if star >= 0 and not (entry.endswith("/*") and star == len(entry) - 1):
        return "may hold * only as its last segment (/prefix/*)"
    try:
        _check(entry[:-1] if entry.endswith("/*") else entry)
    except BadPath as ex:
        return str(ex)
    return None


def allows(patterns: tuple[str, ...] | frozenset[str], path: str) -> bool:
    """Whether the normal ``path`` is one of ``patterns`` or beneath a
    ``/*`` one. A ``/*`` pattern does not take its prefix itself."""
    for p in patterns:
        if p.endswith("/*"):
            if path.startswith(p[:-1]) and len(path) > len(p) - 1:
                return True
        elif path == p:
            return True
    return False


def declared(paths: tuple[str, ...] | None, health_path: str | None) -> tuple[str, ...]:
    """What an endpoint passes on: its listed paths, else the defaults and
    its health check's path."""
    if paths:
        return tuple(paths)
    extra = (health_path,) if health_path and health_path not in DEFAULT_PATHS else ()
    return DEFAULT_PATHS + extra
