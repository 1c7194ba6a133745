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
    # in place, as 0011 (no copy of nodes)
    op.add_column('nodes', sa.Column('sharing_mode', sa.String(length=16), server_default='',
                                     nullable=False))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN in place (SQLite 3.35+, PostgreSQL): a batch
    # would copy nodes and drop it, which the foreign keys onto it refuse
    op.execute("ALTER TABLE nodes DROP COLUMN sharing_mode")
