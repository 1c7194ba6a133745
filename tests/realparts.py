"""Which tests run real parts beside the test process (a hub and its proxy,
Docker sessions, Slurm jobs, Chromium, haproxy, any subprocess), and so must
run one after another as they always did; the others (pure rules, the
service's app in the test's own loop, SQLite and PostgreSQL databases of
their own) may run beside them.

tests/conftest.py marks the first ``real``; ``make test`` (scripts/test.sh)
runs ``-m real`` and ``-m "not real"`` as two pytest processes at once: the
real parts' waits (a container starting, a hub answering) then overlap with
the other tests' work, while the real tests keep their order and their
shared hubs and engines, as in a run of the whole suite.

A test runs real parts when its module, or the module of any fixture it
uses, imports one of the fixture modules that start them, or starts one
itself (``REAL_SOURCE``), or imports another test module that does
(``TEST_IMPORT``: a module that borrows a pure module's worlds stays pure).
Erring on the side of "real" costs only time.
"""

from __future__ import annotations

import functools
import re
import sys

#: what a module that starts real parts says somewhere in its source
REAL_SOURCE = re.compile(
    r"\b(?:hub_fixtures|docker_fixtures|slurm_fixtures|serving_fixtures|ui_fixtures|"
    r"lab_fixtures|session_fixtures|launch_hub|hubproc|playwright|haproxy|HAPROXY|"
    r"sbatch|subprocess|DockerClient|docker\.from_env|create_subprocess_exec)\b",
    re.MULTILINE)
#: another test module this one imports (its fixtures, worlds or helpers)
TEST_IMPORT = re.compile(r"^(?:from (test_\w+) import|import (test_\w+))", re.MULTILINE)
#: modules whose fixtures are judged one by one (conftest.py imports the
#: real fixture modules' session fixtures, but its own are databases only)
JUDGED_BY_FIXTURE = ("conftest",)


@functools.lru_cache(maxsize=None)
def module_is_real(name: str) -> bool:
    return _is_real(name, frozenset())


def _is_real(name: str, seen: frozenset[str]) -> bool:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        # a test module not imported yet is judged when it is: till then real
        return name.startswith("test_")
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError:
        return True
    if REAL_SOURCE.search(source):
        return True
    seen = seen | {name}
    return any(_is_real(other, seen) for m in TEST_IMPORT.finditer(source)
               for other in m.groups() if other and other not in seen)


def uses_real_parts(item) -> bool:
    """Whether ``item`` (a pytest item) runs real parts, through its module
    or any fixture in its closure."""
    if module_is_real(item.module.__name__):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        for d in defs:
            mod = getattr(d.func, "__module__", "") or ""
            if mod not in JUDGED_BY_FIXTURE and mod != __name__ and module_is_real(mod):
                return True
    return False
