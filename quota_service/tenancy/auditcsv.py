"""The access log as CSV (``GET audit?format=csv``): the same filters and
scope as ``audit.query``, written page by page so an export never holds
more than one page in memory. Pure over the entries ``audit.query`` gives."""

from __future__ import annotations

import csv
import datetime as dt
import io

from ..core.errors import Invalid

COLUMNS = ("timestamp", "actor", "actor_domain", "domain", "credential", "source", "action",
           "target", "outcome", "status", "detail")
#: entries per page read from the database
PAGE = 500
#: the most entries one export holds (narrow with since/until for more)
MAX_ROWS = 100_000
#: a cell a spreadsheet would run as a formula starts with one of these
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cell(value) -> str:
    """A value as a CSV cell; text a spreadsheet would take for a formula
    gets a leading apostrophe (OWASP's CSV injection advice)."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA) else text


def header() -> str:
    return rows([dict(zip(COLUMNS, COLUMNS))], quote_formulas=False)


def rows(entries: list[dict], quote_formulas: bool = True) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    for e in entries:
        w.writerow([cell(e[c]) if quote_formulas else e[c] for c in COLUMNS])
    return buf.getvalue()


def export_args(args: dict[str, str], now: dt.datetime) -> dict[str, str]:
    """The filters of an export, with ``until`` fixed to ``now`` (when not
    given) so that entries written meanwhile do not shift the pages."""
    args = {k: v for k, v in args.items() if k != "format"}
    if "limit" in args or "offset" in args:
        raise Invalid("limit and offset page the JSON listing; a CSV export has every "
                      f"matching entry (at most {MAX_ROWS}): narrow it with since and until")
    until = args.get("until")
    if until is None:
        args["until"] = now.isoformat()
    return args


def filename(now: dt.datetime) -> str:
    return f"access-log-{now.strftime('%Y%m%dT%H%M%SZ')}.csv"
