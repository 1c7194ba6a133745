"""resource groups that ran every session type run inference sessions too

Endpoints' replicas are sessions of the type ``inference``. A group made
with the default (every type: then ``interactive`` and ``batch``) gets it,
as a group made now does; a group an admin narrowed (e.g. ``batch`` only)
keeps what it has.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-08 11:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

GROUPS = sa.table("resource_groups", sa.column("id", sa.Integer),
                  sa.column("session_types", sa.JSON))
EVERY_TYPE_BEFORE = {"interactive", "batch"}


def _rewrite(change) -> None:
    bind = op.get_bind()
    for id_, types in bind.execute(sa.select(GROUPS.c.id, GROUPS.c.session_types)).all():
        new = change(list(types or []))
        if new != types:
            bind.execute(GROUPS.update().where(GROUPS.c.id == id_).values(session_types=new))


def upgrade() -> None:
    _rewrite(lambda t: t + ["inference"]
             if EVERY_TYPE_BEFORE <= set(t) and "inference" not in t else t)


def downgrade() -> None:
    _rewrite(lambda t: [x for x in t if x != "inference"])
