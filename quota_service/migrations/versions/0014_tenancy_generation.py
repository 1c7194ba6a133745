"""the accounts' generation: ledger_counters.value of 'tenancy' moves with
every change to domains, projects, users, memberships and keypairs (a
keypair's last use excepted), by triggers of the database itself, so the
service's in-memory copy of each keypair's caller (tenancy/keycache.py)
knows when it is stale, whoever wrote.

A later migration that rebuilds one of these tables (a batch on SQLite
copies and drops it) must create its triggers again: tests/test_keycache.py
checks that every one of them fires at head.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06 10:00:00.000000
"""

import secrets

from alembic import op


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

#: the tables whose changes move the accounts' generation
WATCHED = ("domains", "projects", "users", "memberships", "keypairs")
#: the keypair columns a caller is made of (``last_used_at`` moves at every use)
KEYPAIR_COLUMNS = "id, access_key, secret_hash, user_id, resource_policy, active, expires_at"
BUMP = "UPDATE ledger_counters SET value = value + 1 WHERE name = 'tenancy'"


def _update(table: str) -> str:
    return f"UPDATE OF {KEYPAIR_COLUMNS}" if table == "keypairs" else "UPDATE"


def upgrade() -> None:
    # a random start: a database made again from nothing never repeats a
    # generation that a service's copy of the old one may still hold
    op.execute("INSERT INTO ledger_counters (name, value) "
               f"VALUES ('tenancy', {secrets.randbits(48)})")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE FUNCTION hubgrid_bump_tenancy() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN {BUMP}; RETURN NULL; END $$")
        for table in WATCHED:
            op.execute(f"CREATE TRIGGER hubgrid_tenancy_{table} AFTER INSERT OR {_update(table)} "
                       f"OR DELETE OR TRUNCATE ON {table} FOR EACH STATEMENT "
                       "EXECUTE FUNCTION hubgrid_bump_tenancy()")
    else:
        for table in WATCHED:
            for event in ("INSERT", _update(table), "DELETE"):
                op.execute(f"CREATE TRIGGER hubgrid_tenancy_{table}_{event.split()[0].lower()} "
                           f"AFTER {event} ON {table} BEGIN {BUMP}; END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in WATCHED:
            op.execute(f"DROP TRIGGER hubgrid_tenancy_{table} ON {table}")
        op.execute("DROP FUNCTION hubgrid_bump_tenancy()")
    else:
        for table in WATCHED:
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER hubgrid_tenancy_{table}_{event}")
    op.execute("DELETE FROM ledger_counters WHERE name = 'tenancy'")
