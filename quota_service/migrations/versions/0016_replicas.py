"""replicas of endpoints: an allocation names its endpoint and how it serves; an
endpoint, when its replicas were last asked for

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-08 10:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('endpoint_id', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('service', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('serving_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_allocations_endpoint_id', ['endpoint_id'], unique=False)
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('desired_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('desired_at')
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.drop_index('ix_allocations_endpoint_id')
        batch_op.drop_column('serving_at')
        batch_op.drop_column('service')
        batch_op.drop_column('endpoint_id')
