"""the Model Store: published model folders and the endpoints deployed from them

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-10 10:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('store_models',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('folder_id', sa.String(length=32), nullable=False),
    sa.Column('domain_id', sa.Integer(), nullable=True),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('image', sa.String(length=384), nullable=False),
    sa.Column('slots', sa.JSON(), nullable=False),
    sa.Column('card', sa.JSON(), nullable=False),
    sa.Column('published_by', sa.String(length=255), nullable=False),
    sa.Column('published_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['domain_id'], ['domains.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('domain_id', 'folder_id', name='uq_store_models_domain_folder')
    )
    with op.batch_alter_table('store_models', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_store_models_domain_id'), ['domain_id'],
                              unique=False)
        batch_op.create_index(batch_op.f('ix_store_models_folder_id'), ['folder_id'],
                              unique=False)

    op.create_table('store_deployments',
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('store_model_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['store_model_id'], ['store_models.id'], ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('endpoint_id')
    )
    with op.batch_alter_table('store_deployments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_store_deployments_store_model_id'),
                              ['store_model_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('store_deployments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_store_deployments_store_model_id'))
    op.drop_table('store_deployments')
    with op.batch_alter_table('store_models', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_store_models_folder_id'))
        batch_op.drop_index(batch_op.f('ix_store_models_domain_id'))
    op.drop_table('store_models')
