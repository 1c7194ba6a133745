"""how a node enforces GPU shares: nodes.sharing_mode (mps, hami, framework;
'' not said), what the service's share check looks at

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 10:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('nodes', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sharing_mode', sa.String(length=16), server_default='',
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('nodes', schema=None) as batch_op:
        batch_op.drop_column('sharing_mode')
