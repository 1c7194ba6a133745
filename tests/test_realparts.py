"""How the suite is split between its two pytest processes
(tests/realparts.py): which modules run real parts, and which of those share
the engines, Slurm or a browser with others (the rest run ``apart``)."""

from __future__ import annotations

import sys
import types

import pytest

import realparts


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """Writes test modules with the given sources and registers them."""

    def make(**sources: str) -> None:
        for name, source in sources.items():
            path = tmp_path / f"{name}.py"
            path.write_text(source)
            module = types.ModuleType(name)
            module.__file__ = str(path)
            monkeypatch.setitem(sys.modules, name, module)
        realparts.module_is_real.cache_clear()
        realparts.module_shares.cache_clear()

    yield make
    realparts.module_is_real.cache_clear()
    realparts.module_shares.cache_clear()


def test_a_module_that_starts_a_hub_is_real_and_apart_without_shared_parts(modules):
    modules(test_rp_hub="from hub_fixtures import hub, world\n",
            test_rp_pure="def test_x():\n    assert 1\n")
    assert realparts.module_is_real("test_rp_hub")
    assert not realparts.module_shares("test_rp_hub")
    assert not realparts.module_is_real("test_rp_pure")


@pytest.mark.parametrize("line", ["import docker\n", "from slurm_fixtures import x\n",
                                  "from playwright.sync_api import sync_playwright\n",
                                  "from serving_fixtures import shared\n",
                                  "# the engines' Docker containers\n"])
def test_any_mention_of_a_shared_part_keeps_a_module_in_order(modules, line):
    modules(test_rp_shared="from hub_fixtures import hub\n" + line)
    assert realparts.module_is_real("test_rp_shared")
    assert realparts.module_shares("test_rp_shared")


def test_importing_a_test_module_takes_its_kind_at_any_depth(modules):
    modules(test_rp_world="def world():\n    return {}\n",
            test_rp_user="from test_rp_world import world\n",
            test_rp_engine="import subprocess\nimport docker\n",
            test_rp_mid="from test_rp_engine import x\n",
            test_rp_top="from test_rp_mid import x\n")
    assert not realparts.module_is_real("test_rp_user")
    assert realparts.module_is_real("test_rp_top") and realparts.module_shares("test_rp_top")


def test_import_cycles_end(modules):
    modules(test_rp_a="from test_rp_b import x\n", test_rp_b="from test_rp_a import y\n")
    assert not realparts.module_is_real("test_rp_a")
    assert not realparts.module_shares("test_rp_b")


def test_a_test_module_not_imported_yet_counts_as_real(modules):
    modules(test_rp_lazy="from test_rp_nowhere import x\n")
    assert realparts.module_is_real("test_rp_lazy")
