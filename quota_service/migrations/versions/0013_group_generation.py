"""the resource groups' generation: ledger_counters.value of 'groups' moves
with every change to resource_groups, resource_group_grants, nodes and
devices, by triggers of the database itself, so the service's in-memory
copy of the groups (scheduling/groupcache.py) knows when it is stale,
whoever wrote (any process, any statement).

A later migration that rebuilds one of these tables (a batch on SQLite
copies and drops it) must create its triggers again: tests/test_groupcache.py
checks that every one of them fires at head.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 10:00:00.000000
"""

import secrets

from alembic import op
import sqlalchemy as sa


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

#: the tables whose changes move the groups' generation
WATCHED = ("resource_groups", "resource_group_grants", "nodes", "devices")
START = lambda: secrets.randbits(48)  # noqa: E731
BUMP = "UPDATE ledger_counters SET value = value + 1 WHERE name = 'groups'"


def upgrade() -> None:
    op.create_table(
        'ledger_counters',
        sa.Column('name', sa.String(length=32), primary_key=True),
        sa.Column('value', sa.BigInteger(), nullable=False, server_default='0'),
    )
    # a random start: a database made again from nothing never repeats a
    # generation that a service's copy of the old one may still hold
    op.execute(f"INSERT INTO ledger_counters (name, value) VALUES ('groups', {START()})")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE FUNCTION hubgrid_bump_groups() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN {BUMP}; RETURN NULL; END $$")
        for table in WATCHED:
            op.execute(f"CREATE TRIGGER hubgrid_bump_{table} AFTER INSERT OR UPDATE OR DELETE "
                       f"OR TRUNCATE ON {table} FOR EACH STATEMENT "
                       "EXECUTE FUNCTION hubgrid_bump_groups()")
    else:
        for table in WATCHED:
            for event in ("INSERT", "UPDATE", "DELETE"):
                op.execute(f"CREATE TRIGGER hubgrid_bump_{table}_{event.lower()} AFTER {event} "
                           f"ON {table} BEGIN {BUMP}; END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in WATCHED:
            op.execute(f"DROP TRIGGER hubgrid_bump_{table} ON {table}")
        op.execute("DROP FUNCTION hubgrid_bump_groups()")
    else:
        for table in WATCHED:
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER hubgrid_bump_{table}_{event}")
    op.drop_table('ledger_counters')
