"""Fixtures shared by the service's unit tests: databases and a small world.

``db_url`` runs a test on SQLite (a file in tmp_path) and on the real
PostgreSQL server ($HUBGRID_TEST_POSTGRES_URL), each migrated to head and
without rows: a copy of one migrated SQLite file, and one PostgreSQL
database per test session (created with the server's CREATEDB right) whose
tables are emptied before each test (a CREATE DATABASE per test costs
~0.3 s, migrating ~0.2 s).
Without that variable the PostgreSQL half is skipped locally and fails in CI.

Nothing hub-related lives here: see ``tests/hub_fixtures.py``.
"""

from __future__ import annotations

import functools
import gc
import os
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

import realparts
from bench import hubproc
from docker_fixtures import dock  # noqa: F401 - one hub for every Docker session module
from serving_fixtures import bob_lab_server, serving, serving_lab  # noqa: F401 - one inference group, one Lab server, for every serving module
from slurm_fixtures import slurm_hub  # noqa: F401 - one hub for every Slurm session module
from quota_service.core import db
from quota_service.tenancy import accounts as manager
from quota_service.core.authz import Principal
from quota_service.core.models import Base, Domain, Role, User
from quota_service.core.schemas import ProjectCreate, UserCreate

POSTGRES_ENV = "HUBGRID_TEST_POSTGRES_URL"

#: the test hubs find their managed services up within 0.25 s of it instead
#: of JupyterHub's pauses of up to 5 s (bench/hubproc.py): ~1.5 s a hub start
hubproc.CHECK_MAX_WAIT = 0.25


def pytest_collection_modifyitems(config, items):
    """Marks ``real`` the tests that run real parts, and ``apart`` those of
    them that share no engine, Slurm or browser (tests/realparts.py): ``make
    test`` runs ``real and not apart`` in one pytest and the rest in another,
    at once."""
    for item in items:
        if realparts.uses_real_parts(item):
            item.add_marker(pytest.mark.real)
            # a module may say it is apart itself (``pytestmark``): a browser
            # on a hub of its own, which the source rule keeps in order
            if item.get_closest_marker("apart") is None and not realparts.shares_real_parts(item):
                item.add_marker(pytest.mark.apart)


@pytest.fixture(scope="module", autouse=True)
def collect_garbage_after_each_module() -> Iterator[None]:
    """Whatever a module leaves unclosed (a socket, a file) is reported by
    that module's last test, not by whichever test the garbage collector
    happens to run in later (``filterwarnings = error`` makes it fail)."""
    yield
    gc.collect()


def postgres_base_url() -> str:
    """The server's test URL; a missing one fails in CI and skips elsewhere."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        msg = (
            f"${POSTGRES_ENV} is not set: start the server with "
            f"`bash scripts/start-postgres.sh` and export the URL it prints as "
            f"{POSTGRES_ENV} (`make test` does both)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return url


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty database on the server, dropped afterwards."""
    base = sa.engine.make_url(postgres_base_url())
    name = f"hubgrid_unit_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as c:
            c.execute(sa.text(f'CREATE DATABASE "{name}"'))
        try:
            yield base.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as c:
                c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """One database of this test session on the server, dropped at the end."""
    with fresh_postgres_database() as url:
        try:
            yield url
        finally:
            engine = _RESETTERS.pop(url, None)
            if engine is not None:
                engine.dispose()


def wipe_postgres_schema(url: str) -> None:
    """Drop every table, the ``user_role`` type and alembic_version at once."""
    wiper = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with wiper.connect() as c:
            # a connection some test leaked would hold locks: fail, don't hang
            c.execute(sa.text("SET lock_timeout = '10s'"))
            c.execute(sa.text("DROP SCHEMA public CASCADE"))
            c.execute(sa.text("CREATE SCHEMA public"))
    finally:
        wiper.dispose()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory) -> Path:
    """A SQLite database migrated to head once per run: each test gets a copy
    (a file copy takes 0.3 ms; the migrations take 60-100 ms)."""
    path = tmp_path_factory.mktemp("migrated") / "hubgrid.sqlite"
    e = db.make_engine(f"sqlite:///{path}")
    try:
        db.upgrade(e)
    finally:
        e.dispose()
    return path


@functools.cache
def head_revision() -> str:
    return ScriptDirectory.from_config(db.alembic_config()).get_current_head()


#: the tables whose rows the migrations insert (kept when a test's database is emptied)
MIGRATED_ROWS = ("ledger_counters",)
#: per database URL: the counters a fresh migration left (a test that deleted
#: some, e.g. to check that nothing is cached without them, makes the next
#: test's reset migrate again instead of keeping the gap)
_MIGRATED_COUNTERS: dict[str, list] = {}


def _counters(c) -> list:
    return sorted(c.execute(sa.text("SELECT name FROM ledger_counters")).scalars())


#: per database URL: one connection kept for the resets between tests
#: (connecting costs 20-40 ms, as much as the reset itself)
_RESETTERS: dict[str, sa.Engine] = {}


def _resetter(url: str) -> sa.Engine:
    if url not in _RESETTERS:
        _RESETTERS[url] = sa.create_engine(
            url, isolation_level="AUTOCOMMIT", pool_size=1, max_overflow=0, pool_pre_ping=True,
            # a connection some test leaked would hold locks: fail, don't hang
            connect_args={"options": "-c lock_timeout=10s"})
    return _RESETTERS[url]


def reset_postgres(url: str, head: str) -> None:
    """Leave the database at the schema of ``head`` with no rows: its tables
    emptied when the previous test left that schema (10-50 ms:
    ``empty_postgres_tables``), else wiped and migrated again (200 ms; a
    test that downgraded, or the first one). A migrated database holds no
    rows but the counters of ``MIGRATED_ROWS``."""
    with _resetter(url).connect() as c:
        names = set(c.execute(sa.text(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")).scalars())
        at = (c.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
              if "alembic_version" in names else [])
        if at == [head] and names - {"alembic_version"} == set(Base.metadata.tables) \
                and _counters(c) == _MIGRATED_COUNTERS.get(url):
            # ledger_counters keeps its rows: the migrations insert them (0013)
            empty_postgres_tables(c, sorted(t for t in Base.metadata.tables
                                            if t not in MIGRATED_ROWS))
            return
    wipe_postgres_schema(url)
    migrated = db.make_engine(url)
    try:
        db.upgrade(migrated)
        with migrated.connect() as c:
            _MIGRATED_COUNTERS[url] = _counters(c)
    finally:
        migrated.dispose()


def empty_postgres_tables(c, tables: list[str]) -> None:
    """What ``TRUNCATE <tables> RESTART IDENTITY CASCADE`` leaves, in one
    round trip and one commit: every row deleted, children first (TRUNCATE
    makes new files for every table it names: 100-400 ms on 2 busy cores
    for a test's few rows), and every sequence of those tables that was used
    set back to its start (what RESTART IDENTITY does; a rolled-back insert
    uses one up in a table it leaves empty). The triggers of migrations 0013
    and 0014 move their counters on a DELETE as on a TRUNCATE."""
    order = [t.name for t in reversed(Base.metadata.sorted_tables) if t.name in tables]
    assert sorted(order) == sorted(tables), "a table the models do not know"
    names = ", ".join(f"'{t}'" for t in order)
    c.exec_driver_sql(
        "BEGIN; " + "".join(f'DELETE FROM "{t}"; ' for t in order)
        + "SELECT setval(s.oid, ps.start_value, false) FROM pg_class s"
        " JOIN pg_namespace n ON n.oid = s.relnamespace"
        " JOIN pg_sequences ps ON ps.schemaname = n.nspname AND ps.sequencename = s.relname"
        " JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid"
        "  AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')"
        " JOIN pg_class t ON t.oid = d.refobjid"
        f" WHERE s.relkind = 'S' AND ps.last_value IS NOT NULL AND t.relname IN ({names}); "
        "COMMIT")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:
    """SQLAlchemy URL of a database with the schema at head and no rows: a
    copy of ``migrated_sqlite`` in tmp_path, or the session's PostgreSQL
    database emptied for this test (``reset_postgres``). ``empty_db_url``
    for a database without a schema."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_db_url")
    url = request.getfixturevalue("postgres_database")
    reset_postgres(url, head_revision())
    return url


@pytest.fixture
def sqlite_db_url(migrated_sqlite, tmp_path) -> str:
    """``db_url``'s SQLite half alone: a module whose subject does not depend on
    the service's database overrides ``db_url`` with it."""
    path = tmp_path / "hubgrid.sqlite"
    shutil.copyfile(migrated_sqlite, path)
    return f"sqlite:///{path}"


@pytest.fixture
def empty_db_url(db_url, tmp_path) -> str:
    """The database of ``db_url`` with no schema at all (the migrations' tests)."""
    if db_url.startswith("sqlite"):
        return f"sqlite:///{tmp_path / 'empty.sqlite'}"
    wipe_postgres_schema(db_url)
    return db_url


@pytest.fixture
def engine(db_url) -> Iterator[sa.Engine]:
    """An engine on ``db_url`` (schema at head, no rows)."""
    e = db.make_engine(db_url)
    try:
        yield e
    finally:
        e.dispose()


@pytest.fixture
def session_factory(engine) -> sessionmaker[Session]:
    return db.session_factory(engine)


@dataclass(frozen=True)
class World:
    """The small tenancy built by the ``tenancy`` fixture, and helpers on it.

    acme: root (superadmin), ada (domain admin), alice (user, in acme/ml),
    bob (user, in nothing); projects acme/ml and acme/web.
    globex: gus (domain admin), gina (user, in globex/lab); project globex/lab.

    The fixture's name hides the module: import it as
    ``from quota_service import tenancy as manager``.
    """

    session_factory: sessionmaker[Session]

    def tx(self):
        """One transaction: commits on success, rolls back on a refusal."""
        return db.transaction(self.session_factory)

    def principal(self, name: str, credential: str = "token") -> Principal:
        with self.session_factory() as s:
            user = s.scalar(sa.select(User).where(User.name == name))
            assert user is not None, f"no user {name!r} in the world"
            return manager.principal_for(s, user, credential)

    def count(self, model, *where) -> int:
        with self.session_factory() as s:
            return s.scalar(sa.select(sa.func.count()).select_from(model).where(*where))

    def user(self, name: str) -> User | None:
        with self.session_factory() as s:
            u = s.scalar(sa.select(User).where(User.name == name))
            if u is not None:
                # load what callers read after the session is gone
                _ = u.domain.name, [m.project.name for m in u.memberships], u.keypairs
            return u


WORLD_USERS = {
    # name: (domain, role, projects)
    "root": ("acme", Role.superadmin, ()),
    "ada": ("acme", Role.domain_admin, ()),
    "gus": ("globex", Role.domain_admin, ()),
    "alice": ("acme", Role.user, ("ml",)),
    "bob": ("acme", Role.user, ()),
    "gina": ("globex", Role.user, ("lab",)),
}
WORLD_PROJECTS = {"acme": ("ml", "web"), "globex": ("lab",)}


@pytest.fixture
def tenancy(session_factory) -> World:
    """The world of :class:`World`, built with the tenancy manager functions."""
    with db.transaction(session_factory) as s:
        # the first superadmin cannot be made through the API: bootstrap it
        acme = Domain(name="acme")
        s.add_all([acme, Domain(name="globex")])
        s.add(User(name="root", domain=acme, role=Role.superadmin))
    world = World(session_factory)
    root = world.principal("root")
    with world.tx() as s:
        for domain, projects in WORLD_PROJECTS.items():
            for project in projects:
                manager.create_project(s, root, domain, ProjectCreate(name=project))
        for name, (domain, role, projects) in WORLD_USERS.items():
            if name != "root":
                manager.create_user(s, root, UserCreate(name=name, domain=domain, role=role))
            for project in projects:
                manager.add_member(s, root, domain, project, name)
    return world


@pytest.fixture
def cluster(tenancy):
    """A scheduling driver over the tenancy world (see tests/ledger_world.py):
    no resource groups yet, and an unlimited "default" resource policy, the
    policy every user has."""
    from ledger_world import Cluster

    driver = Cluster(tenancy)
    driver.set_policy("default")
    return driver
