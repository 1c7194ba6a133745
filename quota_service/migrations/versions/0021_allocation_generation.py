"""the allocations' generation: ledger_counters.value of 'allocations' moves
with every change to what the ledger's in-memory view reads of the
allocations (a row made or removed; its state, amounts, owner, group, node,
GPUs, reasons or passes changed), by triggers of the database itself, so the
view one batch of decisions leaves behind (scheduling/batchmemo.Carry) is
used by the next only while nobody else changed the allocations.

A later migration that rebuilds the allocations table (a batch on SQLite
copies and drops it) must create these triggers again:
tests/test_batch_carry.py checks that every one of them fires at head.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-11 10:00:00.000000
"""

from quota_service.migrations import counters


revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None

#: the columns of allocations the view reads (an UPDATE of any other, e.g. a
#: session's last activity, leaves the view as it was)
WATCHED = ("state", "slots", "user_id", "project_id", "domain_id", "resource_group_id",
           "node_id", "gpus", "reasons", "passes")


def upgrade() -> None:
    counters.add("allocations")
    counters.watch("allocations", "hubgrid_bump_allocations", "allocations",
                   ("INSERT", "DELETE", "UPDATE OF " + ", ".join(WATCHED)))


def downgrade() -> None:
    counters.unwatch("hubgrid_bump_allocations", "allocations")
    counters.drop("allocations")
