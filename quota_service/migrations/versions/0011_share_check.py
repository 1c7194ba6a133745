"""whether a node's GPU shares can be enforced now: nodes.share_check (why
not), nodes.shares_unenforced (an admin lets it take shares anyway)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 10:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('nodes', schema=None) as batch_op:
        batch_op.add_column(sa.Column('share_check', sa.String(length=200), server_default='',
                                      nullable=False))
        batch_op.add_column(sa.Column('shares_unenforced', sa.Boolean(),
                                      server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('nodes', schema=None) as batch_op:
        batch_op.drop_column('shares_unenforced')
        batch_op.drop_column('share_check')
