"""each GPU's driver UUID (NVML discovery): devices.uuid

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 09:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('devices', schema=None) as batch_op:
        batch_op.add_column(sa.Column('uuid', sa.String(length=96), server_default='',
                                      nullable=False))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN in place (SQLite 3.35+, PostgreSQL): a batch
    # would copy devices and drop it, which the foreign keys onto it refuse
    op.execute("ALTER TABLE devices DROP COLUMN uuid")
