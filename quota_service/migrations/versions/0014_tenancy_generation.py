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

from quota_service.migrations import counters


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

#: the tables whose changes move the accounts' generation
WATCHED = ("domains", "projects", "users", "memberships", "keypairs")
#: the keypair columns a caller is made of (``last_used_at`` moves at every use)
KEYPAIR_COLUMNS = "id, access_key, secret_hash, user_id, resource_policy, active, expires_at"


def upgrade() -> None:
    counters.add("tenancy")
    for table in WATCHED:
        update = f"UPDATE OF {KEYPAIR_COLUMNS}" if table == "keypairs" else "UPDATE"
        counters.watch("tenancy", f"hubgrid_tenancy_{table}", table,
                       ("INSERT", update, "DELETE"))


def downgrade() -> None:
    for table in WATCHED:
        counters.unwatch(f"hubgrid_tenancy_{table}", table)
    counters.drop("tenancy")
