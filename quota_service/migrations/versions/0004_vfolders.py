"""vfolders: folders, invitations and shares; allowed vfolder hosts of projects and
policies; the mounts of allocations

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 10:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

# a plain string (not text()): SQLite adds the column in place instead of copying the table
EMPTY_LIST = "[]"


def upgrade() -> None:
    op.create_table('vfolders',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('host', sa.String(length=64), nullable=False),
    sa.Column('owner_user_id', sa.Integer(), nullable=True),
    sa.Column('owner_project_id', sa.Integer(), nullable=True),
    sa.Column('usage_mode', sa.String(length=16), nullable=False),
    sa.Column('project_permission', sa.String(length=2), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('trashed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('usage_bytes', sa.BigInteger(), nullable=False),
    sa.Column('usage_measured_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint('(owner_user_id IS NULL) <> (owner_project_id IS NULL)',
                       name='ck_vfolders_one_owner'),
    sa.ForeignKeyConstraint(['owner_project_id'], ['projects.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['owner_user_id'], ['users.id'], ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('owner_project_id', 'name', name='uq_vfolders_project_name'),
    sa.UniqueConstraint('owner_user_id', 'name', name='uq_vfolders_user_name')
    )
    with op.batch_alter_table('vfolders', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_vfolders_owner_project_id'), ['owner_project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vfolders_owner_user_id'), ['owner_user_id'], unique=False)

    op.create_table('vfolder_invitations',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('folder_id', sa.String(length=32), nullable=False),
    sa.Column('inviter_id', sa.Integer(), nullable=False),
    sa.Column('invitee_id', sa.Integer(), nullable=False),
    sa.Column('permission', sa.String(length=2), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['folder_id'], ['vfolders.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['invitee_id'], ['users.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['inviter_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('vfolder_invitations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_vfolder_invitations_folder_id'), ['folder_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vfolder_invitations_invitee_id'), ['invitee_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vfolder_invitations_inviter_id'), ['inviter_id'], unique=False)

    op.create_table('vfolder_shares',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('folder_id', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('permission', sa.String(length=2), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['folder_id'], ['vfolders.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('folder_id', 'user_id', name='uq_vfolder_shares')
    )
    with op.batch_alter_table('vfolder_shares', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_vfolder_shares_folder_id'), ['folder_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vfolder_shares_user_id'), ['user_id'], unique=False)

    # existing rows get empty lists: nothing mounted, nothing added to the allow-lists
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('allowed_vfolder_hosts', sa.JSON(), nullable=False,
                                      server_default=EMPTY_LIST))
    with op.batch_alter_table('resource_policies', schema=None) as batch_op:
        batch_op.add_column(sa.Column('allowed_vfolder_hosts', sa.JSON(), nullable=False,
                                      server_default=EMPTY_LIST))
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('mounts', sa.JSON(), nullable=False,
                                      server_default=EMPTY_LIST))


def downgrade() -> None:
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.drop_column('mounts')
    with op.batch_alter_table('resource_policies', schema=None) as batch_op:
        batch_op.drop_column('allowed_vfolder_hosts')
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.drop_column('allowed_vfolder_hosts')

    with op.batch_alter_table('vfolder_shares', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_vfolder_shares_user_id'))
        batch_op.drop_index(batch_op.f('ix_vfolder_shares_folder_id'))
    op.drop_table('vfolder_shares')
    with op.batch_alter_table('vfolder_invitations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_vfolder_invitations_inviter_id'))
        batch_op.drop_index(batch_op.f('ix_vfolder_invitations_invitee_id'))
        batch_op.drop_index(batch_op.f('ix_vfolder_invitations_folder_id'))
    op.drop_table('vfolder_invitations')
    with op.batch_alter_table('vfolders', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_vfolders_owner_user_id'))
        batch_op.drop_index(batch_op.f('ix_vfolders_owner_project_id'))
    op.drop_table('vfolders')
