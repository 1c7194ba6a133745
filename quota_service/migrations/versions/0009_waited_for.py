"""what a session waited for in the queue (its history): allocations.waited_for

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 09:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('waited_for', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.drop_column('waited_for')
