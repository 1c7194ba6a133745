"""Docs that must stay true: the generated config reference, the README's
commands, CI calling the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

from hub_ext import configdoc

REPO = Path(__file__).resolve().parent.parent


def test_config_reference_is_generated_from_the_current_code():
    committed = (REPO / "docs" / "config-reference.md").read_text()
    assert committed == configdoc.render(), (
        "docs/config-reference.md is stale: run `python -m hub_ext.configdoc > docs/config-reference.md`"
    )


def test_config_reference_covers_every_setting():
    text = configdoc.render()
    for cls in configdoc.CLASSES:
        for name in cls.class_own_traits(config=True):
            assert f"c.{cls.__name__}.{name}`" in text


def test_readme_commands_are_make_targets_and_ci_runs_the_test_command():
    readme = (REPO / "README.md").read_text()
    makefile = (REPO / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", readme, flags=re.M):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    assert "make test" in readme and "make run" in readme
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^make test\b", ci, flags=re.M)
