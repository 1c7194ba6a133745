"""the resource policies' generation: ledger_counters.value of 'policies'
moves with every change to resource_policies, by triggers of the database
itself, so the service's in-memory copy of each policy
(scheduling/policycache.py) knows when it is stale, whoever wrote.

A later migration that rebuilds resource_policies (a batch on SQLite copies
and drops it) must create these triggers again: tests/test_policycache.py
checks that every one of them fires at head.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-13 10:00:00.000000
"""

from quota_service.migrations import counters


revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    counters.add("policies")
    counters.watch("policies", "hubgrid_bump_resource_policies", "resource_policies")


def downgrade() -> None:
    counters.unwatch("hubgrid_bump_resource_policies", "resource_policies")
    counters.drop("policies")
