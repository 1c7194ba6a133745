"""Engine, sessions and schema migrations for the service database."""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from typing import Iterator

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

# every table is on models.Base; those of one concern each are defined apart
from . import chatmodels  # noqa: F401
from . import foldermodels  # noqa: F401
from . import servingmodels  # noqa: F401
from . import storemodels  # noqa: F401
from . import usagemodels  # noqa: F401


IMMEDIATE_OPTION = "hubgrid_sqlite_immediate"
#: how many ``transaction`` blocks this thread has open
_open = threading.local()
# any constant: the advisory lock that serialises ledger decisions on PostgreSQL
LEDGER_LOCK_KEY = 0x6875_6267  # "hubg"
#: ``Session.info`` key: the transaction of the session that holds the ledger lock
_LOCKED = "hubgrid_ledger_lock"


def make_engine(url: str, **kwargs) -> Engine:
    """An engine for ``url``; SQLite gets foreign keys, a busy timeout and
    real transactions (pysqlite's implicit ones would let reads run outside
    them, so two ledger decisions could read the same free GPU); psycopg2
    runs an executemany UPDATE or DELETE in pages, not a round trip a row."""
    if url.startswith("sqlite"):
        kwargs.setdefault("connect_args", {"timeout": 30, "isolation_level": None})
    elif url.startswith("postgresql+psycopg2") or url.startswith("postgresql:"):
        # an UPDATE run for many rows (a batch's held ends: ``heldrows``, a
        # queue pass's flush) in one round trip, not one per row
        kwargs.setdefault("executemany_mode", "values_plus_batch")
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):
            # A deferred transaction that reads and then writes cannot
            # upgrade once another connection (the queue and reconcile passes
            # run in worker threads) has committed since its read: SQLite
            # answers "database is locked" at once, whatever the busy
            # timeout. So ``transaction`` takes the write lock at BEGIN,
            # where the busy timeout makes it wait; a transaction opened
            # inside another of the same thread only reads (it could never
            # take the lock its outer one holds) and begins deferred.
            immediate = conn.get_execution_options().get(IMMEDIATE_OPTION)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


#: ``Connection.info`` key: how many writes (INSERT, UPDATE, DELETE) the
#: database connection has run, for ``writes``
_WRITES = "hubgrid_writes"
_DML = ("INSERT", "UPDATE", "DELETE")


@event.listens_for(Engine, "after_cursor_execute")
def _count_writes(conn, _cursor, statement, _parameters, context, _executemany) -> None:
    if (context is not None and (context.isinsert or context.isupdate or context.isdelete)) \
            or statement.lstrip()[:6].upper() in _DML:
        conn.info[_WRITES] = conn.info.get(_WRITES, 0) + 1


def count_write(s: Session) -> None:
    """Count a write ``s`` will run later (``core/laterrows``) as run."""
    info = s.connection().info
    info[_WRITES] = info.get(_WRITES, 0) + 1


def counted_already(s: Session, before: int) -> None:
    """The writes run since ``writes(s)`` was ``before`` were counted when
    they were put off (``count_write``): count them once, not twice."""
    s.connection().info[_WRITES] = before


def writes(s: Session) -> int:
    """How many writes ``s``'s database connection has run (a count that
    only grows: compare two readings to know whether anything was written
    between them, by the ORM, Core or plain SQL)."""
    return s.connection().info.get(_WRITES, 0)


def alembic_config(engine: Engine | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", "quota_service:migrations")
    if engine is not None:
        cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (idempotent)."""
    command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str) -> None:
    command.downgrade(alembic_config(engine), revision)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session], *, ledger_lock: bool = False) -> Iterator[Session]:
    """One unit of work: commit on success, roll back everything on error.

    ``ledger_lock``: hold the ledger lock from the first statement, so
    decisions that read free capacity and write allocations never overlap
    (PostgreSQL: a transaction-scoped advisory lock; SQLite: BEGIN IMMEDIATE).
    """
    session = factory()
    outer = getattr(_open, "depth", 0) == 0
    _open.depth = getattr(_open, "depth", 0) + 1
    writer = None
    try:
        if ledger_lock or outer:
            writer = _sqlite_writer(session)
            conn = session.connection(execution_options={IMMEDIATE_OPTION: True})
            if ledger_lock and conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({LEDGER_LOCK_KEY})")
                session.info[_LOCKED] = session.get_transaction()
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        _open.depth -= 1
        session.close()
        if writer is not None:
            writer.release()


#: per SQLite engine: the lock its writers of this process queue on
_writers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_writers_guard = threading.Lock()
#: seconds a writer queues in the process before it asks SQLite (whose busy timeout then applies)
WRITER_QUEUE_TIMEOUT = 30.0


def _sqlite_writer(session: Session) -> threading.RLock | None:
    """On SQLite, the process's writer lock of the session's engine,
    acquired (None elsewhere, or when it was not had within
    ``WRITER_QUEUE_TIMEOUT``). Writers of one process queue here rather than
    in SQLite's busy handler, which sleeps up to 100 ms between tries while
    the write lock lies free: taken at once when the previous writer ends,
    it serialises the same transactions without the idle gaps."""
    bind = session.get_bind()
    if bind.dialect.name != "sqlite":
        return None
    engine = getattr(bind, "engine", bind)
    with _writers_guard:
        lock = _writers.get(engine)
        if lock is None:
            lock = _writers[engine] = threading.RLock()
    return lock if lock.acquire(timeout=WRITER_QUEUE_TIMEOUT) else None


def ledger_transaction(factory: sessionmaker[Session]):
    """``transaction`` holding the ledger lock."""
    return transaction(factory, ledger_lock=True)


def hold_ledger_lock(s: Session) -> None:
    """Make sure ``s``'s transaction holds the ledger lock: every write that
    changes what admission reads (nodes, devices, drains, groups, grants,
    policies, limits) calls this before it reads anything, so it is decided
    in turn with the admissions and never commits under one (PostgreSQL: the
    advisory lock, once per transaction; SQLite: the transaction took the
    write lock at BEGIN, ``transaction``)."""
    conn = s.connection()
    if conn.dialect.name == "postgresql" and s.info.get(_LOCKED) is not s.get_transaction():
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({LEDGER_LOCK_KEY})")
        s.info[_LOCKED] = s.get_transaction()
