"""Validation of names and resource slot maps: plain functions, no IO."""

from __future__ import annotations

import re
from decimal import Context, Decimal, DecimalException, Inexact, InvalidOperation, Overflow

# domain and project names: lowercase, digits, '-' and '_', at most 64,
# starting and ending with a letter or digit. No '.', so '<domain>.<project>' (the hub
# group name of a project) is never ambiguous.
ENTITY_NAME = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?")
# hub user names as JupyterHub normalises them (e-mail style names allowed)
USER_NAME = re.compile(r"[a-z0-9][a-z0-9._@+-]{0,254}")
# amounts given as text: ASCII digits, optional fraction and exponent; no
# spaces, underscores or other scripts' digits (Decimal() would take them)
AMOUNT_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?", re.ASCII)
# items of name lists (allowed images, vfolder hosts): printable, no spaces
LIST_ITEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,254}", re.ASCII)
SLOT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}(\.[a-z][a-z0-9_-]{0,31})?")
RESOURCE_POLICY_NAME = ENTITY_NAME
# amounts are kept exactly: at most 28 significant digits, below 10**28 and
# not finer than 10**-28; anything else is refused rather than rounded
_AMOUNTS = Context(prec=28, Emax=27, Emin=-28, traps=[InvalidOperation, Overflow, Inexact])


def _describe(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "...")


def check_entity_name(value: str, what: str = "name") -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    if not ENTITY_NAME.fullmatch(value):
        raise ValueError(
            f"{what} {_describe(value)} is not valid: use 1 to 64 lowercase letters, "
            "digits, '-' or '_', starting and ending with a letter or digit"
        )
    return value


def check_user_name(value: str) -> str:
    if not isinstance(value, str):
        raise ValueError("user name must be a string")
    if not USER_NAME.fullmatch(value) or ".." in value:
        raise ValueError(
            f"user name {_describe(value)} is not valid: use 1 to 255 lowercase letters, "
            "digits or '.', '_', '@', '+', '-' (no '..'), starting with a letter or digit"
        )
    return value


def parse_amount(slot: str, value) -> Decimal:
    """An exact, finite, non-negative amount; floats and booleans are refused."""
    if isinstance(value, bool) or isinstance(value, float):
        raise ValueError(
            f"slot {slot!r}: amount {value!r} must be an integer or a decimal string"
        )
    if isinstance(value, str) and not AMOUNT_TEXT.fullmatch(value):
        raise ValueError(f"slot {slot!r}: amount {_describe(value)} is not a number")
    try:
        amount = Decimal(value) if isinstance(value, (int, str, Decimal)) else None
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite():
        raise ValueError(f"slot {slot!r}: amount {value!r} is not a number")
    if amount < 0:
        raise ValueError(f"slot {slot!r}: amount {value} is negative")
    try:
        return amount.copy_abs().normalize(_AMOUNTS)  # copy_abs: "-0" -> "0"
    except DecimalException:
        raise ValueError(
            f"slot {slot!r}: amount {_describe(str(value))} is out of range: at most "
            "28 significant digits, below 10**28"
        ) from None


def check_list_item(value: str) -> str:
    """An image reference or storage host name in an allow-list."""
    if not LIST_ITEM.fullmatch(value):
        raise ValueError(
            f"{_describe(value)} is not valid: 1 to 255 letters, digits or '._:/@+-', "
            "starting with a letter or digit"
        )
    return value


def format_amount(amount: Decimal) -> str:
    """Canonical text of an amount: no exponent, no trailing zeros."""
    text = format(amount.normalize(), "f")
    return text


def check_slots(value) -> dict[str, str]:
    """A slot map ``{name: amount}`` in canonical form (amounts as strings)."""
    if not isinstance(value, dict):
        raise ValueError("resource slots must be an object of slot name to amount")
    out: dict[str, str] = {}
    for slot, amount in value.items():
        if not isinstance(slot, str) or not SLOT_NAME.fullmatch(slot):
            raise ValueError(f"slot name {slot!r} is not valid")
        out[slot] = format_amount(parse_amount(slot, amount))
    return dict(sorted(out.items()))


# vfolder names: what a directory name inside a session may be (issue #5)
FOLDER_NAME_MAX = 64
# control characters (NUL included), lone surrogates, line and paragraph separators
_BAD_FOLDER_CHAR_CATEGORIES = {"Cc", "Cs", "Zl", "Zp"}


def check_folder_name(value: str) -> str:
    """A vfolder name, NFC-normalised: 1 to 64 characters, no '/', not '.' or
    '..', no control characters, no leading or trailing whitespace. A leading
    dot marks a folder mounted into every session automatically."""
    import unicodedata

    if not isinstance(value, str):
        raise ValueError("folder name must be a string")
    name = unicodedata.normalize("NFC", value)
    if not name:
        raise ValueError("folder name must not be empty")
    if len(name) > FOLDER_NAME_MAX:
        raise ValueError(f"folder name {_describe(name)} is longer than {FOLDER_NAME_MAX} characters")
    bad = [c for c in name if unicodedata.category(c) in _BAD_FOLDER_CHAR_CATEGORIES]
    if bad:
        raise ValueError(f"folder name {name!r} holds a control character ({bad[0]!r})")
    if "/" in name:
        raise ValueError(f"folder name {_describe(name)} must not contain '/'")
    if name in (".", ".."):
        raise ValueError(f"folder name {name!r} is not allowed")
    if name != name.strip():
        raise ValueError(f"folder name {_describe(name)} must not start or end with whitespace")
    return name
