"""SQLite transactions from several threads (the service's queue and
reconcile passes run in worker threads next to the request handlers)."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import Domain


def test_a_read_then_write_transaction_survives_a_concurrent_writer(tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path / 'x.sqlite'}")
    db.upgrade(engine)
    factory = db.session_factory(engine)
    read_done, errors = threading.Event(), []

    def reader_then_writer():
        try:
            with db.transaction(factory) as s:
                s.scalars(sa.select(Domain)).all()
                read_done.set()
                threading.Event().wait(0.3)  # the other thread tries to write meanwhile
                s.add(Domain(name="first"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
            read_done.set()

    def writer():
        read_done.wait(10)
        try:
            with db.transaction(factory) as s:
                s.add(Domain(name="second"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader_then_writer), threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with db.transaction(factory) as s:
        assert set(s.scalars(sa.select(Domain.name))) == {"first", "second"}
    engine.dispose()
