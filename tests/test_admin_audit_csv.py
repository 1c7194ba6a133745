"""The access log page's export: GET audit?format=csv, with the
same filters and scope as the JSON listing, every page of it, cells a
spreadsheet would run as formulas defused."""

from __future__ import annotations

import csv
import datetime as dt
import io

from ledger_world import T0
from quota_service.core.models import AuditEntry
from quota_service.tenancy import auditcsv
from service_app import served  # noqa: F401


def test_formula_cells_are_defused_and_plain_ones_kept():
    assert auditcsv.cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert auditcsv.cell("@x") == "'@x" and auditcsv.cell("-1") == "'-1"
    assert auditcsv.cell("alice") == "alice" and auditcsv.cell(None) == ""


def seed(world, n_acme: int, n_globex: int) -> None:
    with world.tx() as s:
        for i in range(n_acme):
            s.add(AuditEntry(timestamp=T0 + dt.timedelta(seconds=i), actor="ada",
                             actor_domain="acme", domain="acme", action="user.update",
                             target=f"u{i}", outcome="success", status=200,
                             detail="=cmd" if i == 0 else ""))
        for i in range(n_globex):
            s.add(AuditEntry(timestamp=T0 + dt.timedelta(seconds=i), actor="gus",
                             actor_domain="globex", domain="globex", action="user.update",
                             target=f"g{i}", outcome="denied", status=403, detail=""))


def parse(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


async def test_an_export_has_every_page_in_the_callers_scope(served):  # noqa: F811
    seed(served.world, 620, 3)
    served.svc.clock = lambda: T0 + dt.timedelta(hours=1)
    resp, text = await served.call("GET", "audit?format=csv&action=user.update", "ada")
    assert resp.code == 200, text
    assert resp.headers["Content-Type"].startswith("text/csv")
    assert "attachment" in resp.headers["Content-Disposition"]
    got = parse(text)
    assert len(got) == 620 and {r["domain"] for r in got} == {"acme"}
    assert got[0]["target"] == "u619" and got[-1]["target"] == "u0"  # newest first
    assert got[-1]["detail"] == "'=cmd"
    resp, text = await served.call("GET", "audit?format=csv&outcome=denied", "root")
    assert [r["actor"] for r in parse(text)] == ["gus"] * 3
    since = (T0 + dt.timedelta(seconds=618)).isoformat().replace("+", "%2B")
    resp, text = await served.call("GET", f"audit?format=csv&since={since}", "ada")
    assert [r["target"] for r in parse(text)] == ["u619", "u618"]


async def test_refusals(served):  # noqa: F811
    for path, who, code in (("audit?format=csv", "alice", 403),
                            ("audit?format=csv&limit=5", "ada", 422),
                            ("audit?format=xml", "ada", 422)):
        resp, body = await served.call("GET", path, who)
        assert resp.code == code and body["message"], (path, body)
