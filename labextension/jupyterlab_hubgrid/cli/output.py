"""How the ``hubgrid`` command prints: tables for people, JSON for scripts,
and every string that came from a user (names, reasons, log output) as
inert text.

A terminal obeys control characters: a folder name or a log line carrying
an escape sequence could clear the screen, retitle the window or fake
another line of output, and bidirectional overrides could reorder what is
shown. ``safe`` writes such characters as visible escapes (``\\x1b``,
``\\u202e``). Tables are plain text (tabulate, with number parsing off, so
"0.90" or "1e3" in a name is shown as sent).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Iterable, Sequence

from tabulate import tabulate

from ..client import dumps

#: C0 and C1 controls, DEL, and the bidirectional marks and overrides
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: the same, but tab and newline pass (log output keeps its lines)
_UNSAFE_IN_LOG = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                            "\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def safe(value: Any) -> str:
    """``value`` as one line of inert text (None as "-")."""
    if value is None:
        return "-"
    return _UNSAFE.sub(_escape, str(value))


def safe_log(text: str) -> str:
    """Log output as inert text: lines and tabs stay, CRLF becomes LF, any
    other control character (escape sequences included) is shown escaped."""
    return _UNSAFE_IN_LOG.sub(_escape, text.replace("\r\n", "\n"))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table; every cell through ``safe``."""
    return tabulate([[safe(c) for c in row] for row in rows], headers=list(headers),
                    tablefmt="simple", disable_numparse=True)


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    """Two aligned columns, "name   value", without header."""
    return tabulate([[k, safe(v)] for k, v in pairs], tablefmt="plain",
                    disable_numparse=True)


def to_json(obj: Any) -> str:
    return dumps(obj, indent=2)


def parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(value)


def duration(seconds: float) -> str:
    """3725 -> "1h02m", 65 -> "1m05s", 93784 -> "1d02h"."""
    s = max(int(seconds), 0)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{s:02d}s"
    return f"{s}s"


def short_id(value: str) -> str:
    return value[:8]
