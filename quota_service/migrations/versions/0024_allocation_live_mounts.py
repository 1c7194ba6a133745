"""live mounts: whether a session's spawner can mount folders into it while
it runs (spawner/livemounts.py; its spawner says so once the session runs), so
that the service refuses "mount now" for sessions whose backend cannot
(Slurm, engines on other machines). Existing sessions cannot.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-14 10:00:00.000000
"""

import sqlalchemy as sa
from alembic import op


revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a plain ADD COLUMN (no table rebuild): the allocations triggers stay
    op.add_column("allocations", sa.Column("live_mounts", sa.Boolean(), nullable=False,
                                           server_default=sa.false()))


def downgrade() -> None:
    # not a batch (SQLite would rebuild the table and lose its triggers):
    # both databases drop a column in place (SQLite since 3.35)
    op.execute("ALTER TABLE allocations DROP COLUMN live_mounts")
