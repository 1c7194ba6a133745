"""autoscaling of endpoints: their rules and the decisions taken

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-09 10:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('autoscaling', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('scaling_events', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('scaling_events')
        batch_op.drop_column('autoscaling')
