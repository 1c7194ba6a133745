"""The Users page: searching users, and adding many at once from a CSV
file or JSON rows (``POST users/bulk``), each row all or nothing: a row is
created with its projects and resource policy, or refused with the reason
and leaves nothing behind (a savepoint per row). A domain admin adds users
to their own domain only (a row naming another is refused, the others go
on); the rules of ``accounts.create_user``, ``add_member`` and
``update_user`` apply to each row as if it were sent alone."""

from __future__ import annotations

import csv
import io

from pydantic import ValidationError
from sqlalchemy.orm import Session

from . import accounts
from ..core import authz
from ..core.authz import Principal
from ..core.errors import ApiError, Invalid
from ..core.models import Role
from ..core.schemas import UserCreate, UserUpdate

#: the most rows one request may carry
MAX_ROWS = 1000
#: the columns of a CSV file (a header row names them; name is required)
COLUMNS = ("name", "domain", "role", "projects", "resource_policy", "active")
TRUE, FALSE = ("true", "yes", "1"), ("false", "no", "0")


# --- search --------------------------------------------------------------------

def search_filter(q: str | None, role: str | None, active: str | None):
    """A predicate over user models: ``q`` a case-insensitive substring of
    the name, ``role`` one role, ``active`` true or false."""
    if role is not None and role not in {r.value for r in Role}:
        raise Invalid(f"role: {role[:40]!r} is not one of {', '.join(r.value for r in Role)}")
    want_active = None
    if active is not None:
        if active.lower() not in TRUE + FALSE:
            raise Invalid(f"active: {active[:40]!r} is not true or false")
        want_active = active.lower() in TRUE
    needle = (q or "").casefold()

    def keep(u: dict) -> bool:
        return ((not needle or needle in u["name"].casefold())
                and authz.role_matches(u["role"], role)
                and (want_active is None or u["active"] is want_active))
    return keep


# --- bulk add ------------------------------------------------------------------

def rows_from_csv(text: str) -> list[dict]:
    """The rows of a CSV file with a header row (``COLUMNS``; projects
    separated by ';' or spaces), as the JSON rows look."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or "name" not in [f.strip() for f in reader.fieldnames]:
        raise Invalid(f"the CSV file needs a header row naming its columns: {', '.join(COLUMNS)}"
                      " (name is required)")
    unknown = sorted(set(f.strip() for f in reader.fieldnames) - set(COLUMNS))
    if unknown:
        raise Invalid(f"unknown CSV column(s): {', '.join(unknown)}; known: {', '.join(COLUMNS)}")
    rows = []
    for raw in reader:
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        row = {k: v for k, v in row.items() if v != ""}
        if "projects" in row:
            row["projects"] = [x for x in row["projects"].replace(";", " ").split() if x]
        if "active" in row:
            a = row["active"].lower()
            row["active"] = True if a in TRUE else False if a in FALSE else row["active"]
        rows.append(row)
        if len(rows) > MAX_ROWS:
            break
    return rows


def check_rows(rows) -> list[dict]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise Invalid('give {"users": [{"name": ..., ...}, ...]} or a CSV file (text/csv)')
    if not rows:
        raise Invalid("no rows to add")
    if len(rows) > MAX_ROWS:
        raise Invalid(f"at most {MAX_ROWS} rows per request")
    return rows


def _problems(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in err['loc']) or 'row'}: {err['msg']}"
                     for err in e.errors(include_url=False, include_input=False))


def add_row(s: Session, p: Principal, row: dict) -> dict:
    """Create one row's user, their memberships and policy (raises on any refusal)."""
    extra = sorted(set(row) - set(COLUMNS))
    if extra:
        raise Invalid(f"unknown field(s): {', '.join(extra)}")
    fields = {k: row[k] for k in ("name", "domain", "role", "active") if k in row}
    fields.setdefault("domain", p.domain)
    projects = row.get("projects") or []
    if not isinstance(projects, list):
        raise Invalid("projects: give a list of project names")
    try:
        body = UserCreate.model_validate(fields)
        policy = (UserUpdate.model_validate({"resource_policy": row["resource_policy"]})
                  if row.get("resource_policy") else None)
    except ValidationError as e:
        raise Invalid(_problems(e)) from None
    accounts.create_user(s, p, body)
    for project in projects:
        if not isinstance(project, str):
            raise Invalid("projects: give a list of project names")
        accounts.add_member(s, p, body.domain, project, body.name)
    if policy is not None:
        accounts.update_user(s, p, body.name, policy)
    s.flush()
    return accounts.get_user(s, p, body.name)


def add_users(s: Session, p: Principal, rows: list[dict]) -> dict:
    """Each row created or refused on its own; {"created", "refused", "results"}."""
    authz.admin_page_scope(p, "add users")
    results = []
    for i, row in enumerate(check_rows(rows)):
        name = row.get("name")
        savepoint = s.begin_nested()
        try:
            user = add_row(s, p, row)
        except ApiError as e:
            savepoint.rollback()
            results.append({"row": i + 1, "name": name, "result": "refused",
                            "status": e.status, "reason": e.message})
            continue
        savepoint.commit()
        results.append({"row": i + 1, "name": name, "result": "created", "user": user})
    created = sum(1 for r in results if r["result"] == "created")
    return {"created": created, "refused": len(results) - created, "results": results}
