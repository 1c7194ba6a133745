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
    # ALTER TABLE ... ADD COLUMN in place: a batch would copy nodes and drop it,
    # which the foreign keys onto it refuse on SQLite
    op.add_column('nodes', sa.Column('share_check', sa.String(length=200), server_default='',
                                     nullable=False))
    op.add_column('nodes', sa.Column('shares_unenforced', sa.Boolean(),
                                     server_default=sa.false(), nullable=False))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN in place (SQLite 3.35+, PostgreSQL): a batch
    # would copy nodes and drop it, which the foreign keys onto it refuse
    op.execute("ALTER TABLE nodes DROP COLUMN shares_unenforced")
    op.execute("ALTER TABLE nodes DROP COLUMN share_check")
