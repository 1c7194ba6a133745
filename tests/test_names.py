"""Names, slot maps and request bodies are refused before anything is stored."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quota_service.core import names, schemas
from quota_service.core.errors import Invalid
from quota_service.core.models import Role

PROPERTY = settings(deadline=None, database=None, max_examples=300)

BAD_NAMES = {
    "empty": "",
    "slash": "a/b",
    "only slash": "/",
    "dot-dot": "..",
    "dot": "a.b",
    "space": "a b",
    "leading space": " acme",
    "trailing space": "acme ",
    "tab": "a\tb",
    "NUL": "acme\x00",
    "newline": "acme\n",
    "carriage return": "ac\rme",
    "DEL": "acme\x7f",
    "300 chars": "a" * 300,
    "uppercase": "Acme",
    "leading dash": "-acme",
    "cyrillic a look-alike": "\u0430cme",
    "fullwidth look-alike": "\uff41cme",
    "zero-width space": "ac\u200bme",
    "combining accent": "acme\u0301",
    "superscript digit": "acme\u00b2",
}


@pytest.mark.parametrize("value", BAD_NAMES.values(), ids=BAD_NAMES.keys())
def test_entity_name_refuses(value):
    with pytest.raises(ValueError, match="is not valid"):
        names.check_entity_name(value)


@pytest.mark.parametrize("value", ["leading_", "_acme", "trailing-", "a" * 65])
def test_entity_name_refuses_bad_ends_and_length(value):
    with pytest.raises(ValueError):
        names.check_entity_name(value)


@pytest.mark.parametrize("value", [None, 5, b"acme", ["acme"]])
def test_entity_name_must_be_a_string(value):
    with pytest.raises(ValueError, match="must be a string"):
        names.check_entity_name(value, "domain")


@pytest.mark.parametrize("value", ["a", "0", "acme", "ml-2", "a_b-c", "9lives", "a" * 64])
def test_entity_name_accepts(value):
    assert names.check_entity_name(value) == value


def test_entity_name_refusal_names_the_field_and_shortens_long_values():
    with pytest.raises(ValueError) as e:
        names.check_entity_name("X" * 300, "project")
    message = str(e.value)
    assert message.startswith("project 'XXXX")
    assert "X" * 41 not in message


@pytest.mark.parametrize(
    "value",
    [v for k, v in BAD_NAMES.items() if k not in ("dot", "300 chars")]
    + ["a..b", "alice..", ".alice", "a" * 256, "alice:x", "alice\\x", "alice#1"],
)
def test_user_name_refuses(value):
    with pytest.raises(ValueError, match="user name"):
        names.check_user_name(value)


@pytest.mark.parametrize(
    "value", ["alice", "a", "alice@example.org", "a.b", "a+tag", "x-y_z", "alice.", "a" * 255]
)
def test_user_name_accepts(value):
    assert names.check_user_name(value) == value


@given(st.one_of(
    st.text(max_size=70),
    st.text(alphabet="abcxyz019-_./ \n\x00A\u0430", max_size=70),
    st.from_regex(names.ENTITY_NAME, fullmatch=True),
))
@PROPERTY
def test_every_accepted_entity_name_follows_the_documented_rule(value):
    try:
        names.check_entity_name(value)
    except ValueError:
        return
    assert 1 <= len(value) <= 64
    assert re.fullmatch(r"[a-z0-9_-]+", value, flags=re.ASCII)
    assert value[0].isalnum() and value[-1].isalnum()
    assert "/" not in value and "." not in value
    assert not any(c.isspace() for c in value)


@given(st.from_regex(names.ENTITY_NAME, fullmatch=True))
@PROPERTY
def test_every_name_of_the_documented_form_is_accepted(value):
    assert names.check_entity_name(value) == value


@given(st.one_of(st.text(max_size=300), st.from_regex(names.USER_NAME, fullmatch=True)))
@PROPERTY
def test_every_accepted_user_name_is_a_safe_path_segment(value):
    try:
        names.check_user_name(value)
    except ValueError:
        return
    assert 1 <= len(value) <= 255
    assert value == value.lower()
    assert "/" not in value and ".." not in value and not value.startswith(".")
    assert not any(c.isspace() or not c.isprintable() for c in value)
    assert value.isascii()


# --- the one rule of characters: file paths and every entity name ---

SPOOFING_CHARS = {
    "right-to-left override": "\u202e", "left-to-right embedding": "\u202a",
    "right-to-left isolate": "\u2067", "pop directional isolate": "\u2069",
    "right-to-left mark": "\u200f", "left-to-right mark": "\u200e",
    "arabic letter mark": "\u061c", "NUL": "\x00", "escape": "\x1b", "DEL": "\x7f",
    "line separator": "\u2028", "lone surrogate": "\ud800",
}
CHECKERS = {
    "entity": lambda v: names.check_entity_name(v, "project"),
    "user": names.check_user_name,
    "folder": names.check_folder_name,
}


@pytest.mark.parametrize("checker", CHECKERS.values(), ids=CHECKERS.keys())
@pytest.mark.parametrize("ch", SPOOFING_CHARS.values(), ids=SPOOFING_CHARS.keys())
def test_every_name_refuses_control_and_bidi_characters_naming_the_character(checker, ch):
    with pytest.raises(ValueError) as e:
        checker(f"gnp{ch}txt")
    assert f"U+{ord(ch):04X}" in str(e.value)
    assert ch not in str(e.value)  # named, never echoed raw


def test_a_bidi_override_is_named_in_words():
    with pytest.raises(ValueError, match=r"U\+202E RIGHT-TO-LEFT OVERRIDE \(a bidi control"):
        names.check_folder_name("\u202egnp.txt")


@pytest.mark.parametrize("name", [
    "back\\slash", "\\", "a\uff0fb", "a\uff3cb", "\u2024\u2024", "\u2025", "\uff0e",
])
def test_folder_names_refuse_separators_and_their_look_alikes(name):
    with pytest.raises(ValueError, match="must not contain '/' or"):
        names.check_folder_name(name)


@given(st.characters(codec="utf-8") | st.characters(categories=["Cs", "Cc", "Cf", "Zl", "Zp"]))
@PROPERTY
def test_file_paths_and_folder_names_refuse_the_same_characters(ch):
    from quota_service.storage.files import BadPath, parse_path

    try:
        parse_path(f"a{ch}b")
        path_refused = False
    except BadPath as e:
        path_refused = "control character" in e.message
    try:
        names.check_folder_name(f"a{ch}b")
        name_refused = False
    except ValueError as e:
        name_refused = "control character" in str(e)
    assert path_refused == name_refused == (names.unsafe_char(ch) is not None)


# --- resource slots ---------------------------------------------------------

@pytest.mark.parametrize(
    "given_slots, canonical",
    [
        ({"gpu.shares": Decimal("0.50")}, {"gpu.shares": "0.5"}),
        ({"mem": "1E+3"}, {"mem": "1000"}),
        ({"cpu": 8}, {"cpu": "8"}),
        ({"cpu": "8.000"}, {"cpu": "8"}),
        ({"cpu": "0.0"}, {"cpu": "0"}),
        ({"cpu": "-0"}, {"cpu": "0"}),
        ({"mem": 2**64}, {"mem": "18446744073709551616"}),
        ({"gpu.shares": "2.5e-1"}, {"gpu.shares": "0.25"}),
        ({"x": "9999999999999999999999999999"}, {"x": "9999999999999999999999999999"}),
        ({"x": "1e-28"}, {"x": "0." + "0" * 27 + "1"}),
        ({}, {}),
    ],
)
def test_slots_come_back_in_canonical_form(given_slots, canonical):
    assert names.check_slots(given_slots) == canonical


def test_slots_come_back_sorted_by_name():
    assert list(names.check_slots({"mem": 1, "cpu": 2, "gpu": 0})) == ["cpu", "gpu", "mem"]


@pytest.mark.parametrize("value", [[], "cpu=1", None, 5, [("cpu", 1)]])
def test_slots_must_be_an_object(value):
    with pytest.raises(ValueError, match="must be an object"):
        names.check_slots(value)


@pytest.mark.parametrize(
    "slot", ["CPU", "1cpu", "", "gpu..shares", "gpu.shares.x", "gpu.", ".gpu", "a" * 33,
             "gpu shares", "gpu/shares", 5, None]
)
def test_slots_refuse_bad_slot_names(slot):
    with pytest.raises(ValueError, match="slot name"):
        names.check_slots({slot: "1"})


BAD_AMOUNTS = {
    "float": 1.5,
    "integral float": 2.0,
    "true": True,
    "false": False,
    "negative int": -1,
    "negative string": "-0.5",
    "negative decimal": Decimal("-1"),
    "NaN string": "NaN",
    "nan string": "nan",
    "sNaN string": "sNaN",
    "NaN decimal": Decimal("NaN"),
    "Infinity string": "Infinity",
    "-Infinity string": "-Infinity",
    "inf string": "inf",
    "Infinity decimal": Decimal("Infinity"),
    "word": "eight",
    "empty string": "",
    "unit suffix": "8G",
    "None": None,
    "list": [1],
    "object": {"n": 1},
    "huge exponent": "1e999999999",
    "huge decimal": Decimal("1e999999"),
    "10**28": 10**28,
    "more than 28 digits": "1" + "0" * 20 + ".00000001",
    "tiny exponent": "1e-999999999",
}


@pytest.mark.parametrize("amount", BAD_AMOUNTS.values(), ids=BAD_AMOUNTS.keys())
def test_slots_refuse_bad_amounts(amount):
    with pytest.raises(ValueError, match="slot 'cpu'"):
        names.check_slots({"cpu": amount})


@given(st.decimals(min_value=0, max_value=10**15, places=8))
@PROPERTY
def test_canonical_amount_is_exact_plain_and_stable(amount):
    text = names.check_slots({"cpu": amount})["cpu"]
    assert Decimal(text) == amount
    assert re.fullmatch(r"(0|[1-9][0-9]*)(\.[0-9]*[1-9])?", text), text
    assert names.check_slots({"cpu": text}) == {"cpu": text}


@given(st.integers(min_value=0, max_value=10**28 - 1))
@PROPERTY
def test_every_integer_below_10_to_the_28_is_kept_exactly(n):
    assert names.check_slots({"mem": n}) == {"mem": str(n)}


# --- request bodies ---------------------------------------------------------

def invalid(model, data) -> Invalid:
    with pytest.raises(Invalid) as e:
        schemas.parse(model, data)
    assert e.value.status == 422
    return e.value


@pytest.mark.parametrize("data", [[], "name=acme", None, 5, ["name"]])
def test_body_must_be_a_json_object(data):
    assert "JSON object" in invalid(schemas.DomainCreate, data).message


@pytest.mark.parametrize(
    "model, data, field",
    [
        (schemas.DomainCreate, {"name": "acme", "owner": "ada"}, "owner"),
        (schemas.DomainUpdate, {"name": "acme2"}, "name"),
        (schemas.ProjectCreate, {"name": "ml", "domain": "acme"}, "domain"),
        (schemas.UserCreate, {"name": "al", "domain": "acme", "admin": True}, "admin"),
        (schemas.UserUpdate, {"name": "al2"}, "name"),
        (schemas.KeypairCreate, {"secret_key": "x"}, "secret_key"),
        (schemas.KeypairUpdate, {"access_key": "HG1"}, "access_key"),
        (schemas.LoginEvent, {"username": "a", "success": True, "password": "p"}, "password"),
    ],
)
def test_unknown_fields_are_refused_by_name(model, data, field):
    err = invalid(model, data)
    assert f"{field}: unknown field" in err.detail


WRONG_TYPES = {
    "name as number": (schemas.DomainCreate, {"name": 5}),
    "bad domain name": (schemas.DomainCreate, {"name": "a/b"}),
    "bool as string": (schemas.DomainCreate, {"name": "acme", "active": "true"}),
    "bool as int": (schemas.DomainCreate, {"name": "acme", "allow_first_login": 1}),
    "description as number": (schemas.DomainCreate, {"name": "acme", "description": 5}),
    "description too long": (schemas.DomainCreate, {"name": "acme", "description": "x" * 4097}),
    "images not a list": (schemas.DomainCreate, {"name": "acme", "allowed_images": "img"}),
    "empty image name": (schemas.DomainCreate, {"name": "acme", "allowed_images": [""]}),
    "float amount": (schemas.DomainCreate, {"name": "acme", "total_resource_slots": {"cpu": 1.5}}),
    "negative amount": (schemas.ProjectCreate, {"name": "ml", "total_resource_slots": {"cpu": -1}}),
    "NaN amount": (schemas.ProjectUpdate, {"total_resource_slots": {"cpu": "NaN"}}),
    "Infinity amount": (schemas.DomainUpdate, {"total_resource_slots": {"gpu": "Infinity"}}),
    "overflowing amount": (
        schemas.DomainUpdate, {"total_resource_slots": {"mem": Decimal("1e999999999")}}
    ),
    "slots not an object": (schemas.ProjectCreate, {"name": "ml", "total_resource_slots": [1]}),
    "unknown role": (schemas.UserCreate, {"name": "al", "domain": "acme", "role": "root"}),
    "uppercase user": (schemas.UserCreate, {"name": "Alice", "domain": "acme"}),
    "user name with NUL": (schemas.UserCreate, {"name": "al\x00", "domain": "acme"}),
    "active as string": (schemas.UserUpdate, {"active": "false"}),
    "not a time": (schemas.KeypairCreate, {"expires_at": "next tuesday"}),
    "user of a keypair as number": (schemas.KeypairCreate, {"user": 7}),
    "success as string": (schemas.LoginEvent, {"username": "a", "success": "yes"}),
    "missing success": (schemas.LoginEvent, {"username": "a"}),
}


@pytest.mark.parametrize("model, data", WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_wrong_types_are_refused(model, data):
    invalid(model, data)


def test_a_refusal_names_every_bad_field():
    err = invalid(schemas.DomainCreate, {"name": "A", "active": "yes", "extra": 1})
    fields = sorted(problem.split(":")[0] for problem in err.detail)
    assert fields == ["active", "extra", "name"]
    assert err.message == "; ".join(err.detail)


def test_a_refusal_never_echoes_the_input():
    secret = "s3cr3t-value-that-must-not-leak"
    err = invalid(schemas.UserUpdate, {"active": secret})
    assert secret not in err.message


def test_valid_bodies_are_parsed_and_slots_canonicalised():
    body = schemas.parse(
        schemas.DomainCreate,
        {"name": "acme", "total_resource_slots": {"mem": "1E+3", "gpu.shares": Decimal("0.50")}},
    )
    assert body.total_resource_slots == {"gpu.shares": "0.5", "mem": "1000"}
    assert body.active is True and body.allow_first_login is False
    user = schemas.parse(schemas.UserCreate, {"name": "al", "domain": "acme", "role": "domain-admin"})
    assert user.role is Role.domain_admin


def test_update_changes_are_only_the_fields_given_with_a_value():
    body = schemas.parse(schemas.UserUpdate, {"active": False, "role": None})
    assert schemas.changes(body) == {"active": False}
    assert schemas.changes(schemas.parse(schemas.DomainUpdate, {})) == {}


@pytest.mark.parametrize("text", ["5_000", " 5", "5 ", "\u0665", "0x10", "1,5", "+1"])
def test_amount_text_is_plain_ascii_decimal(text):
    with pytest.raises(ValueError, match="not a number"):
        names.check_slots({"cpu": text})


@pytest.mark.parametrize("item", ["", "has space", "tab\there", "nul\x00", "-lead", "x" * 256])
def test_allow_list_items_are_refused_when_malformed(item):
    with pytest.raises(Invalid):
        schemas.parse(schemas.DomainCreate, {"name": "okname", "allowed_images": [item]})


def test_allow_list_items_take_image_references_and_host_names():
    body = schemas.parse(schemas.DomainCreate, {
        "name": "okname",
        "allowed_images": ["cr.example.org/hubgrid/base:1.0", "python@sha256:abc"],
        "allowed_vfolder_hosts": ["local", "nfs-1"],
    })
    assert body.allowed_images[0] == "cr.example.org/hubgrid/base:1.0"


BYTES = [
    ("whole GiB", 2 * 2**30, "2 GiB"),
    ("whole MiB", 512 * 2**20, "512 MiB"),
    ("1.5 GiB: two decimals", 1610612736, "1.5 GiB"),
    ("1025 MiB: under 10000 of the largest exact unit", 1074790400, "1025 MiB"),
    ("inexact: rounded, marked, exact bytes after", 200000014, "≈ 190.73 MiB (200000014 B)"),
    ("under a KiB: bytes", 1023, "1023 B"),
    ("not a multiple of a KiB: bytes", 1000, "1000 B"),
    ("zero", 0, "0 B"),
    ("a fraction of a byte is shown as is", Decimal("0.5"), "0.5 B"),
]


@pytest.mark.parametrize("amount, text", [c[1:] for c in BYTES], ids=[c[0] for c in BYTES])
def test_memory_reads_as_the_lab_shows_it_exact_or_marked_with_its_bytes(amount, text):
    assert names.format_bytes(Decimal(amount)) == text
    assert names.format_slot("mem", Decimal(amount)) == text


def test_slots_other_than_memory_read_as_plain_amounts():
    assert names.format_slot("cpu", Decimal("1024")) == "1024"
    assert names.format_slot("gpu.shares", Decimal("0.50")) == "0.5"


def test_the_unsafe_character_class_is_exactly_the_documented_categories():
    """``unsafe_char``'s one pattern against the rule it stands for, at every
    code point of the running Python's Unicode database."""
    import sys
    import unicodedata
    differ = [cp for cp in range(sys.maxunicode + 1)
              if (names.unsafe_char(chr(cp)) is not None)
              != (cp in names.BIDI_CONTROLS
                  or unicodedata.category(chr(cp)) in names.UNSAFE_CATEGORIES)]
    assert differ == []
    assert names.unsafe_char("ab\u202ec\x07") == "\u202e"
    assert names.unsafe_char("plain text, ünïcode ✓") is None
