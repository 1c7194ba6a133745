"""audit_log.domain: every entry names the domain it is about

A domain admin reads the entries of their domain by ``domain`` alone (no
longer by the actor's domain too: a superadmin of ``default`` acting in
``acme`` leaked acme's entries to default's admins). Entries written before
left ``domain`` empty when the handler did not name a target; fill it the way
new entries are filled (``audit.entry_domain``): the actor's domain, unless
the actor is a superadmin (they act anywhere) or the answer was a 404 (what
was not found may be another domain's hidden thing). Those stay empty:
superadmins only.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 09:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(sa.text(
        "UPDATE audit_log SET domain = actor_domain "
        "WHERE domain IS NULL AND actor_domain IS NOT NULL AND status <> 404 "
        "AND actor NOT IN (SELECT name FROM users WHERE role = 'superadmin')"
    ))


def downgrade() -> None:
    # the filled-in domains stay: 0004's reading (domain or actor's domain)
    # shows every such entry to the same admins as before
    pass
