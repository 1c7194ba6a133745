"""Resource presets: one source of session sizes. The service's configured
presets (``c.HubgridService.resource_presets``) are checked at start with a
clear reason; the hub's spawn form offers them and starts on the default
one; a start naming no size gets the default preset from the service. No
hub: the spawner with a test double of the service (the real hub and the
Lab launcher: tests/test_ui_lab.py, the API's callers: tests/test_matrix.py)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from bs4 import BeautifulSoup
from traitlets import TraitError

from quota_service.app import HubgridService
from quota_service.scheduling.presets import DEFAULT_PRESETS, parse_presets
from spawner.options import mem_field, spawn_form
from test_spawn_options import CHOICES
from test_spawner_user_options import Probe, RecordingService, spawner

GiB = 2**30


def test_the_shipped_presets_are_small_medium_and_large_with_medium_the_default():
    presets = parse_presets(DEFAULT_PRESETS)
    assert [(p["name"], p["slots"], p["default"]) for p in presets] == [
        ("small", {"cpu": "0.5", "mem": str(GiB)}, False),
        ("medium", {"cpu": "1", "mem": str(2 * GiB)}, True),
        ("large", {"cpu": "2", "mem": str(4 * GiB)}, False),
    ]
    assert HubgridService().resource_presets == presets


@pytest.mark.parametrize("presets, problem", [
    ([], "non-empty list"),
    ("small", "non-empty list"),
    ([{"name": "s", "slots": {"cpu": "1", "mem": "1G"}}], "exactly one preset default"),
    ([{"name": "s", "slots": {"cpu": "1", "mem": "1G"}, "default": True},
      {"name": "m", "slots": {"cpu": "2", "mem": "2G"}, "default": True}],
     "exactly one preset default.*: s, m"),
    ([{"name": "s", "slots": {"cpu": "1", "mem": "1G"}, "default": True},
      {"name": "s", "slots": {"cpu": "2", "mem": "2G"}}], "preset 's': the name is given twice"),
    ([{"name": "Big One", "slots": {"cpu": "1", "mem": "1G"}, "default": True}], "preset 1: name"),
    ([{"slots": {"cpu": "1", "mem": "1G"}, "default": True}], "preset 1: name"),
    ([{"name": "s", "slots": {"cpu": "1"}, "default": True}], "slots must give cpu and mem"),
    ([{"name": "s", "slots": {"cpu": "0", "mem": "1G"}, "default": True}], "more than 0"),
    ([{"name": "s", "slots": {"cpu": "lots", "mem": "1G"}, "default": True}], "preset 's': .*cpu"),
    ([{"name": "s", "slots": {"cpu": "1", "mem": "1G", "tpu": "1"}, "default": True}],
     "tpu cannot be preset"),
    ([{"name": "s", "slots": {"cpu": "1", "mem": "1G", "gpu": "1", "gpu.shares": "0.5"},
       "default": True}], "preset 's'"),
    ([{"name": "s", "slots": {"cpu": "1", "mem": "1G"}, "default": "yes"}], "true or false"),
    ([{"name": "s", "slots": {"cpu": "1", "mem": "1G"}, "default": True, "size": "S"}],
     "unknown keys size"),
])
def test_a_wrong_preset_list_stops_the_service_with_the_reason(presets, problem):
    with pytest.raises(ValueError, match=problem):
        parse_presets(presets)
    with pytest.raises(TraitError, match="resource_presets" + (
            ": .*" + problem if isinstance(presets, list) else "")):  # traitlets' own: a list
        HubgridService(resource_presets=presets)


PRESETS = parse_presets([
    {"name": "small", "slots": {"cpu": "0.5", "mem": "1G"}, "default": True,
     "description": "<b>a notebook</b>"},
    {"name": "large", "slots": {"cpu": "2", "mem": "4G"}},
    {"name": "gpu-half", "slots": {"cpu": "1", "mem": "1536M", "gpu.shares": "0.5"}},
])


def fields(form) -> tuple:
    return tuple(form.select_one(f"input[name={n}]")["value"]
                 for n in ("cpu", "mem", "gpu", "gpu_shares"))


def test_the_spawn_form_offers_the_presets_and_starts_on_the_default_one():
    form = BeautifulSoup(spawn_form({**CHOICES, "presets": PRESETS}), "html.parser")
    options = form.select("#hg-preset option")
    assert [(o["value"], o.has_attr("selected")) for o in options] == [
        ("small", True), ("large", False), ("gpu-half", False), ("", False)]
    assert options[0].text == "small: 0.5 CPU, 1 GiB (default) - <b>a notebook</b>"  # as text
    assert options[2].text == "gpu-half: 1 CPU, 1.5 GiB, 0.5 of a GPU"
    assert (options[2]["data-cpu"], options[2]["data-mem"], options[2]["data-gpu_shares"]) == (
        "1", "1536M", "0.5")
    assert fields(form) == ("0.5", "1G", "0", "0")
    # a hub admin's Spawner.default_size still wins: a preset's size, or custom
    form = BeautifulSoup(spawn_form({**CHOICES, "presets": PRESETS},
                                    defaults={"cpu": "2", "mem": "4G"}), "html.parser")
    assert form.select_one("#hg-preset option[selected]")["value"] == "large"
    form = BeautifulSoup(spawn_form({**CHOICES, "presets": PRESETS},
                                    defaults={"cpu": "3", "mem": "4G"}), "html.parser")
    assert form.select_one("#hg-preset option[selected]")["value"] == ""
    assert fields(form)[:2] == ("3", "4G")


def test_memory_shows_exactly_in_the_largest_whole_unit():
    assert [mem_field(str(n)) for n in (GiB, 1536 * 2**20, 2**40, 1000, 3 * 2**10)] == [
        "1G", "1536M", "1T", "1000", "3072"]


class PresetService(RecordingService):
    """The internal API: its spawn choices carry the presets."""

    async def spawn_choices(self, user):
        return {**CHOICES, "presets": PRESETS}


async def test_a_start_without_a_size_gets_the_services_default_preset():
    log = logging.getLogger("test.spawner.presets")
    service = PresetService()
    for options in ({}, {"cpu": "2"}, {"mem": "3G"}, {"cpu": "4", "mem": "8G"}):
        p = spawner(Probe, log)
        p.service = service
        p.user_options = {"project": "ml", "resource_group": "gpuhalf", **options}
        await p.start()
    assert [b["slots"] for b in service.bodies] == [
        {"cpu": "0.5", "mem": str(GiB)}, {"cpu": "2", "mem": str(GiB)},
        {"cpu": "0.5", "mem": str(3 * GiB)}, {"cpu": "4", "mem": str(8 * GiB)}]
    form = BeautifulSoup(await p._hubgrid_form(), "html.parser")
    assert fields(form) == ("0.5", "1G", "0", "0")


async def test_a_service_without_a_default_preset_fails_the_start_with_the_reason():
    class NoPresets(RecordingService):
        async def spawn_choices(self, user):
            return dict(CHOICES)

    p = spawner(Probe, logging.getLogger("test.spawner.presets"))
    p.service = NoPresets()
    p.user_options = {"project": "ml"}
    from jupyterhub.spawner import SpawnException

    with pytest.raises(SpawnException, match="offers no default resource preset") as e:
        await p.start()
    assert (e.value.reason, e.value.status_code) == ("config", 500)
    assert p.service.bodies == []  # nothing was asked for
