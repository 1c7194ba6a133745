"""Sizes as people type them: memory and folder sizes in bytes or in binary
units, read exactly. Pure: no IO.

The grammar is the Lab's (``parseBytes`` in labextension/src/amounts.ts) and
the session-side client's (``jupyterlab_hubgrid.amounts.parse_bytes``): a
whole or decimal number, then optionally ``B`` or a unit letter K, M, G, T,
P with or without ``i`` and ``B``, any case, spaces allowed between
("34359738368", "32G", "32 GiB", "512 MiB", "512m", "1.5G", "2048 B").
Units are binary, as JupyterHub's ByteSpecification reads them: "1G" and
"1 GiB" are 1073741824 bytes. A decimal must come to whole bytes ("1.5G"
is 1610612736; "0.3K" is refused): sizes are exact integers.
"""

from __future__ import annotations

import re

#: a size in text (upper-cased before matching)
SIZE = re.compile(r"([0-9]+)(?:\.([0-9]+))?\s*(?:([KMGTP])(?:I?B?)?|B)?", re.ASCII)
#: the same, for the OpenAPI document (any case)
SIZE_PATTERN = r"^\s*[0-9]+(\.[0-9]+)?\s*([KMGTPkmgtp]([iI]?[bB]?)?|[bB])?\s*$"
POWERS = {"K": 10, "M": 20, "G": 30, "T": 40, "P": 50}
#: what the refusals suggest
EXAMPLES = "e.g. 34359738368, 32G, 32 GiB, 512 MiB, 1.5G"


def parse_bytes(value, what: str = "size") -> int:
    """``value`` (an int, or a string in the grammar above) as an exact,
    non-negative count of bytes; ValueError saying why not. Floats and
    booleans are refused: a size is never approximate."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{what}: {value!r} is not a size ({EXAMPLES})")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{what}: {value} is negative")
        return value
    m = SIZE.fullmatch(value.strip().upper()) if len(value) <= 64 else None
    if m is None:
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise ValueError(f"{what}: {shown!r} is not a size ({EXAMPLES}; units are binary)")
    whole, fraction, letter = m.group(1), m.group(2) or "", m.group(3)
    numerator = int(whole + fraction) << (POWERS[letter] if letter else 0)
    denominator = 10 ** len(fraction)
    if numerator % denominator:
        raise ValueError(f"{what}: {value.strip()!r} is not a whole number of bytes")
    return numerator // denominator


def has_unit(text: str) -> bool:
    """Whether a size text names a unit ("32G", "2048 B"), not a plain number
    (which may be "1E+3": the exponent is no unit)."""
    return bool(re.search(r"[KMGTPBkmgtpb]", text))
