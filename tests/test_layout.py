"""The shape of the code, drawn from the code (docs/architecture.md): the
import graph has no circle and nothing imports back up; the hub-side
packages use only the service's shared core and the hub's HTTP client; no
source file is over 600 lines; the service's top level stays small."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("quota_service", "spawner", "hub_ext", "authenticator", "gateway")
#: what the hub-side packages may import from the service
HUB_SIDE_MAY_IMPORT = ("quota_service.core.slots", "quota_service.core.schemas",
                       "quota_service.core.names", "quota_service.core.forwarded",
                       "quota_service.core.sharecheck", "quota_service.core.urlpaths")
#: pure packages: decisions over data, no IO
PURE = ("quota_service.scheduling.placement", "quota_service.scheduling.admission",
        "quota_service.scheduling.ordering", "quota_service.core.slots",
        "quota_service.core.names", "quota_service.core.errors", "quota_service.core.images",
        "quota_service.core.sizes", "quota_service.core.urlpaths",
        # model serving's rules; its manager (serving.endpoints) is an IO edge
        "quota_service.serving.modeldef", "quota_service.serving.fields",
        "quota_service.serving.prestart", "quota_service.serving.tokens",
        "quota_service.serving.fit", "quota_service.serving.replicaplan",
        "quota_service.serving.autoscale", "quota_service.serving.health",
        # the serving gateway's rules (gateway/); its balancer, sync and app are IO
        "gateway.haproxycfg", "gateway.access", "gateway.table")
IO_MODULES = ("sqlalchemy", "tornado", "docker", "requests", "httpx", "subprocess", "socket",
              "asyncio", "os", "pathlib", "shutil", "threading")
MAX_LINES = 600


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            out[_module_of(path)] = path
    return out


SOURCES = _sources()


def _imports(mod: str, path: Path) -> set[str]:
    """Every module ``mod`` imports (at any depth of the file), resolved."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            # ``from pkg import module`` imports the module; any other name, the package
            found.update(f"{target}.{a.name}" if f"{target}.{a.name}" in SOURCES else target
                         for a in node.names)
    return {m for m in found if m in SOURCES and m != mod}


GRAPH = {mod: _imports(mod, path) for mod, path in SOURCES.items()}


def _package_of(mod: str) -> str:
    return mod if SOURCES[mod].name == "__init__.py" else mod.rpartition(".")[0]


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan).
    A package's ``__init__`` importing its own modules is no circle."""
    edges = {m: {t for t in ts if not (SOURCES[m].name == "__init__.py"
                                       and t.startswith(m + "."))}
             for m, ts in GRAPH.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges)))
    try:
        for v in edges:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_no_import_circle():
    assert _cycles() == []


def test_the_circle_finder_finds_a_circle(monkeypatch):
    """The check above can fail: a made-up back edge is found."""
    monkeypatch.setitem(GRAPH, "quota_service.core.slots",
                        GRAPH["quota_service.core.slots"] | {"quota_service.scheduling.admission"})
    assert ["quota_service.core.slots", "quota_service.scheduling.admission"] in _cycles()


def test_no_module_imports_its_own_package_init_back():
    """A module importing the ``__init__`` of a package that contains it runs back up."""
    back = [(m, t) for m, ts in GRAPH.items() for t in ts
            if SOURCES[t].name == "__init__.py" and m.startswith(t + ".")
            and t != "quota_service"]
    assert back == []


@pytest.mark.parametrize("package", ["spawner", "hub_ext", "authenticator", "gateway"])
def test_hub_side_packages_use_only_the_shared_core(package):
    wrong = sorted((m, t) for m, ts in GRAPH.items() if m.split(".")[0] == package
                   for t in ts if t.startswith("quota_service")
                   and not t.startswith(HUB_SIDE_MAY_IMPORT))
    assert wrong == []


def test_the_service_does_not_import_hub_side_packages():
    wrong = sorted((m, t) for m, ts in GRAPH.items() if m.startswith("quota_service")
                   for t in ts if t.split(".")[0] in ("spawner", "hub_ext", "authenticator", "gateway"))
    assert wrong == []


def test_pure_packages_do_no_io():
    wrong = []
    for mod, path in SOURCES.items():
        if not mod.startswith(PURE):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            wrong += [(mod, n) for n in names if n.split(".")[0] in IO_MODULES]
        wrong += [(mod, t) for t in GRAPH[mod] if not t.startswith(PURE)]
    assert wrong == []


def test_no_source_file_over_600_lines():
    long = {str(p.relative_to(REPO)): n for p in list(SOURCES.values())
            + list((REPO / "bench").rglob("*.py")) + list((REPO / "scripts").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_service_top_level_has_at_most_four_loose_modules():
    loose = sorted(p.name for p in (REPO / "quota_service").glob("*.py"))
    assert len(loose) <= 4, loose


def test_every_service_package_says_what_it_owns():
    missing = [str(p.relative_to(REPO)) for p in (REPO / "quota_service").rglob("__init__.py")
               if "migrations" not in p.parts
               and len((ast.get_docstring(ast.parse(p.read_text())) or "").split()) < 8]
    assert missing == []


def test_every_source_directory_is_a_package():
    """pyproject finds packages by their ``__init__.py``: a directory of modules
    without one would be left out of an installed (non-editable) hubgrid."""
    loose = sorted(str(d.relative_to(REPO)) for pkg in PACKAGES for d in (REPO / pkg).rglob("*")
                   if d.is_dir() and any(d.glob("*.py")) and not (d / "__init__.py").exists())
    assert loose == []


def test_the_core_imports_nothing_above_it():
    """``core`` is the bottom floor: the domain packages build on it, never the reverse."""
    wrong = sorted((m, t) for m, ts in GRAPH.items() if m.startswith("quota_service.core")
                   for t in ts if t.startswith("quota_service.") and not t.startswith(
                       "quota_service.core"))
    assert wrong == []


#: what serving's IO edges (the endpoints manager and its checks) stand on:
#: replicas are sessions of the ledger, over folders, from the registry
SERVING_BUILDS_ON = ("quota_service.core", "quota_service.serving", "quota_service.scheduling",
                     "quota_service.sessions", "quota_service.storage")


def test_serving_builds_on_the_core_and_the_domain_packages_only():
    """``serving`` stands on ``core`` and on the ledger, the
    registry and the folders: never on the API, the runtime or the app."""
    wrong = sorted((m, t) for m, ts in GRAPH.items() if m.startswith("quota_service.serving")
                   for t in ts if t.startswith("quota_service.") and not t.startswith(
                       SERVING_BUILDS_ON))
    assert wrong == []


def test_nothing_below_serving_imports_it():
    """The ledger, the registry and the folders know nothing of serving."""
    wrong = sorted((m, t) for m, ts in GRAPH.items() if m.startswith(
        SERVING_BUILDS_ON[2:] + ("quota_service.core",))
                   for t in ts if t.startswith("quota_service.serving"))
    assert wrong == []
