"""usage accounting: usage_intervals, the append-only record of sessions that ran

One immutable row per allocation that ran and ended (admitted_at to ended_at),
written at release from now on; the sessions that ended before this revision
are backfilled from the ledger.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 08:30:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('usage_intervals',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('allocation_id', sa.String(length=36), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('domain_id', sa.Integer(), nullable=False),
    sa.Column('resource_group_id', sa.Integer(), nullable=False),
    sa.Column('session_type', sa.String(length=16), nullable=False),
    sa.Column('slots', sa.JSON(), nullable=False),
    sa.Column('gpus', sa.JSON(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('ended_at >= started_at', name='ck_usage_intervals_order'),
    sa.ForeignKeyConstraint(['domain_id'], ['domains.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['resource_group_id'], ['resource_groups.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('allocation_id')
    )
    with op.batch_alter_table('usage_intervals', schema=None) as batch_op:
        batch_op.create_index('ix_usage_intervals_ended_started', ['ended_at', 'started_at'], unique=False)
        batch_op.create_index('ix_usage_intervals_domain_ended', ['domain_id', 'ended_at'], unique=False)
        batch_op.create_index('ix_usage_intervals_user_ended', ['user_id', 'ended_at'], unique=False)

    # the sessions that ran and ended before this revision
    op.execute(sa.text(
        "INSERT INTO usage_intervals (allocation_id, user_id, project_id, domain_id, "
        "resource_group_id, session_type, slots, gpus, started_at, ended_at) "
        "SELECT id, user_id, project_id, domain_id, resource_group_id, session_type, "
        "slots, gpus, admitted_at, ended_at FROM allocations "
        "WHERE admitted_at IS NOT NULL AND ended_at IS NOT NULL AND ended_at >= admitted_at"
    ))


def downgrade() -> None:
    with op.batch_alter_table('usage_intervals', schema=None) as batch_op:
        batch_op.drop_index('ix_usage_intervals_user_ended')
        batch_op.drop_index('ix_usage_intervals_domain_ended')
        batch_op.drop_index('ix_usage_intervals_ended_started')

    op.drop_table('usage_intervals')
