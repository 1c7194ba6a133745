"""idle reclamation: reclaim_events; utilization, warning and keep settings of
resource policies; activity, notice and keeps of allocations

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 09:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('reclaim_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('allocation_id', sa.String(length=36), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('rule', sa.String(length=16), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('resource_group_id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('domain_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.CheckConstraint("kind IN ('warning', 'extended', 'reclaimed', 'shadow')",
                       name='ck_reclaim_events_kind'),
    sa.CheckConstraint("rule IN ('idle', 'lifetime', 'utilization')",
                       name='ck_reclaim_events_rule'),
    sa.ForeignKeyConstraint(['allocation_id'], ['allocations.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_reclaim_events_at', 'reclaim_events', ['at'], unique=False)
    op.create_index('ix_reclaim_events_domain_at', 'reclaim_events', ['domain_id', 'at'],
                    unique=False)
    op.create_index(op.f('ix_reclaim_events_allocation_id'), 'reclaim_events',
                    ['allocation_id'], unique=False)
    with op.batch_alter_table('resource_policies', schema=None) as batch_op:
        batch_op.add_column(sa.Column('utilization_window', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('utilization_grace', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('utilization_thresholds', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('utilization_operator', sa.String(length=3),
                                      server_default='and', nullable=False))
        batch_op.add_column(sa.Column('reclaim_warning', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('keep_extension', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('max_keeps', sa.Integer(), nullable=True))
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('activity', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('reclaim_notice', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('keeps', sa.Integer(), server_default='0',
                                      nullable=False))
        batch_op.add_column(sa.Column('kept_until', sa.DateTime(timezone=True),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.drop_column('kept_until')
        batch_op.drop_column('keeps')
        batch_op.drop_column('reclaim_notice')
        batch_op.drop_column('activity')
    with op.batch_alter_table('resource_policies', schema=None) as batch_op:
        batch_op.drop_column('max_keeps')
        batch_op.drop_column('keep_extension')
        batch_op.drop_column('reclaim_warning')
        batch_op.drop_column('utilization_operator')
        batch_op.drop_column('utilization_thresholds')
        batch_op.drop_column('utilization_grace')
        batch_op.drop_column('utilization_window')
    op.drop_index(op.f('ix_reclaim_events_allocation_id'), table_name='reclaim_events')
    op.drop_index('ix_reclaim_events_domain_at', table_name='reclaim_events')
    op.drop_index('ix_reclaim_events_at', table_name='reclaim_events')
    op.drop_table('reclaim_events')
