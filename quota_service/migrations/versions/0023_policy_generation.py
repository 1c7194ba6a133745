"""the resource policies' generation: ledger_counters.value of 'policies'
moves with every change to resource_policies, by triggers of the database
itself, so the service's in-memory copy of each policy
(scheduling/policycache.py) knows when it is stale, whoever wrote.

A later migration that rebuilds resource_policies (a batch on SQLite copies
and drops it) must create these triggers again: tests/test_policycache.py
checks that every one of them fires at head.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-13 10:00:00.000000
"""

import secrets

from alembic import op


revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None

BUMP = "UPDATE ledger_counters SET value = value + 1 WHERE name = 'policies'"


def upgrade() -> None:
    # a random start, as the groups' (0013): a database made again from
    # nothing never repeats a generation a service may still hold
    op.execute("INSERT INTO ledger_counters (name, value) "
               f"VALUES ('policies', {secrets.randbits(48)})")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE FUNCTION hubgrid_bump_policies() RETURNS trigger "
                   f"LANGUAGE plpgsql AS $$ BEGIN {BUMP}; RETURN NULL; END $$")
        op.execute("CREATE TRIGGER hubgrid_bump_resource_policies AFTER INSERT OR UPDATE "
                   "OR DELETE OR TRUNCATE ON resource_policies FOR EACH STATEMENT "
                   "EXECUTE FUNCTION hubgrid_bump_policies()")
    else:
        for event in ("INSERT", "UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER hubgrid_bump_resource_policies_{event.lower()} "
                       f"AFTER {event} ON resource_policies BEGIN {BUMP}; END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER hubgrid_bump_resource_policies ON resource_policies")
        op.execute("DROP FUNCTION hubgrid_bump_policies()")
    else:
        for event in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER hubgrid_bump_resource_policies_{event}")
    op.execute("DELETE FROM ledger_counters WHERE name = 'policies'")
