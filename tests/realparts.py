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

Of the real tests, those that share nothing with the others (``apart``: a
hub of their own with local sessions at most, haproxy, a command line; no Docker
engine, Slurm, browser or shared session fixture: ``SHARED_SOURCE`` nowhere
in their modules or their fixtures' modules) run in the second pytest with
the pure ones: the first one, the suite's length, keeps only what shares the
engines and Slurm.
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
#: what a real module that uses the shared engines, Slurm, a browser or the
#: fixtures shared across modules says somewhere (any mention keeps it in
#: order; session_fixtures holds helpers only: a session on a test's own
#: local hub is a process of that hub's)
SHARED_SOURCE = re.compile(
    r"docker|slurm|sbatch|chromium|playwright|serving_fixtures|ui_fixtures|lab_fixtures",
    re.IGNORECASE)
#: another test module this one imports (its fixtures, worlds or helpers)
TEST_IMPORT = re.compile(r"^(?:from (test_\w+) import|import (test_\w+))", re.MULTILINE)
#: modules whose fixtures are judged one by one (conftest.py imports the
#: real fixture modules' session fixtures, but its own are databases only)
JUDGED_BY_FIXTURE = ("conftest",)


@functools.lru_cache(maxsize=None)
def module_is_real(name: str) -> bool:
    return _matches(REAL_SOURCE, name, frozenset())


@functools.lru_cache(maxsize=None)
def module_shares(name: str) -> bool:
    return _matches(SHARED_SOURCE, name, frozenset())


def _matches(pattern: re.Pattern, name: str, seen: frozenset[str]) -> bool:
    """Whether ``pattern`` is in module ``name``'s source or in that of a
    test module it imports, at any depth."""
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
    if pattern.search(source):
        return True
    seen = seen | {name}
    return any(_matches(pattern, other, seen) for m in TEST_IMPORT.finditer(source)
               for other in m.groups() if other and other not in seen)


def uses_real_parts(item) -> bool:
    """Whether ``item`` (a pytest item) runs real parts, through its module
    or any fixture in its closure."""
    return _any_module(item, module_is_real)


def shares_real_parts(item) -> bool:
    """Whether a real ``item`` uses the shared engines, Slurm, a browser or
    the shared session fixtures (else it is ``apart``)."""
    return _any_module(item, module_shares)


def _any_module(item, judge) -> bool:
    if judge(item.module.__name__):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        for d in defs:
            mod = getattr(d.func, "__module__", "") or ""
            if mod not in JUDGED_BY_FIXTURE and mod != __name__ and judge(mod):
                return True
    return False
