"""The pieces every reader of ``model-definition.yaml`` shares: the typed
problems (a field path and a message each) and a collector that converts
values and records what is wrong instead of stopping at the first problem.

Pure: no IO.
"""

from __future__ import annotations

import math
import posixpath
from decimal import Decimal, InvalidOperation

#: the upper bound of every duration field (seconds)
MAX_SECONDS = Decimal(86400)
MAX_TEXT = 4096


class FieldProblem(ValueError):
    """One problem of a definition: the field's path and what is wrong."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class ModelDefinitionError(ValueError):
    """A definition that cannot be used, with every problem found."""

    def __init__(self, problems: list[FieldProblem]):
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))

    def detail(self) -> list[dict]:
        """The problems as JSON-ready data (an API's error detail)."""
        return [{"field": p.path, "message": p.message} for p in self.problems]


class Reader:
    """Collects problems while converting; each converter returns None on a problem."""

    def __init__(self):
        self.problems: list[FieldProblem] = []

    def bad(self, path: str, message: str) -> None:
        self.problems.append(FieldProblem(path, message))

    def mapping(self, path: str, value, allowed: tuple[str, ...] | None) -> dict | None:
        if not isinstance(value, dict):
            self.bad(path, f"must be a mapping, not {kind(value)}")
            return None
        ok = True
        for key in value:
            if not isinstance(key, str):
                self.bad(path, f"keys must be strings, not {kind(key)} ({key!r:.40})")
                ok = False
            elif allowed is not None and key not in allowed:
                self.bad(join(path, key), "unknown field (expected one of: "
                         + ", ".join(allowed) + ")")
                ok = False
        return value if ok else None

    def text(self, path: str, value, *, blank: bool = False, limit: int = MAX_TEXT) -> str | None:
        if not isinstance(value, str):
            self.bad(path, f"must be a string, not {kind(value)}")
            return None
        if not blank and not value.strip():
            self.bad(path, "must not be empty")
            return None
        if len(value) > limit:
            self.bad(path, f"must be at most {limit} characters")
            return None
        if "\x00" in value:
            self.bad(path, "must not contain NUL characters")
            return None
        return value

    def integer(self, path: str, value, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.bad(path, f"must be an integer {low}..{high}"
                     + ("" if isinstance(value, int) and not isinstance(value, bool)
                        else f", not {kind(value)}"))
            return None
        return value

    def seconds(self, path: str, value, *, zero: bool) -> Decimal | None:
        """A duration in seconds: an int, or a decimal number (kept exact as written)."""
        low = "0" if zero else "more than 0"
        message = f"must be a number of seconds, {low} up to {MAX_SECONDS}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.bad(path, f"{message}, not {kind(value)}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.bad(path, message)
            return None
        try:
            # repr: the shortest text that reads back as this float, i.e. what was written
            d = Decimal(value) if isinstance(value, int) else Decimal(repr(value))
        except InvalidOperation:  # pragma: no cover - finite floats always convert
            self.bad(path, message)
            return None
        if d < 0 or (d == 0 and not zero) or d > MAX_SECONDS:
            self.bad(path, message)
            return None
        return d

    def strings(self, path: str, value, *, limit: int = 64) -> tuple[str, ...] | None:
        if not isinstance(value, list):
            self.bad(path, f"must be a list of strings, not {kind(value)}")
            return None
        if len(value) > limit:
            self.bad(path, f"must have at most {limit} items")
            return None
        out = [self.text(f"{path}[{i}]", v, blank=True) for i, v in enumerate(value)]
        return None if any(v is None for v in out) else tuple(out)


def kind(value) -> str:
    return {type(None): "null", bool: "a boolean", int: "an integer", float: "a number",
            str: "a string", list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + "/") for root in roots)


def clean_path(r: Reader, path: str, value, roots: tuple[str, ...]) -> str | None:
    text = r.text(path, value)
    if text is None:
        return None
    where = " or ".join(roots)
    if not text.startswith("/") or ".." in text.split("/") or not under(
            posixpath.normpath(text), roots):
        r.bad(path, f"must be an absolute path under {where} without '..' (got {text!r:.80})")
        return None
    return posixpath.normpath(text)
