"""The reset between tests on PostgreSQL (conftest.reset_postgres) leaves
what a fresh migration leaves: no rows but the migrations' counters, and
every sequence back at its start, also one that a rolled-back insert used."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from conftest import MIGRATED_ROWS, _counters, head_revision, reset_postgres
from quota_service.core import db
from quota_service.core.models import Base, Domain, ResourceGroup, Role, User

pytestmark = pytest.mark.postgres


def _added(s, row):
    s.add(row)
    s.flush()
    return row.id


@pytest.fixture
def pg(postgres_database):
    reset_postgres(postgres_database, head_revision())
    e = sa.create_engine(postgres_database, poolclass=NullPool)
    try:
        yield postgres_database, e
    finally:
        e.dispose()


def test_rows_and_used_sequences_are_gone_and_the_counters_stay(pg):
    url, e = pg
    with e.connect() as c:
        counters = _counters(c)
        assert counters, "the migrations insert counters"
    factory = db.session_factory(e)
    with db.transaction(factory) as s:
        acme = Domain(name="acme")
        _added(s, acme)
        _added(s, Domain(name="globex"))
        _added(s, User(name="u", domain=acme, role=Role.user))
    with factory() as s:  # a rolled-back insert uses a sequence up, the table stays empty
        _added(s, ResourceGroup(name="g"))
        s.rollback()
    reset_postgres(url, head_revision())
    with e.connect() as c:
        for table in Base.metadata.tables:
            if table not in MIGRATED_ROWS:
                assert c.execute(sa.text(f'SELECT count(*) FROM "{table}"')).scalar() == 0, table
        assert _counters(c) == counters
    with db.transaction(factory) as s:
        assert _added(s, Domain(name="acme")) == 1
        assert _added(s, ResourceGroup(name="g")) == 1


def test_after_a_reset_no_sequence_counts_as_used(pg):
    url, e = pg
    reset_postgres(url, head_revision())
    with e.connect() as c:
        assert c.execute(sa.text(
            "SELECT count(*) FROM pg_sequences WHERE last_value IS NOT NULL")).scalar() == 0
