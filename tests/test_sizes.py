"""Sizes people type: "32G", "512 MiB", "1.5G" or bytes,
read exactly by the service (quota_service/core/sizes.py) and by the
session-side client (jupyterlab_hubgrid.amounts, the CLI's --mem) alike,
accepted by the API where it takes a size, and shown as the Lab shows them."""

from __future__ import annotations

import pytest

from jupyterlab_hubgrid import amounts
from quota_service.core import sizes
from service_app import served  # noqa: F401

GIB = 1 << 30

READ = [
    ("34359738368", 34359738368), ("32G", 32 * GIB), ("32 GiB", 32 * GIB),
    ("512 MiB", 512 << 20), ("512m", 512 << 20), ("1.5G", 1610612736), ("2048 B", 2048),
    (" 1 KB ", 1024), ("8 PiB", 8 << 50), ("7.5 PiB", 15 << 49), ("0.5K", 512), ("0", 0),
    ("9007199254740993", 9007199254740993), (1024, 1024),
]
REFUSED = [
    ("0.3K", "not a whole number of bytes"), ("1.5", "not a whole number of bytes"),
    ("7.999999999 PiB", "not a whole number of bytes"), ("-1G", "not a size"),
    ("1e9", "not a size"), ("12 parsecs", "not a size"), ("", "not a size"),
    ("1 XB", "not a size"), (1.5, "not a size"), (True, "not a size"), (-1, "negative"),
]


@pytest.mark.parametrize("text, expected", READ, ids=[repr(t) for t, _ in READ])
def test_the_service_and_the_client_read_a_size_alike(text, expected):
    assert sizes.parse_bytes(text) == expected
    assert amounts.parse_bytes(text) == expected


@pytest.mark.parametrize("text, message", REFUSED, ids=[repr(t) for t, _ in REFUSED])
def test_the_service_and_the_client_refuse_the_same_sizes(text, message):
    with pytest.raises(ValueError, match=message):
        sizes.parse_bytes(text)
    with pytest.raises(ValueError):
        amounts.parse_bytes(text)


@pytest.mark.parametrize("value, text", [
    (0, "0 B"), (1023, "1023 B"), (1610612736, "1.5 GiB"), (1074790400, "1025 MiB"),
    (34359738368, "32 GiB"), (200000014, "≈ 190.73 MiB"), (25274793984, "≈ 23.54 GiB"),
    (1536, "1.5 KiB"), ("2147483648", "2 GiB"),
])
def test_sizes_are_shown_as_the_lab_shows_them(value, text):
    # the cases of labextension/src/__tests__/amounts-bytes.spec.ts
    assert amounts.format_bytes(value) == text


def test_a_shown_size_reads_back_exactly():
    for text in ("1.5 GiB", "1025 MiB", "32 GiB", "512 MiB", "3 TiB"):
        assert amounts.format_bytes(amounts.parse_bytes(text)) == text


async def test_the_api_takes_sizes_with_units_and_refuses_fractions_of_a_byte(served):  # noqa: F811
    resp, body = await served.call("POST", "domains/acme/projects", "root", json_body={
        "name": "sized", "max_vfolder_size": "100G",
        "total_resource_slots": {"cpu": "4", "mem": "512 MiB"}})
    assert resp.code == 201, body
    assert body["max_vfolder_size"] == 100 * GIB
    assert body["total_resource_slots"]["mem"] == str(512 << 20)
    resp, body = await served.call("PATCH", "domains/acme/projects/sized", "root",
                                   json_body={"max_vfolder_size": "1.5 TiB"})
    assert resp.code == 200 and body["max_vfolder_size"] == 1536 * GIB, body
    for bad, says in (("0.3K", "not a whole number of bytes"), ("1e9", "not a size"),
                      (1.5, "not a size")):
        resp, body = await served.call("PATCH", "domains/acme/projects/sized", "root",
                                       json_body={"max_vfolder_size": bad})
        assert resp.code == 422 and says in body["message"], body
        assert body["message"].startswith("max_vfolder_size: "), body
    resp, body = await served.call("POST", "resource-policies", "root", json_body={
        "name": "sized", "max_vfolder_size": "2G", "total_resource_slots": {"mem": "32 GiB"}})
    assert resp.code == 201, body
    assert (body["max_vfolder_size"], body["total_resource_slots"]["mem"]) == (
        2 * GIB, str(32 * GIB))
    # nothing was written by the refusals
    resp, body = await served.call("GET", "domains/acme/projects/sized", "root")
    assert body["max_vfolder_size"] == 1536 * GIB


async def test_the_openapi_document_says_sizes_take_units(served):  # noqa: F811
    resp, doc = await served.call("GET", "openapi.json")
    assert resp.code == 200
    text = str(doc)
    assert sizes.SIZE_PATTERN.replace("\\", "\\\\") in text or sizes.SIZE_PATTERN in text
    assert "'32G'" in text and "binary unit" in text
