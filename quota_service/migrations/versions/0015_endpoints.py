"""endpoints of model serving and their bearer tokens

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07 10:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('endpoints',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('resource_group_id', sa.Integer(), nullable=False),
    sa.Column('image', sa.String(length=384), nullable=False),
    sa.Column('model_folder', sa.String(length=32), nullable=False),
    sa.Column('slots', sa.JSON(), nullable=False),
    sa.Column('replicas', sa.Integer(), nullable=False),
    sa.Column('public', sa.Boolean(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('state_reason', sa.Text(), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("state IN ('provisioning', 'running', 'degraded', 'terminating', "
                       "'failed')", name='ck_endpoints_state'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['resource_group_id'], ['resource_groups.id'], ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'name', name='uq_endpoints_project_name')
    )
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_endpoints_project_id'), ['project_id'], unique=False)

    op.create_table('endpoint_tokens',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('endpoint_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_endpoint_tokens_endpoint_id'), ['endpoint_id'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('endpoint_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_endpoint_tokens_endpoint_id'))
    op.drop_table('endpoint_tokens')
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_endpoints_project_id'))
    op.drop_table('endpoints')
