"""One home for permissions: every role decision is a named function of
``quota_service/core/authz.py``. Anywhere else, comparing a role (``role ==
"domain-admin"``, ``u.role is Role.superadmin``) or defining a local
``require_superadmin`` is a decision made out of sight; this finds them."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOME = REPO / "quota_service" / "core" / "authz.py"
ROLE_WORDS = {"user", "domain-admin", "domain_admin", "superadmin"}


def _is_role(node: ast.AST) -> bool:
    """``Role.x``, ``<thing>.role``, ``<thing>.role.value``, ``x["role"]`` or a role's name."""
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "Role":
            return True
        if node.attr == "role":
            return True
        if node.attr == "value":
            return _is_role(node.value)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value == "role"
    return isinstance(node, ast.Constant) and node.value in ROLE_WORDS - {"user"}


def _is_column(node: ast.AST) -> bool:
    """``User.role``: a query over the role column selects users, it decides nothing."""
    return (isinstance(node, ast.Attribute) and node.attr == "role"
            and isinstance(node.value, ast.Name) and node.value.id[:1].isupper())


def role_decisions(source: str) -> list[int]:
    """Lines comparing a role, or defining ``require_superadmin``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_column(o) for o in operands):
                continue
            if any(_is_role(o) for o in operands) and any(
                    isinstance(o, (ast.Attribute, ast.Subscript)) for o in operands):
                found.append(node.lineno)
        elif isinstance(node, ast.FunctionDef) and node.name == "require_superadmin":
            found.append(node.lineno)
    return found


def test_role_decisions_live_only_in_authz():
    wrong = {}
    for pkg in ("quota_service", "spawner", "hub_ext", "authenticator"):
        for path in (REPO / pkg).rglob("*.py"):
            if path == HOME or "migrations" in path.parts:
                continue
            lines = role_decisions(path.read_text())
            if lines:
                wrong[str(path.relative_to(REPO))] = lines
    assert wrong == {}


def test_the_finder_finds_each_kind_of_role_decision():
    assert role_decisions('if p.role.value == "domain-admin":\n    pass\n') == [1]
    assert role_decisions("was = u.role is Role.superadmin\n") == [1]
    assert role_decisions('ok = identity["role"] == "domain-admin"\n') == [1]
    assert role_decisions("def require_superadmin(p, what):\n    pass\n") == [1]
    # not decisions: a query over the role column, making a user with a role
    assert role_decisions("q = select(User).where(User.role == Role.superadmin)\n") == []
    assert role_decisions("u = User(name=n, role=Role.user)\n") == []
