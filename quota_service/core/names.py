"""Validation of names and resource slot maps: plain functions, no IO."""

from __future__ import annotations

import re
import unicodedata
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


# --- characters no name may hold: ONE rule for file paths (vfiles) and entity names


#: control characters (NUL included), lone surrogates, line and paragraph separators
UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
#: Unicode's Bidi_Control characters (ALM, LRM, RLM, the embeddings, overrides and
#: isolates): they make a name display as another (U+202E shows 'gnp.txt' as 'txt.png')
BIDI_CONTROLS = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})
SEPARATORS = ("/", "\\")


#: every character of those categories and the bidi controls, as one class
#: (categories Cc, Cs, Zl and Zp are closed sets in Unicode's stability
#: policy; tests/test_names.py checks the class against every code point)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029"
                     "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def unsafe_char(text: str) -> str | None:
    """The first control or bidi control character of ``text``, or None."""
    found = _UNSAFE.search(text)
    return found.group() if found else None


def describe_char(ch: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``: a character that shows nothing, by name."""
    label = unicodedata.name(ch, "")
    kind = "a bidi control character" if ord(ch) in BIDI_CONTROLS else "a control character"
    return f"U+{ord(ch):04X}{' ' + label if label else ''} ({kind})"


def looks_like_dots_or_separator(name: str) -> bool:
    """Is one name '.', '..', or does it hold a separator, once look-alikes
    (ONE DOT LEADER, FULLWIDTH SOLIDUS, ...) are folded (NFKC)?"""
    folded = unicodedata.normalize("NFKC", name)
    return name in (".", "..") or folded in (".", "..") or any(
        sep in name or sep in folded for sep in SEPARATORS)


def _refuse_unsafe(value: str, what: str) -> None:
    ch = unsafe_char(value)
    if ch is not None:
        raise ValueError(f"{what} {_describe(value)} is not valid: it contains {describe_char(ch)}")


def check_entity_name(value: str, what: str = "name") -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    _refuse_unsafe(value, what)
    if not ENTITY_NAME.fullmatch(value):
        raise ValueError(
            f"{what} {_describe(value)} is not valid: use 1 to 64 lowercase letters, "
            "digits, '-' or '_', starting and ending with a letter or digit"
        )
    return value


def check_user_name(value: str) -> str:
    if not isinstance(value, str):
        raise ValueError("user name must be a string")
    _refuse_unsafe(value, "user name")
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


_BINARY = (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
           ("KiB", 1 << 10))


def _hundredths(h: int, unit: str) -> str:
    whole, frac = divmod(h, 100)
    frac_text = f"{frac:02d}".rstrip("0")
    return f"{whole}{'.' + frac_text if frac_text else ''} {unit}"


def format_bytes(amount: Decimal | int) -> str:
    """Bytes for people, the one way the Lab, the CLI and the widgets show
    them (labextension/src/amounts.ts ``formatBytes``): in the largest binary
    unit in which the amount is exact with at most two decimals and under
    10000 (2147483648 -> "2 GiB", 1610612736 -> "1.5 GiB", 1000 -> "1000 B").
    An amount exact in no such unit is rounded half up to two decimals in the
    largest unit it reaches, marked "≈", and followed by its exact bytes,
    since a text has no hover (200000014 -> "≈ 190.73 MiB (200000014 B)")."""
    n = Decimal(amount)
    if n != n.to_integral_value() or n <= 0:
        return f"{format_amount(n)} B"
    whole = int(n)
    hundredths = whole * 100
    for unit, size in _BINARY:
        readable = whole // size < 10000 or unit == "PiB"
        if whole >= size and readable and hundredths % size == 0:
            return _hundredths(hundredths // size, unit)
    for unit, size in _BINARY:
        if whole >= size:
            return f"≈ {_hundredths((hundredths + size // 2) // size, unit)} ({whole} B)"
    return f"{whole} B"


def format_slot(slot: str, amount: Decimal | int) -> str:
    """One slot's amount for people: memory (``mem``) in binary units
    (``format_bytes``), every other slot as its plain amount."""
    return format_bytes(amount) if slot == "mem" else format_amount(Decimal(amount))


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


# vfolder names: what a directory name inside a session may be
FOLDER_NAME_MAX = 64


def check_folder_name(value: str) -> str:
    """A vfolder name, NFC-normalised: 1 to 64 characters, no control or bidi
    control characters, no '/' or '\\' (nor their look-alikes), not '.' or
    '..', no leading or trailing whitespace. A leading dot marks a folder
    mounted into every session automatically."""
    if not isinstance(value, str):
        raise ValueError("folder name must be a string")
    name = unicodedata.normalize("NFC", value)
    if not name:
        raise ValueError("folder name must not be empty")
    if len(name) > FOLDER_NAME_MAX:
        raise ValueError(f"folder name {_describe(name)} is longer than {FOLDER_NAME_MAX} characters")
    _refuse_unsafe(name, "folder name")
    if name in (".", ".."):
        raise ValueError(f"folder name {name!r} is not allowed")
    if looks_like_dots_or_separator(name):
        raise ValueError(f"folder name {_describe(name)} must not contain '/' or '\\' "
                         "(or a character that looks like them or like '.' or '..')")
    if name != name.strip():
        raise ValueError(f"folder name {_describe(name)} must not start or end with whitespace")
    return name
