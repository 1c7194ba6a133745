"""the allocations' generation: ledger_counters.value of 'allocations' moves
with every change to what the ledger's in-memory view reads of the
allocations (a row made or removed; its state, amounts, owner, group, node,
GPUs, reasons or passes changed), by triggers of the database itself, so the
view one batch of decisions leaves behind (scheduling/batchmemo.Carry) is
used by the next only while nobody else changed the allocations.

A later migration that rebuilds the allocations table (a batch on SQLite
copies and drops it) must create these triggers again:
tests/test_batch_carry.py checks that every one of them fires at head.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-11 10:00:00.000000
"""

import secrets

from alembic import op


revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None

#: the columns of allocations the view reads (an UPDATE of any other, e.g. a
#: session's last activity, leaves the view as it was)
WATCHED = ("state", "slots", "user_id", "project_id", "domain_id", "resource_group_id",
           "node_id", "gpus", "reasons", "passes")
BUMP = "UPDATE ledger_counters SET value = value + 1 WHERE name = 'allocations'"


def upgrade() -> None:
    # a random start, as the groups' (0013): a database made again from
    # nothing never repeats a generation a service may still hold
    op.execute("INSERT INTO ledger_counters (name, value) "
               f"VALUES ('allocations', {secrets.randbits(48)})")
    columns = ", ".join(WATCHED)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE FUNCTION hubgrid_bump_allocations() RETURNS trigger "
                   f"LANGUAGE plpgsql AS $$ BEGIN {BUMP}; RETURN NULL; END $$")
        op.execute("CREATE TRIGGER hubgrid_bump_allocations AFTER INSERT OR DELETE OR TRUNCATE "
                   "OR UPDATE OF " + columns + " ON allocations FOR EACH STATEMENT "
                   "EXECUTE FUNCTION hubgrid_bump_allocations()")
    else:
        for event in ("INSERT", "DELETE", "UPDATE OF " + columns):
            name = event.split()[0].lower()
            op.execute(f"CREATE TRIGGER hubgrid_bump_allocations_{name} AFTER {event} "
                       f"ON allocations BEGIN {BUMP}; END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER hubgrid_bump_allocations ON allocations")
        op.execute("DROP FUNCTION hubgrid_bump_allocations()")
    else:
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER hubgrid_bump_allocations_{name}")
    op.execute("DELETE FROM ledger_counters WHERE name = 'allocations'")
