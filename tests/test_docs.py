"""Docs that must stay true: the generated config reference (made by a docs
tool outside the hub-side package), the README's commands, CI calling the
README's test command."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load_configdoc():
    """scripts/configdoc.py, a docs tool outside the packages."""
    spec = importlib.util.spec_from_file_location("configdoc", REPO / "scripts" / "configdoc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


configdoc = _load_configdoc()


def test_config_reference_is_generated_from_the_current_code():
    committed = (REPO / "docs" / "config-reference.md").read_text()
    assert committed == configdoc.render(), (
        f"docs/config-reference.md is stale: run `{configdoc.COMMAND}`"
    )


def test_config_reference_covers_every_setting():
    text = configdoc.render()
    for cls in configdoc.CLASSES:
        for name in cls.class_own_traits(config=True):
            assert f"c.{cls.__name__}.{name}`" in text


def test_configdoc_runs_as_a_script_from_any_directory(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "configdoc.py")],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout
    assert out == (REPO / "docs" / "config-reference.md").read_text()


def test_hub_ext_imports_neither_the_service_nor_the_spawners():
    code = (
        "import importlib, pkgutil, sys, hub_ext\n"
        "for m in pkgutil.iter_modules(hub_ext.__path__):\n"
        "    importlib.import_module('hub_ext.' + m.name)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules}"
        " & {'quota_service', 'spawner', 'authenticator'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_readme_commands_are_make_targets_and_ci_runs_the_test_command():
    readme = (REPO / "README.md").read_text()
    makefile = (REPO / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", readme, flags=re.M):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    assert "make test" in readme and "make run" in readme
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^make test\b", ci, flags=re.M)


#: directories made at run time, not in the tree
RUNTIME_DIRS = {"state/", "vfolders/", "session-logs/", "node_modules/", ".venv/"}


def _named_paths(text: str) -> set[str]:
    """Paths a doc names in backticks: `pkg/`, `pkg/module.py`, `scheduling/ledger`."""
    found = set()
    for token in re.findall(r"`([A-Za-z_][\w./]*)`", text):
        if "/" in token and not token.startswith(("http", "/")) and token not in RUNTIME_DIRS:
            found.add(token)
    return found


def _exists(token: str) -> bool:
    for base in (REPO, REPO / "quota_service"):
        path = base / token
        if path.exists() or path.with_suffix(".py").exists():
            return True
    return False


@pytest.mark.parametrize("doc", ["docs/architecture.md", "README.md"])
def test_layout_docs_name_only_paths_that_exist(doc):
    missing = sorted(t for t in _named_paths((REPO / doc).read_text()) if not _exists(t))
    assert missing == []


def test_the_path_check_sees_a_stale_name():
    assert _named_paths("see `quota_service/handlers/` and `ledger`") == {"quota_service/handlers/"}
    assert not _exists("quota_service/handlers/")
    assert _exists("scheduling/ledger") and _exists("quota_service/api/")


def test_every_service_package_is_in_the_architecture_doc():
    text = (REPO / "docs" / "architecture.md").read_text()
    packages = sorted(p.parent.name for p in (REPO / "quota_service").glob("*/__init__.py")
                      if p.parent.name != "migrations")
    assert [p for p in packages if f"`quota_service/{p}/`" not in text] == []


def test_every_picture_in_the_docs_exists_and_is_taken_by_a_test():
    """docs/images holds the pictures the docs show, each taken by a UI test
    (``HUBGRID_SCREENSHOTS=docs/images`` refreshes them), and nothing else."""
    import re

    docs = [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    shown = {m for doc in docs for m in re.findall(r"images/([\w.-]+\.png)", doc.read_text())}
    present = {p.name for p in (REPO / "docs" / "images").glob("*.png")}
    tests = "".join(p.read_text() for p in (REPO / "tests").glob("*.py"))
    assert shown - present == set(), "shown but missing"
    assert present - shown == set(), "in docs/images but shown nowhere"
    assert {name for name in present if name not in tests} == set(), "taken by no test"
