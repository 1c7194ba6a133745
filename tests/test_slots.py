"""Slot maps as rules: what a request or a limit may say, and exact arithmetic."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from quota_service.core import slots as slotlib
from quota_service.core.errors import Invalid
from quota_service.core.schemas import AllocationCreate, parse
from quota_service.core.slots import add, gpu_devices, parse_request, subtract

GiB = 2**30
D = Decimal


# ---------------------------------------------------------------- refusals

REFUSED = [
    ("an unknown slot name", {"tpu": 1}, "unknown slot 'tpu'; known slots: cpu, gpu, gpu.shares, mem"),
    ("a misspelt slot name", {"gpus": 1}, "unknown slot 'gpus'"),
    ("a negative amount", {"cpu": -1}, "slot 'cpu': amount -1 is negative"),
    ("a negative decimal text", {"gpu.shares": "-0.5"}, "slot 'gpu.shares': amount -0.5 is negative"),
    ("NaN as text", {"cpu": "NaN"}, "slot 'cpu': amount 'NaN' is not a number"),
    ("NaN as a Decimal", {"cpu": D("NaN")}, "slot 'cpu': amount Decimal('NaN') is not a number"),
    ("infinity as a Decimal", {"mem": D("Infinity")}, "is not a number"),
    ("a float", {"cpu": 0.5}, "slot 'cpu': amount 0.5 must be an integer or a decimal string"),
    ("a boolean", {"gpu": True}, "must be an integer or a decimal string"),
    ("null", {"cpu": None}, "slot 'cpu': amount None is not a number"),
    ("text that is not a number", {"cpu": "two"}, "slot 'cpu': amount 'two' is not a number"),
    ("a negative size with a suffix", {"mem": "-1G"}, "slot 'mem': '-1G' is not a size"),
    ("an unknown size suffix", {"mem": "16X"}, "slot 'mem': amount '16X' is not a number"),
    ("28 digits and more", {"cpu": "1e28"}, "slot 'cpu': amount '1e28' is out of range"),
    ("more cores than the maximum", {"cpu": 100_001}, "slot 'cpu': 100001 is above the maximum 100000"),
    ("huge cores within 28 digits", {"cpu": "1e27"}, "slot 'cpu': 1000000000000000000000000000 is above the maximum"),
    ("26 nines of cores", {"cpu": "9" * 26}, "is above the maximum 100000"),
    ("more memory than 2**60 bytes", {"mem": "2000P"}, "slot 'mem': 2251799813685248000 is above the maximum"),
    ("an endless size with a suffix", {"mem": "9" * 40 + "P"}, "out of range"),
    ("more GPUs than the maximum", {"gpu": 1025}, "slot 'gpu': 1025 is above the maximum 1024"),
    ("huge shares", {"gpu.shares": "1e27"}, "is more than one device"),
    ("half a whole GPU", {"gpu": "1.5"}, "slot 'gpu': 1.5 is not a multiple of 1"),
    ("a share finer than 0.01", {"gpu.shares": "0.005"}, "slot 'gpu.shares': 0.005 is not a multiple of 0.01"),
    ("a third of a GPU", {"gpu.shares": "0.333"}, "0.333 is not a multiple of 0.01"),
    ("a fraction of a byte", {"mem": "0.3K"}, "slot 'mem': '0.3K' is not a whole number of bytes"),
    ("finer than a millicore", {"cpu": "0.0005"}, "slot 'cpu': 0.0005 is not a multiple of 0.001"),
    ("shares above one device", {"gpu.shares": "1.01"},
     "slot 'gpu.shares': 1.01 is more than one device; ask for whole devices with 'gpu'"),
    ("whole GPUs and shares together", {"gpu": 1, "gpu.shares": "0.5"},
     "ask for whole devices ('gpu') or a share ('gpu.shares'), not both"),
    ("a list instead of a map", ["cpu"], "resource slots must be an object of slot name to amount"),
]


@pytest.mark.parametrize("raw, message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_request_is_refused_with_the_reason(raw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_request(raw)


@pytest.mark.parametrize("amount", ["1e27", "9" * 26, "9" * 40 + "P"])
def test_a_huge_amount_in_an_allocation_body_is_a_validation_error(amount):
    """A refusal the API answers with 422, not an arithmetic crash (500)."""
    slot = "mem" if amount.endswith("P") else "cpu"
    with pytest.raises(Invalid, match=f"slots: Value error, slot '{slot}'"):
        parse(AllocationCreate, {"project": "ml", "resource_group": "gpu", "slots": {slot: amount}})


LIMIT_REFUSED = [
    ("an unknown slot name", {"tpu": 0}, "unknown slot 'tpu'"),
    ("a negative limit", {"gpu": -1}, "is negative"),
    ("a limit off the share quantum", {"gpu.shares": "2.505"}, "2.505 is not a multiple of 0.01"),
    ("a limit of half a whole GPU", {"gpu": "0.5"}, "0.5 is not a multiple of 1"),
    ("a limit beyond 28 digits", {"cpu": "1e28"}, "out of range"),
    ("an endless memory limit", {"mem": "9" * 40 + "P"}, "out of range"),
]


@pytest.mark.parametrize("raw, message", [c[1:] for c in LIMIT_REFUSED],
                         ids=[c[0] for c in LIMIT_REFUSED])
def test_a_limit_map_is_refused_with_the_reason(raw, message):
    """Limits skip the per-request maxima, but not the other rules."""
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_request(raw, limits=True)


# ---------------------------------------------------------------- accepted

ACCEPTED = [
    ("16G is 16 GiB", {"mem": "16G"}, {"mem": 16 * GiB}),
    ("16Gi is 16 GiB", {"mem": "16Gi"}, {"mem": 16 * GiB}),
    ("16GiB is 16 GiB", {"mem": "16GiB"}, {"mem": 16 * GiB}),
    ("suffixes ignore case and a space", {"mem": "16 gb"}, {"mem": 16 * GiB}),
    ("1.5G is exact", {"mem": "1.5G"}, {"mem": 3 * 2**29}),
    ("K, M, T and P are powers of 1024", {"mem": "1P"}, {"mem": 2**50}),
    ("plain bytes as an integer", {"mem": 4096}, {"mem": 4096}),
    ("plain bytes as text", {"mem": "4096"}, {"mem": 4096}),
    ("millicores", {"cpu": "0.25"}, {"cpu": D("0.25")}),
    ("exponent notation", {"cpu": "1e2"}, {"cpu": 100}),
    ("a share on the quantum", {"gpu.shares": "0.05"}, {"gpu.shares": D("0.05")}),
    ("a whole device as shares", {"gpu.shares": "1"}, {"gpu.shares": 1}),
    ("trailing zeros of a share", {"gpu.shares": "0.50"}, {"gpu.shares": D("0.5")}),
    ("the GPU maximum", {"gpu": 1024}, {"gpu": 1024}),
    ("zero amounts are left out", {"cpu": 0, "gpu": "0"}, {}),
    ("zero GPUs with a share is not both", {"gpu": 0, "gpu.shares": "0.5"}, {"gpu.shares": D("0.5")}),
    ("a Decimal amount", {"cpu": D("2.5")}, {"cpu": D("2.5")}),
]


@pytest.mark.parametrize("raw, expected", [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_a_valid_request_parses_to_exact_decimals(raw, expected):
    parsed = parse_request(raw)
    assert parsed == expected
    assert all(isinstance(v, Decimal) for v in parsed.values())


LIMITS = [
    ("zeros are kept: zero means none allowed", {"gpu": 0, "cpu": "0"}, {"cpu": 0, "gpu": 0}),
    ("shares of several devices", {"gpu.shares": "4.5"}, {"gpu.shares": D("4.5")}),
    ("whole GPUs and shares together", {"gpu": 2, "gpu.shares": 3}, {"gpu": 2, "gpu.shares": 3}),
    ("above the per-request maximum", {"gpu": 4096, "mem": "4096P"}, {"gpu": 4096, "mem": 2**62}),
    ("a huge limit within 28 digits", {"cpu": "1e27"}, {"cpu": D(10) ** 27}),
]


@pytest.mark.parametrize("raw, expected", [c[1:] for c in LIMITS], ids=[c[0] for c in LIMITS])
def test_a_limit_map_keeps_zeros_and_skips_request_maxima(raw, expected):
    assert parse_request(raw, limits=True) == expected


def test_a_limit_map_is_sorted_by_slot_name():
    assert list(parse_request({"mem": 1, "gpu": 0, "cpu": 1}, limits=True)) == ["cpu", "gpu", "mem"]


# ---------------------------------------------------------------- arithmetic


def test_adding_decimals_is_exact():
    assert add({"cpu": D("0.1")}, {"cpu": D("0.2")}) == {"cpu": D("0.3")}
    assert slotlib.to_text(add({"cpu": D("0.1")}, {"cpu": D("0.2")})) == {"cpu": "0.3"}


def test_a_hundred_smallest_shares_make_exactly_one_device():
    total: dict[str, Decimal] = {}
    for _ in range(100):
        total = add(total, parse_request({"gpu.shares": "0.01"}))
    assert total == {"gpu.shares": D(1)}
    assert slotlib.to_text(total) == {"gpu.shares": "1"}


ARITHMETIC = [
    ("add keeps the slots of both sides", add, {"cpu": D(1)}, {"gpu": D(2)}, {"cpu": 1, "gpu": 2}),
    ("add sums a shared slot", add, {"gpu.shares": D("0.7")}, {"gpu.shares": D("0.3")},
     {"gpu.shares": 1}),
    ("subtract leaves the difference", subtract, {"cpu": D("0.3")}, {"cpu": D("0.1")},
     {"cpu": D("0.2")}),
    ("subtract drops what becomes zero", subtract, {"cpu": D("0.3"), "gpu": D(1)},
     {"cpu": D("0.1") + D("0.2")}, {"gpu": 1}),
    ("subtract of a missing slot goes negative", subtract, {}, {"gpu": D(1)}, {"gpu": -1}),
]


@pytest.mark.parametrize("op, a, b, expected", [c[1:] for c in ARITHMETIC],
                         ids=[c[0] for c in ARITHMETIC])
def test_slot_map_arithmetic(op, a, b, expected):
    assert op(a, b) == expected


def test_add_and_subtract_do_not_change_their_arguments():
    a, b = {"cpu": D(1)}, {"cpu": D(2)}
    add(a, b), subtract(a, b)
    assert a == {"cpu": D(1)} and b == {"cpu": D(2)}


def test_adding_then_subtracting_restores_the_map_exactly():
    base = {"cpu": D("3.3"), "mem": D(16 * GiB), "gpu.shares": D("0.07")}
    delta = {"cpu": D("0.001"), "gpu.shares": D("0.93")}
    assert subtract(add(base, delta), delta) == base


def test_gpu_devices_counts_whole_gpus_and_shares():
    assert gpu_devices({"gpu": D(2)}) == 2
    assert gpu_devices({"gpu.shares": D("0.25")}) == D("0.25")
    assert gpu_devices({"cpu": D(8)}) == 0


def test_text_round_trip_is_canonical_and_exact():
    parsed = parse_request({"cpu": "0.500", "mem": "1.5G", "gpu.shares": "0.10"})
    text = slotlib.to_text(parsed)
    assert text == {"cpu": "0.5", "gpu.shares": "0.1", "mem": "1610612736"}
    assert slotlib.from_text(text) == parsed


# ---------------------------------------------------------------- the registry


def test_registering_the_same_slot_type_again_is_harmless():
    gpu = slotlib.registry()["gpu"]
    assert slotlib.register(gpu) is gpu


def test_a_slot_name_cannot_be_registered_with_another_meaning():
    other = slotlib.SlotType("gpu", "count", D(1), D(8), "something else")
    with pytest.raises(ValueError, match="already registered differently"):
        slotlib.register(other)
    assert slotlib.registry()["gpu"].maximum == 1024
