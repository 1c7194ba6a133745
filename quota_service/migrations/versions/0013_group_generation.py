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

from alembic import op
import sqlalchemy as sa

from quota_service.migrations import counters


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

#: the tables whose changes move the groups' generation
WATCHED = ("resource_groups", "resource_group_grants", "nodes", "devices")


def upgrade() -> None:
    op.create_table(
        'ledger_counters',
        sa.Column('name', sa.String(length=32), primary_key=True),
        sa.Column('value', sa.BigInteger(), nullable=False, server_default='0'),
    )
    counters.add("groups")
    for table in WATCHED:
        counters.watch("groups", f"hubgrid_bump_{table}", table)


def downgrade() -> None:
    for table in WATCHED:
        counters.unwatch(f"hubgrid_bump_{table}", table)
    counters.drop("groups")
    op.drop_table('ledger_counters')
