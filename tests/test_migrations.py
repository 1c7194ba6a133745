"""The Alembic migrations build exactly the schema models.py describes."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from quota_service.core import db
from quota_service.core.models import Base

TABLES = {
    "domains", "projects", "users", "memberships", "keypairs", "audit_log",
    "resource_policies", "resource_groups", "resource_group_grants", "nodes", "devices",
    "allocations", "images", "vfolders", "vfolder_invitations", "vfolder_shares",
    "reclaim_events",
    "usage_intervals", "ledger_counters", "endpoints", "endpoint_tokens",
    "store_models", "store_deployments", "chats", "chat_messages",
}


@pytest.fixture
def bare_engine(empty_db_url):
    """An engine on the empty database, not migrated."""
    e = db.make_engine(empty_db_url)
    yield e
    e.dispose()


def tables(engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def enums(engine) -> set[str]:
    if engine.dialect.name != "postgresql":
        return set()
    return {e["name"] for e in sa.inspect(engine).get_enums()}


def schema_diff(engine) -> list:
    with engine.connect() as c:
        ctx = MigrationContext.configure(c, opts={"compare_type": True})
        return compare_metadata(ctx, Base.metadata)


def current_revision(engine) -> str | None:
    with engine.connect() as c:
        return MigrationContext.configure(c).get_current_revision()


def test_the_migrations_form_one_line_with_a_single_head():
    script = ScriptDirectory.from_config(db.alembic_config())
    assert len(script.get_heads()) == 1
    revisions = list(script.walk_revisions())
    assert revisions[-1].down_revision is None
    assert len(script.get_bases()) == 1


def test_upgrade_from_empty_builds_the_schema_of_the_models(bare_engine):
    assert tables(bare_engine) == set()
    db.upgrade(bare_engine)
    assert tables(bare_engine) == TABLES | {"alembic_version"}
    assert TABLES == set(Base.metadata.tables)
    assert current_revision(bare_engine) == ScriptDirectory.from_config(
        db.alembic_config()).get_current_head()
    assert schema_diff(bare_engine) == []


def test_upgrade_twice_changes_nothing(bare_engine):
    db.upgrade(bare_engine)
    db.upgrade(bare_engine)
    assert schema_diff(bare_engine) == []


def test_downgrade_to_base_leaves_no_tables_and_upgrade_works_again(bare_engine):
    db.upgrade(bare_engine)
    db.downgrade(bare_engine, "base")
    # alembic keeps its (now empty) version table; nothing of ours remains
    assert tables(bare_engine) <= {"alembic_version"}
    assert enums(bare_engine) == set()
    assert current_revision(bare_engine) is None
    db.upgrade(bare_engine)
    assert tables(bare_engine) == TABLES | {"alembic_version"}
    assert schema_diff(bare_engine) == []


def test_the_migrated_schema_enforces_the_models_constraints(engine):
    """Uniqueness, foreign keys and the role type hold in the database itself."""
    with engine.connect() as c:
        c.execute(sa.text(
            "INSERT INTO domains (id, name, description, active, total_resource_slots, "
            "allowed_vfolder_hosts, allowed_images, allow_first_login, created_at) "
            "VALUES (1, 'acme', '', true, '{}', '[]', '[]', false, CURRENT_TIMESTAMP)"
        ))
        c.commit()
        for bad in (
            # a second domain of the same name
            "INSERT INTO domains (id, name, description, active, total_resource_slots, "
            "allowed_vfolder_hosts, allowed_images, allow_first_login, created_at) "
            "VALUES (2, 'acme', '', true, '{}', '[]', '[]', false, CURRENT_TIMESTAMP)",
            # a user of a domain that does not exist
            "INSERT INTO users (id, name, domain_id, role, active, created_at) "
            "VALUES (1, 'alice', 99, 'user', true, CURRENT_TIMESTAMP)",
        ):
            with pytest.raises(sa.exc.IntegrityError):
                c.execute(sa.text(bad))
            c.rollback()
        if engine.dialect.name == "postgresql":
            with pytest.raises(sa.exc.DataError):
                c.execute(sa.text(
                    "INSERT INTO users (id, name, domain_id, role, active, created_at) "
                    "VALUES (1, 'alice', 1, 'root', true, CURRENT_TIMESTAMP)"
                ))
            c.rollback()


def test_0003_keeps_the_sessions_of_0002_and_dates_the_end_of_released_ones(bare_engine):
    """Allocations made before the image registry survive the upgrade: no
    image, the default server, and a released one ended when it was released."""
    db.upgrade(bare_engine, "0002")
    released_at = "2030-01-02 03:04:05"
    with bare_engine.begin() as c:
        for sql in (
            "INSERT INTO domains (id, name, description, active, total_resource_slots, "
            "allowed_vfolder_hosts, allowed_images, allow_first_login, created_at) "
            "VALUES (1, 'acme', '', true, '{}', '[]', '[]', false, CURRENT_TIMESTAMP)",
            "INSERT INTO projects (id, domain_id, name, description, active, total_resource_slots,"
            " created_at) VALUES (1, 1, 'ml', '', true, '{}', CURRENT_TIMESTAMP)",
            "INSERT INTO users (id, name, domain_id, role, active, resource_policy, created_at) "
            "VALUES (1, 'alice', 1, 'user', true, 'default', CURRENT_TIMESTAMP)",
            "INSERT INTO resource_groups (id, name, description, active, session_types, "
            "queue_order, hol_passes, created_at) "
            "VALUES (1, 'gpu', '', true, '[]', 'fifo', 3, CURRENT_TIMESTAMP)",
        ):
            c.execute(sa.text(sql))
        for alloc_id, state, released in (("a-released", "released", released_at),
                                          ("a-cancelled", "cancelled", released_at),
                                          ("a-running", "allocated", None)):
            c.execute(sa.text(
                "INSERT INTO allocations (id, user_id, project_id, domain_id, resource_group_id, "
                "session_type, slots, gpus, gpu_models, state, priority, passes, reasons, "
                "created_at, released_at, release_reason, origin) VALUES (:id, 1, 1, 1, 1, "
                "'interactive', '{}', '[]', '[]', :state, 0, 0, '[]', CURRENT_TIMESTAMP, "
                ":released, '', 'hub')"), {"id": alloc_id, "state": state, "released": released})
    db.upgrade(bare_engine)
    with bare_engine.connect() as c:
        rows = {r.id: r for r in c.execute(sa.text(
            "SELECT id, image, server_name, command, exit_code, ended_at, released_at, "
            "log_purged_at FROM allocations"))}
    assert {r.server_name for r in rows.values()} == {""}
    assert {(r.image, r.command, r.exit_code, r.log_purged_at) for r in rows.values()} == {
        (None, None, None, None)}
    assert rows["a-released"].ended_at == rows["a-released"].released_at is not None
    assert rows["a-cancelled"].ended_at is None and rows["a-running"].ended_at is None


def test_0004_gives_existing_rows_empty_host_lists_and_no_mounts(bare_engine):
    """Projects, policies and allocations of 0003 survive: no allowed vfolder
    hosts of their own (they add nothing to the union) and nothing mounted."""
    db.upgrade(bare_engine, "0003")
    with bare_engine.begin() as c:
        for sql in (
            "INSERT INTO domains (id, name, description, active, total_resource_slots, "
            "allowed_vfolder_hosts, allowed_images, allow_first_login, created_at) "
            "VALUES (1, 'acme', '', true, '{}', '[\"local\"]', '[]', false, CURRENT_TIMESTAMP)",
            "INSERT INTO projects (id, domain_id, name, description, active, total_resource_slots,"
            " created_at) VALUES (1, 1, 'ml', '', true, '{}', CURRENT_TIMESTAMP)",
            "INSERT INTO users (id, name, domain_id, role, active, resource_policy, created_at) "
            "VALUES (1, 'alice', 1, 'user', true, 'default', CURRENT_TIMESTAMP)",
            "INSERT INTO resource_policies (id, name, total_resource_slots, unspecified_limited, "
            "max_pending_resource_slots, allowed_resource_groups, created_at) "
            "VALUES (1, 'default', '{}', false, '{}', '[]', CURRENT_TIMESTAMP)",
            "INSERT INTO resource_groups (id, name, description, active, session_types, "
            "queue_order, hol_passes, created_at) "
            "VALUES (1, 'gpu', '', true, '[]', 'fifo', 3, CURRENT_TIMESTAMP)",
            "INSERT INTO allocations (id, user_id, project_id, domain_id, resource_group_id, "
            "session_type, slots, gpus, gpu_models, state, priority, passes, reasons, "
            "created_at, release_reason, origin, server_name) VALUES ('a1', 1, 1, 1, 1, "
            "'interactive', '{}', '[]', '[]', 'allocated', 0, 0, '[]', CURRENT_TIMESTAMP, '', "
            "'hub', '')",
        ):
            c.execute(sa.text(sql))
    db.upgrade(bare_engine)
    from sqlalchemy.orm import Session

    from quota_service.core.models import Allocation, Domain, Project, ResourcePolicy

    with Session(bare_engine) as s:
        assert s.get(Project, 1).allowed_vfolder_hosts == []
        assert s.get(ResourcePolicy, 1).allowed_vfolder_hosts == []
        assert s.get(Allocation, "a1").mounts == []
        assert s.get(Domain, 1).allowed_vfolder_hosts == ["local"]


def test_a_vfolder_has_exactly_one_owner_in_the_database(engine):
    with engine.connect() as c:
        c.execute(sa.text(
            "INSERT INTO domains (id, name, description, active, total_resource_slots, "
            "allowed_vfolder_hosts, allowed_images, allow_first_login, created_at) "
            "VALUES (1, 'acme', '', true, '{}', '[]', '[]', false, CURRENT_TIMESTAMP)"))
        c.execute(sa.text(
            "INSERT INTO projects (id, domain_id, name, description, active, total_resource_slots,"
            " allowed_vfolder_hosts, created_at) VALUES (1, 1, 'ml', '', true, '{}', '[]', "
            "CURRENT_TIMESTAMP)"))
        c.execute(sa.text(
            "INSERT INTO users (id, name, domain_id, role, active, resource_policy, created_at) "
            "VALUES (1, 'alice', 1, 'user', true, 'default', CURRENT_TIMESTAMP)"))
        c.commit()
        insert = ("INSERT INTO vfolders (id, name, host, owner_user_id, owner_project_id, "
                  "usage_mode, status, created_at, usage_bytes) VALUES (:id, :name, 'local', "
                  ":u, :p, 'general', 'active', CURRENT_TIMESTAMP, 0)")
        c.execute(sa.text(insert), {"id": "a" * 32, "name": "x", "u": 1, "p": None})
        c.execute(sa.text(insert), {"id": "b" * 32, "name": "x", "u": None, "p": 1})
        c.commit()
        for bad in ({"id": "c" * 32, "name": "y", "u": 1, "p": 1},
                    {"id": "c" * 32, "name": "y", "u": None, "p": None},
                    {"id": "c" * 32, "name": "x", "u": 1, "p": None},
                    {"id": "c" * 32, "name": "x", "u": None, "p": 1}):
            with pytest.raises(sa.exc.IntegrityError):
                c.execute(sa.text(insert), bad)
            c.rollback()


def test_0005_files_old_audit_entries_under_the_domain_they_are_about(bare_engine):
    """Entries of 0004 without a domain get their actor's, as new ones do:
    never a superadmin's (they act anywhere) nor a 404's (maybe another
    domain's hidden thing); entries that named their domain keep it."""
    db.upgrade(bare_engine, "0004")
    with bare_engine.begin() as c:
        c.execute(sa.text(
            "INSERT INTO domains (id, name, description, active, total_resource_slots, "
            "allowed_vfolder_hosts, allowed_images, allow_first_login, created_at) "
            "VALUES (1, 'default', '', true, '{}', '[]', '[]', false, CURRENT_TIMESTAMP)"))
        for uid, name, role in ((1, "admin", "superadmin"), (2, "ada", "domain-admin"),
                                (3, "alice", "user")):
            c.execute(sa.text(
                "INSERT INTO users (id, name, domain_id, role, active, resource_policy, "
                "created_at) VALUES (:id, :name, 1, :role, true, 'default', CURRENT_TIMESTAMP)"),
                {"id": uid, "name": name, "role": role})
        rows = [  # (id, actor, actor_domain, domain, status)
            (1, "admin", "default", "acme", 201),     # a superadmin in acme: stays acme's
            (2, "admin", "default", None, 422),       # a superadmin, no target: theirs only
            (3, "ada", "default", None, 422),         # a domain admin at home
            (4, "ada", "default", None, 404),         # a 404: maybe another domain's
            (5, "alice", "default", None, 201),       # a user at home
            (6, None, None, None, 401),               # nobody
            (7, "gone", "default", None, 204),        # an actor since deleted
        ]
        for id_, actor, actor_domain, domain, status in rows:
            c.execute(sa.text(
                "INSERT INTO audit_log (id, timestamp, actor, actor_domain, domain, credential, "
                "action, target, outcome, status, detail) VALUES (:id, CURRENT_TIMESTAMP, "
                ":actor, :ad, :d, 'token', 'x.create', '', 'success', :status, '')"),
                {"id": id_, "actor": actor, "ad": actor_domain, "d": domain, "status": status})
    db.upgrade(bare_engine)
    with bare_engine.connect() as c:
        got = dict(c.execute(sa.text("SELECT id, domain FROM audit_log")).all())
    assert got == {1: "acme", 2: None, 3: "default", 4: None, 5: "default", 6: None,
                   7: "default"}


def test_0017_gives_inference_to_the_groups_that_ran_every_type_and_only_to_them(bare_engine):
    """A group made with the default (then interactive and batch: every
    type) runs inference too, as a group made now does; a group an admin
    narrowed keeps what it has; downgrading takes inference away again."""
    db.upgrade(bare_engine, "0016")
    before = {1: ["interactive", "batch"], 2: ["batch"], 3: ["interactive"], 4: [],
              5: ["batch", "interactive"]}
    grp = sa.table("resource_groups", sa.column("id", sa.Integer),
                   sa.column("session_types", sa.JSON))
    with bare_engine.begin() as c:
        for id_, types in before.items():
            c.execute(sa.text(
                "INSERT INTO resource_groups (id, name, description, active, session_types, "
                "queue_order, hol_passes, created_at) VALUES (:id, :name, '', true, '[]', "
                "'fifo', 3, CURRENT_TIMESTAMP)"), {"id": id_, "name": f"g{id_}"})
            c.execute(grp.update().where(grp.c.id == id_).values(session_types=types))

    def types_now() -> dict:
        with bare_engine.connect() as c:
            return dict(c.execute(sa.select(grp.c.id, grp.c.session_types)).all())

    db.upgrade(bare_engine)
    assert types_now() == {1: ["interactive", "batch", "inference"], 2: ["batch"],
                           3: ["interactive"], 4: [],
                           5: ["batch", "interactive", "inference"]}
    db.downgrade(bare_engine, "0016")
    assert types_now() == before
