"""the line's own generation: a change to a request's place in its group's
line only (its pending ``reasons`` or its head-of-line ``passes``, what a
queue pass writes at nearly every pass) moves ``ledger_counters`` row
'allocation_line' instead of 'allocations', so a batch keeps what it read of
holdings, running sessions and nodes across such a pass and reads only the
line again (scheduling/batchmemo.Carry). 'allocations' still moves with
every row made or removed and every change to its state, amounts, owner,
group, node or GPUs.

A later migration that rebuilds the allocations table (a batch on SQLite
copies and drops it) must create these triggers again:
tests/test_batch_carry.py checks that every one of them fires at head.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-12 10:00:00.000000
"""

import secrets

from alembic import op


revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None

#: what the view reads of the holdings, the running sessions and the nodes
HELD = ("state", "slots", "user_id", "project_id", "domain_id", "resource_group_id",
        "node_id", "gpus")
#: what it reads of the line (which pending requests hold its head)
LINE = ("reasons", "passes")
BUMP = "UPDATE ledger_counters SET value = value + 1 WHERE name = '{}'"


def _triggers(held: tuple[str, ...], line: bool) -> None:
    """(Re)create the update triggers: 'allocations' on ``held``, and
    'allocation_line' on ``LINE`` when ``line``."""
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        op.execute("DROP TRIGGER hubgrid_bump_allocations ON allocations")
        op.execute("CREATE TRIGGER hubgrid_bump_allocations AFTER INSERT OR DELETE OR TRUNCATE "
                   "OR UPDATE OF " + ", ".join(held) + " ON allocations FOR EACH STATEMENT "
                   "EXECUTE FUNCTION hubgrid_bump_allocations()")
    else:
        op.execute("DROP TRIGGER hubgrid_bump_allocations_update")
        op.execute("CREATE TRIGGER hubgrid_bump_allocations_update AFTER UPDATE OF "
                   + ", ".join(held) + " ON allocations BEGIN "
                   + BUMP.format("allocations") + "; END")
    if not line:
        return
    if pg:
        op.execute("CREATE FUNCTION hubgrid_bump_allocation_line() RETURNS trigger "
                   "LANGUAGE plpgsql AS $$ BEGIN " + BUMP.format("allocation_line")
                   + "; RETURN NULL; END $$")
        op.execute("CREATE TRIGGER hubgrid_bump_allocation_line AFTER UPDATE OF "
                   + ", ".join(LINE) + " ON allocations FOR EACH STATEMENT "
                   "EXECUTE FUNCTION hubgrid_bump_allocation_line()")
    else:
        op.execute("CREATE TRIGGER hubgrid_bump_allocation_line_update AFTER UPDATE OF "
                   + ", ".join(LINE) + " ON allocations BEGIN "
                   + BUMP.format("allocation_line") + "; END")


def upgrade() -> None:
    # a random start, as the others': a database made again from nothing
    # never repeats a generation a service may still hold
    op.execute("INSERT INTO ledger_counters (name, value) "
               f"VALUES ('allocation_line', {secrets.randbits(48)})")
    _triggers(HELD, line=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER hubgrid_bump_allocation_line ON allocations")
        op.execute("DROP FUNCTION hubgrid_bump_allocation_line()")
    else:
        op.execute("DROP TRIGGER hubgrid_bump_allocation_line_update")
    _triggers(HELD + LINE, line=False)  # 0021's
    op.execute("DELETE FROM ledger_counters WHERE name = 'allocation_line'")
