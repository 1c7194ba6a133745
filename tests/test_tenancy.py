"""The tenancy manager without HTTP, on SQLite and on PostgreSQL.

Each test starts from the ``tenancy`` world of conftest.py: domains acme and
globex; projects acme/ml, acme/web, globex/lab; root (superadmin), ada and gus
(domain admins of acme and globex), alice (acme/ml), bob (no project), gina
(globex/lab).
"""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
import sqlalchemy as sa

from quota_service.tenancy import accounts as manager
from quota_service.tenancy import keyauth
from quota_service.core.errors import Conflict, Denied, Hidden, Invalid, NotFound, Unauthenticated
from quota_service.core.models import (
    Domain,
    Keypair,
    Membership,
    Project,
    ResourcePolicy,
    Role,
    User,
)
from quota_service.core.schemas import (
    DomainCreate,
    DomainUpdate,
    KeypairCreate,
    KeypairUpdate,
    ProjectCreate,
    ProjectUpdate,
    UserCreate,
    UserUpdate,
)

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
HOUR = dt.timedelta(hours=1)


def row_counts(world) -> dict:
    return {m.__name__: world.count(m) for m in (Domain, Project, User, Membership, Keypair)}


def refused(world, error, fn, *args):
    """Run ``fn(session, *args)`` in a transaction; it must raise ``error``
    and leave every table as it was."""
    before = row_counts(world)
    with pytest.raises(error) as e:
        with world.tx() as s:
            fn(s, *args)
    assert type(e.value) is error, e.value
    assert row_counts(world) == before
    return e.value


def memberships_of(world, user: str) -> list[str]:
    with world.session_factory() as s:
        return sorted(
            f"{m.project.domain.name}/{m.project.name}"
            for m in s.scalars(sa.select(Membership).join(User).where(User.name == user))
        )


# --- the world itself ---------------------------------------------------------

def test_the_world_is_as_described(tenancy):
    assert row_counts(tenancy) == {
        "Domain": 2, "Project": 3, "User": 6, "Membership": 2, "Keypair": 0,
    }
    alice = tenancy.principal("alice")
    assert (alice.role, alice.domain, alice.projects) == (
        Role.user, "acme", frozenset({("acme", "ml")})
    )
    assert tenancy.principal("root").is_superadmin
    assert tenancy.principal("gus").administers("globex")


# --- domains ------------------------------------------------------------------

def test_superadmin_creates_updates_and_deletes_a_domain(tenancy):
    root = tenancy.principal("root")
    with tenancy.tx() as s:
        model = manager.create_domain(
            s, root, DomainCreate(name="initech", total_resource_slots={"gpu": "4"})
        )
    assert model["name"] == "initech" and model["total_resource_slots"] == {"gpu": "4"}
    assert model["active"] is True and model["allow_first_login"] is False
    with tenancy.tx() as s:
        model = manager.update_domain(
            s, root, "initech", DomainUpdate(description="paper", active=False)
        )
    assert (model["description"], model["active"], model["total_resource_slots"]) == (
        "paper", False, {"gpu": "4"}
    )
    with tenancy.tx() as s:
        assert manager.get_domain(s, root, "initech")["description"] == "paper"
        manager.delete_domain(s, root, "initech")
    assert tenancy.count(Domain, Domain.name == "initech") == 0


def test_duplicate_domain_is_a_conflict_and_writes_nothing(tenancy):
    root = tenancy.principal("root")
    err = refused(tenancy, Conflict, manager.create_domain, root, DomainCreate(name="acme"))
    assert "already exists" in err.message


def test_a_domain_created_in_a_race_is_still_a_conflict(tenancy, monkeypatch):
    # the existence check misses a domain created meanwhile: the unique
    # constraint catches it and the answer is still a 409
    monkeypatch.setattr(manager, "_domain", lambda s, name: None)
    refused(tenancy, Conflict, manager.create_domain, tenancy.principal("root"),
            DomainCreate(name="acme"))


@pytest.mark.parametrize("caller, error", [("ada", Denied), ("alice", Denied), ("gus", Hidden)])
def test_only_a_superadmin_changes_a_domain(tenancy, caller, error):
    p = tenancy.principal(caller)
    refused(tenancy, error, manager.update_domain, p, "acme", DomainUpdate(description="x"))
    refused(tenancy, error, manager.delete_domain, p, "acme")


@pytest.mark.parametrize("caller", ["ada", "alice", "gus", "gina"])
def test_nobody_but_a_superadmin_creates_domains(tenancy, caller):
    refused(tenancy, Denied, manager.create_domain, tenancy.principal(caller),
            DomainCreate(name="initech"))


def test_deleting_a_domain_that_still_has_users_is_a_conflict(tenancy):
    err = refused(tenancy, Conflict, manager.delete_domain, tenancy.principal("root"), "globex")
    assert "2 user(s)" in err.message


def test_deleting_an_empty_domain_deletes_its_projects(tenancy):
    root = tenancy.principal("root")
    with tenancy.tx() as s:
        manager.create_domain(s, root, DomainCreate(name="initech"))
        manager.create_project(s, root, "initech", ProjectCreate(name="tps"))
        manager.create_project(s, root, "initech", ProjectCreate(name="reports"))
    assert tenancy.count(Project) == 5
    with tenancy.tx() as s:
        manager.delete_domain(s, root, "initech")
    assert tenancy.count(Project) == 3
    assert tenancy.count(Domain) == 2


def test_unknown_domain_is_not_found(tenancy):
    refused(tenancy, NotFound, manager.get_domain, tenancy.principal("root"), "initech")


@pytest.mark.parametrize(
    "caller, visible",
    [("root", ["acme", "globex"]), ("ada", ["acme"]), ("bob", ["acme"]), ("gina", ["globex"])],
)
def test_callers_list_only_the_domains_they_may_see(tenancy, caller, visible):
    with tenancy.tx() as s:
        assert [d["name"] for d in manager.list_domains(s, tenancy.principal(caller))] == visible


# --- projects -----------------------------------------------------------------

def test_domain_admin_creates_updates_and_deletes_a_project(tenancy):
    ada = tenancy.principal("ada")
    with tenancy.tx() as s:
        model = manager.create_project(s, ada, "acme", ProjectCreate(name="vision"))
    assert (model["domain"], model["name"], model["hub_group"]) == ("acme", "vision", "acme.vision")
    with tenancy.tx() as s:
        model = manager.update_project(
            s, ada, "acme", "vision", ProjectUpdate(total_resource_slots={"gpu.shares": "1.50"})
        )
    assert model["total_resource_slots"] == {"gpu.shares": "1.5"}
    with tenancy.tx() as s:
        manager.delete_project(s, ada, "acme", "vision")
    assert tenancy.count(Project, Project.name == "vision") == 0


def test_duplicate_project_in_one_domain_is_a_conflict(tenancy):
    refused(tenancy, Conflict, manager.create_project, tenancy.principal("ada"), "acme",
            ProjectCreate(name="ml"))


def test_a_project_created_in_a_race_is_still_a_conflict(tenancy, monkeypatch):
    monkeypatch.setattr(manager, "_project", lambda s, domain, name: None)
    refused(tenancy, Conflict, manager.create_project, tenancy.principal("ada"), "acme",
            ProjectCreate(name="ml"))


def test_the_same_project_name_may_exist_in_two_domains(tenancy):
    with tenancy.tx() as s:
        manager.create_project(s, tenancy.principal("gus"), "globex", ProjectCreate(name="ml"))
    assert tenancy.count(Project, Project.name == "ml") == 2


@pytest.mark.parametrize("caller, error", [("gus", Hidden), ("gina", Hidden), ("alice", Denied),
                                           ("bob", Denied)])
def test_only_admins_of_the_domain_create_projects(tenancy, caller, error):
    refused(tenancy, error, manager.create_project, tenancy.principal(caller), "acme",
            ProjectCreate(name="vision"))


@pytest.mark.parametrize("caller, error", [("gus", Hidden), ("bob", Hidden), ("alice", Denied)])
def test_a_project_is_changed_only_by_admins_of_its_domain(tenancy, caller, error):
    p = tenancy.principal(caller)
    refused(tenancy, error, manager.update_project, p, "acme", "ml", ProjectUpdate(active=False))
    refused(tenancy, error, manager.delete_project, p, "acme", "ml")


def test_deleting_a_project_removes_its_memberships(tenancy):
    ada = tenancy.principal("ada")
    with tenancy.tx() as s:
        manager.add_member(s, ada, "acme", "ml", "bob")
    assert tenancy.count(Membership) == 3
    with tenancy.tx() as s:
        manager.delete_project(s, ada, "acme", "ml")
    assert memberships_of(tenancy, "alice") == []
    assert memberships_of(tenancy, "bob") == []
    assert tenancy.count(Membership) == 1  # gina's, in globex
    assert tenancy.principal("alice").projects == frozenset()


@pytest.mark.parametrize(
    "caller, visible",
    [
        ("root", ["acme/ml", "acme/web", "globex/lab"]),
        ("ada", ["acme/ml", "acme/web"]),
        ("alice", ["acme/ml"]),
        ("bob", []),
        ("gina", ["globex/lab"]),
    ],
)
def test_callers_list_only_the_projects_they_may_see(tenancy, caller, visible):
    with tenancy.tx() as s:
        projects = manager.list_projects(s, tenancy.principal(caller))
    assert [f"{p['domain']}/{p['name']}" for p in projects] == visible


# --- memberships --------------------------------------------------------------

def test_adding_a_member_is_idempotent(tenancy):
    ada = tenancy.principal("ada")
    with tenancy.tx() as s:
        assert manager.add_member(s, ada, "acme", "web", "bob") is True
    with tenancy.tx() as s:
        assert manager.add_member(s, ada, "acme", "web", "bob") is False
    assert memberships_of(tenancy, "bob") == ["acme/web"]
    with tenancy.tx() as s:
        members = manager.list_members(s, ada, "acme", "web")
    assert members == [{"user": "bob", "role": "user", "active": True}]


def test_adding_a_user_to_a_project_of_another_domain_is_a_conflict(tenancy):
    err = refused(tenancy, Conflict, manager.add_member, tenancy.principal("root"),
                  "acme", "ml", "gina")
    assert "globex" in err.message


def test_a_domain_admin_cannot_even_see_users_of_another_domain(tenancy):
    refused(tenancy, Hidden, manager.add_member, tenancy.principal("ada"), "acme", "ml", "gina")


@pytest.mark.parametrize("caller, error", [("alice", Denied), ("bob", Hidden), ("gus", Hidden)])
def test_only_admins_of_the_domain_change_members(tenancy, caller, error):
    p = tenancy.principal(caller)
    refused(tenancy, error, manager.add_member, p, "acme", "ml", "bob")
    refused(tenancy, error, manager.remove_member, p, "acme", "ml", "alice")


def test_removing_a_member(tenancy):
    with tenancy.tx() as s:
        manager.remove_member(s, tenancy.principal("ada"), "acme", "ml", "alice")
    assert memberships_of(tenancy, "alice") == []
    refused(tenancy, NotFound, manager.remove_member, tenancy.principal("ada"),
            "acme", "ml", "alice")


def test_adding_an_unknown_user_is_not_found(tenancy):
    refused(tenancy, NotFound, manager.add_member, tenancy.principal("ada"), "acme", "ml", "zed")


# --- users --------------------------------------------------------------------

def test_domain_admin_creates_a_user_in_their_domain(tenancy):
    with tenancy.tx() as s:
        model = manager.create_user(
            s, tenancy.principal("ada"), UserCreate(name="carol@acme.org", domain="acme")
        )
    assert model == {**model, "name": "carol@acme.org", "domain": "acme", "role": "user",
                     "active": True, "projects": []}


def test_duplicate_user_is_a_conflict_even_in_another_domain(tenancy):
    refused(tenancy, Conflict, manager.create_user, tenancy.principal("root"),
            UserCreate(name="alice", domain="globex"))


def test_a_user_created_in_a_race_is_still_a_conflict(tenancy, monkeypatch):
    monkeypatch.setattr(manager, "user_named", lambda s, name: None)
    refused(tenancy, Conflict, manager.create_user, tenancy.principal("root"),
            UserCreate(name="alice", domain="acme"))


def test_a_user_in_an_unknown_domain_is_not_found(tenancy):
    refused(tenancy, NotFound, manager.create_user, tenancy.principal("root"),
            UserCreate(name="carol", domain="initech"))


def test_domain_admin_cannot_create_a_superadmin(tenancy):
    refused(tenancy, Denied, manager.create_user, tenancy.principal("ada"),
            UserCreate(name="carol", domain="acme", role=Role.superadmin))


def test_domain_admin_cannot_create_users_in_another_domain(tenancy):
    refused(tenancy, Hidden, manager.create_user, tenancy.principal("ada"),
            UserCreate(name="carol", domain="globex"))


def test_users_cannot_create_users(tenancy):
    refused(tenancy, Denied, manager.create_user, tenancy.principal("alice"),
            UserCreate(name="carol", domain="acme"))


def test_moving_a_user_to_another_domain_drops_their_memberships(tenancy):
    with tenancy.tx() as s:
        model = manager.update_user(s, tenancy.principal("root"), "alice",
                                    UserUpdate(domain="globex"))
    assert (model["domain"], model["projects"]) == ("globex", [])
    assert memberships_of(tenancy, "alice") == []
    alice = tenancy.principal("alice")
    assert (alice.domain, alice.projects) == ("globex", frozenset())


def test_domain_admin_cannot_move_a_user_across_domains(tenancy):
    refused(tenancy, Denied, manager.update_user, tenancy.principal("ada"), "alice",
            UserUpdate(domain="globex"))
    assert memberships_of(tenancy, "alice") == ["acme/ml"]


def test_domain_admin_cannot_change_a_superadmin(tenancy):
    ada = tenancy.principal("ada")
    refused(tenancy, Denied, manager.update_user, ada, "root", UserUpdate(active=False))
    refused(tenancy, Denied, manager.update_user, ada, "root", UserUpdate(role=Role.user))
    refused(tenancy, Denied, manager.delete_user, ada, "root")


def test_domain_admin_cannot_promote_to_superadmin(tenancy):
    refused(tenancy, Denied, manager.update_user, tenancy.principal("ada"), "bob",
            UserUpdate(role=Role.superadmin))
    assert tenancy.user("bob").role is Role.user


def test_domain_admin_changes_role_and_activity_of_their_users(tenancy):
    with tenancy.tx() as s:
        model = manager.update_user(s, tenancy.principal("ada"), "bob",
                                    UserUpdate(role=Role.domain_admin, active=False))
    assert (model["role"], model["active"]) == ("domain-admin", False)


def test_deleting_a_user_deletes_their_memberships_and_keypairs(tenancy):
    with tenancy.tx() as s:
        manager.create_keypair(s, tenancy.principal("alice"), KeypairCreate(), NOW)
    with tenancy.tx() as s:
        assert manager.delete_user(s, tenancy.principal("ada"), "alice") == "acme"
    assert tenancy.user("alice") is None
    assert tenancy.count(Keypair) == 0
    assert tenancy.count(Membership) == 1


def test_nobody_deletes_themselves(tenancy):
    refused(tenancy, Denied, manager.delete_user, tenancy.principal("root"), "root")


@pytest.mark.parametrize(
    "caller, domain, visible",
    [
        ("root", None, ["ada", "alice", "bob", "gina", "gus", "root"]),
        ("root", "globex", ["gina", "gus"]),
        ("ada", None, ["ada", "alice", "bob", "root"]),
        ("ada", "acme", ["ada", "alice", "bob", "root"]),
        ("gus", None, ["gina", "gus"]),
    ],
)
def test_admins_list_the_users_of_their_scope(tenancy, caller, domain, visible):
    with tenancy.tx() as s:
        users = manager.list_users(s, tenancy.principal(caller), domain)
    assert [u["name"] for u in users] == visible


def test_domain_admin_listing_another_domain_gets_not_found(tenancy):
    refused(tenancy, Hidden, manager.list_users, tenancy.principal("ada"), "globex")


@pytest.mark.parametrize("caller", ["alice", "bob", "gina"])
def test_users_cannot_list_users(tenancy, caller):
    refused(tenancy, Denied, manager.list_users, tenancy.principal(caller))


@pytest.mark.parametrize("caller", ["bob", "gus", "gina"])
def test_users_of_others_are_hidden(tenancy, caller):
    refused(tenancy, Hidden, manager.get_user, tenancy.principal(caller), "alice")


def test_me_shows_the_callers_projects_and_domain(tenancy):
    with tenancy.tx() as s:
        me = manager.me(s, tenancy.principal("alice", "keypair"))
    assert me["credential"] == "keypair"
    assert [p["hub_group"] for p in me["projects"]] == ["acme.ml"]
    assert me["domain_detail"]["name"] == "acme"


# --- principals ---------------------------------------------------------------

def test_an_inactive_user_gets_no_principal(tenancy):
    with tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("ada"), "bob", UserUpdate(active=False))
    with pytest.raises(Denied, match="inactive"):
        tenancy.principal("bob")


def test_users_of_an_inactive_domain_get_no_principal(tenancy):
    with tenancy.tx() as s:
        manager.update_domain(s, tenancy.principal("root"), "globex", DomainUpdate(active=False))
    for name in ("gus", "gina"):
        with pytest.raises(Denied, match="domain 'globex' is inactive"):
            tenancy.principal(name)
    tenancy.principal("alice")  # other domains go on


def test_an_unregistered_hub_user_is_denied_with_advice(tenancy):
    with pytest.raises(Denied, match="not registered"), tenancy.tx() as s:
        manager.principal_for_hub_user(s, "zed")


# --- keypairs -----------------------------------------------------------------

def new_keypair(world, caller="alice", **body) -> dict:
    with world.tx() as s:
        return manager.create_keypair(s, world.principal(caller), KeypairCreate(**body), NOW)


def keypair_auth(world, access_key, secret, now=NOW):
    with world.tx() as s:
        return keyauth.principal_for_keypair(s, access_key, secret, now)


def test_keypair_secret_is_shown_once_and_only_its_hash_is_stored(tenancy):
    kp = new_keypair(tenancy)
    secret = kp["secret_key"]
    assert len(secret) >= 40 and kp["access_key"].startswith("HG")
    with tenancy.session_factory() as s:
        row = s.execute(sa.select(Keypair.__table__)).mappings().one()
    assert row["secret_hash"] == hashlib.sha256(secret.encode()).hexdigest()
    assert all(secret not in str(value) for value in row.values())
    with tenancy.tx() as s:
        listed = manager.list_keypairs(s, tenancy.principal("alice"))
        shown = manager.get_keypair(s, tenancy.principal("alice"), kp["access_key"])
    assert "secret_key" not in listed[0] and "secret_key" not in shown
    assert shown == {**shown, "user": "alice", "domain": "acme", "resource_policy": "default"}


def test_keypair_authenticates_its_owner_and_records_its_use(tenancy):
    kp = new_keypair(tenancy)
    p = keypair_auth(tenancy, kp["access_key"], kp["secret_key"], NOW + HOUR)
    assert (p.name, p.credential, p.projects) == ("alice", "keypair", frozenset({("acme", "ml")}))
    with tenancy.tx() as s:
        shown = manager.get_keypair(s, tenancy.principal("alice"), kp["access_key"])
    assert dt.datetime.fromisoformat(shown["last_used_at"]) == NOW + HOUR


@pytest.mark.parametrize(
    "access_key, secret",
    [(None, "wrong"), (None, ""), ("HG000000000000000000", None), ("", None)],
    ids=["wrong secret", "empty secret", "unknown access key", "empty access key"],
)
def test_keypair_with_bad_credentials_is_unauthenticated(tenancy, access_key, secret):
    kp = new_keypair(tenancy)
    with pytest.raises(Unauthenticated, match="invalid keypair"):
        keypair_auth(tenancy, access_key if access_key is not None else kp["access_key"],
                     secret if secret is not None else kp["secret_key"])


def test_inactive_keypair_is_unauthenticated(tenancy):
    kp = new_keypair(tenancy)
    with tenancy.tx() as s:
        manager.update_keypair(s, tenancy.principal("alice"), kp["access_key"],
                               KeypairUpdate(active=False), NOW)
    with pytest.raises(Unauthenticated, match="inactive"):
        keypair_auth(tenancy, kp["access_key"], kp["secret_key"])


def test_expired_keypair_is_unauthenticated(tenancy):
    kp = new_keypair(tenancy, expires_at=NOW + HOUR)
    assert keypair_auth(tenancy, kp["access_key"], kp["secret_key"], NOW + HOUR / 2).name == "alice"
    for later in (NOW + HOUR, NOW + 2 * HOUR):
        with pytest.raises(Unauthenticated, match="expired"):
            keypair_auth(tenancy, kp["access_key"], kp["secret_key"], later)


def test_keypair_expiry_given_in_another_time_zone_means_the_same_instant(tenancy):
    plus5 = dt.timezone(dt.timedelta(hours=5))
    kp = new_keypair(tenancy, expires_at=(NOW + HOUR).astimezone(plus5))
    assert dt.datetime.fromisoformat(kp["expires_at"]) == NOW + HOUR
    assert keypair_auth(tenancy, kp["access_key"], kp["secret_key"], NOW + HOUR / 2).name == "alice"
    with pytest.raises(Unauthenticated, match="expired"):
        keypair_auth(tenancy, kp["access_key"], kp["secret_key"], NOW + 2 * HOUR)


def test_keypair_of_an_inactive_user_is_denied(tenancy):
    kp = new_keypair(tenancy)
    with tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("ada"), "alice", UserUpdate(active=False))
    with pytest.raises(Denied):
        keypair_auth(tenancy, kp["access_key"], kp["secret_key"])


def test_keypair_expiring_in_the_past_is_invalid(tenancy):
    refused(tenancy, Invalid, manager.create_keypair, tenancy.principal("alice"),
            KeypairCreate(expires_at=NOW - HOUR), NOW)


def test_users_cannot_set_their_own_resource_policy(tenancy):
    alice = tenancy.principal("alice")
    refused(tenancy, Denied, manager.create_keypair, alice,
            KeypairCreate(resource_policy="gold"), NOW)
    kp = new_keypair(tenancy)
    refused(tenancy, Denied, manager.update_keypair, alice, kp["access_key"],
            KeypairUpdate(resource_policy="gold"), NOW)


def test_domain_admin_makes_keypairs_for_their_users_with_a_policy(tenancy):
    with tenancy.tx() as s:
        s.add(ResourcePolicy(name="gold"))
    kp = new_keypair(tenancy, "ada", user="alice", resource_policy="gold")
    assert (kp["user"], kp["resource_policy"]) == ("alice", "gold")
    refused(tenancy, Invalid, manager.create_keypair, tenancy.principal("ada"),
            KeypairCreate(user="alice", resource_policy="nosuch"), NOW)


def test_a_domain_admin_never_holds_a_superadmins_keys(tenancy):
    """A keypair is a login: minting or reviving root's would make ada root."""
    ada = tenancy.principal("ada")
    refused(tenancy, Hidden, manager.create_keypair, ada, KeypairCreate(user="root"), NOW)
    refused(tenancy, Hidden, manager.list_keypairs, ada, "root")
    kp = new_keypair(tenancy, "root", user="root")
    refused(tenancy, Hidden, manager.get_keypair, ada, kp["access_key"])
    refused(tenancy, Hidden, manager.update_keypair, ada, kp["access_key"],
            KeypairUpdate(active=True), NOW)
    refused(tenancy, Hidden, manager.delete_keypair, ada, kp["access_key"])


@pytest.mark.parametrize("caller", ["bob", "gus", "gina"])
def test_keypairs_of_others_are_hidden(tenancy, caller):
    kp = new_keypair(tenancy)
    p = tenancy.principal(caller)
    refused(tenancy, Hidden, manager.create_keypair, p, KeypairCreate(user="alice"), NOW)
    refused(tenancy, Hidden, manager.get_keypair, p, kp["access_key"])
    refused(tenancy, Hidden, manager.update_keypair, p, kp["access_key"],
            KeypairUpdate(active=False), NOW)
    refused(tenancy, Hidden, manager.delete_keypair, p, kp["access_key"])
    refused(tenancy, Hidden, manager.list_keypairs, p, "alice")


def test_deleting_a_keypair(tenancy):
    kp = new_keypair(tenancy)
    with tenancy.tx() as s:
        assert manager.delete_keypair(s, tenancy.principal("alice"), kp["access_key"]) == "acme"
    assert tenancy.count(Keypair) == 0
    with pytest.raises(Unauthenticated):
        keypair_auth(tenancy, kp["access_key"], kp["secret_key"])


# --- login ----------------------------------------------------------------------

def allow_first_login(world, domain: str, allow: bool = True, active: bool = True) -> None:
    with world.tx() as s:
        manager.update_domain(s, world.principal("root"), domain,
                              DomainUpdate(allow_first_login=allow, active=active))


def test_first_login_creates_a_plain_user_in_the_default_domain(tenancy):
    allow_first_login(tenancy, "globex")
    with tenancy.tx() as s:
        u = manager.resolve_login(s, "newbie", "globex")
        assert (u.name, u.domain.name, u.role, u.active) == ("newbie", "globex", Role.user, True)
    assert tenancy.user("newbie").domain.name == "globex"


@pytest.mark.parametrize(
    "default_domain, allow, active",
    [("globex", False, True), ("globex", True, False), ("initech", True, True), (None, True, True)],
    ids=["first login not allowed", "default domain inactive", "default domain missing",
         "no default domain"],
)
def test_first_login_is_refused_unless_the_default_domain_allows_it(
    tenancy, default_domain, allow, active
):
    allow_first_login(tenancy, "globex", allow, active)
    err = refused(tenancy, Denied, manager.resolve_login, "newbie", default_domain)
    assert "not registered" in err.message


def test_login_of_a_known_user_keeps_their_domain(tenancy):
    allow_first_login(tenancy, "globex")
    with tenancy.tx() as s:
        assert manager.resolve_login(s, "alice", "globex").domain.name == "acme"


def test_login_of_an_inactive_user_is_refused_with_a_clear_message(tenancy):
    with tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("ada"), "bob", UserUpdate(active=False))
    err = refused(tenancy, Denied, manager.resolve_login, "bob", "acme")
    assert err.message == "user 'bob' is deactivated; ask an admin of your domain"


def test_login_into_an_inactive_domain_is_refused(tenancy):
    allow_first_login(tenancy, "globex", allow=False, active=False)
    err = refused(tenancy, Denied, manager.resolve_login, "gina", None)
    assert "domain 'globex' is deactivated" in err.message


@pytest.mark.parametrize("name", ["Alice", "a/b", "..", "al ice", "al\x00"])
def test_login_with_a_bad_name_is_refused_before_anything_is_read(tenancy, name):
    allow_first_login(tenancy, "acme")
    refused(tenancy, Denied, manager.resolve_login, name, "acme")


# --- identity for the hub -------------------------------------------------------

def identity(world, name):
    with world.tx() as s:
        return manager.identity_of(s, name)


def test_identity_of_a_domain_admin_lists_all_hub_groups_of_the_domain(tenancy):
    ada = identity(tenancy, "ada")
    assert ada["domain_hub_groups"] == ["acme", "acme.ml", "acme.web"]
    assert ada["hub_groups"] == ["acme"]
    assert (ada["role"], ada["admin"]) == ("domain-admin", False)
    assert identity(tenancy, "gus")["domain_hub_groups"] == ["globex", "globex.lab"]


def test_identity_of_a_user_lists_only_their_own_groups(tenancy):
    alice = identity(tenancy, "alice")
    assert alice["hub_groups"] == ["acme", "acme.ml"]
    assert alice["domain_hub_groups"] == []
    assert alice["projects"] == ["ml"]
    assert identity(tenancy, "root")["admin"] is True


def test_identity_of_unknown_or_inactive_users_is_denied(tenancy):
    with pytest.raises(Denied):
        identity(tenancy, "zed")
    with tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("ada"), "bob", UserUpdate(active=False))
    with pytest.raises(Denied):
        identity(tenancy, "bob")


def test_owner_may_restrict_but_not_relax_their_keypair(tenancy):
    kp = new_keypair(tenancy, expires_at=NOW + 2 * HOUR)
    alice, ada = tenancy.principal("alice"), tenancy.principal("ada")

    def update(who, **fields):
        with tenancy.tx() as s:
            return manager.update_keypair(s, who, kp["access_key"], KeypairUpdate(**fields), NOW)

    assert update(alice, expires_at=NOW + HOUR)["expires_at"].startswith((NOW + HOUR).isoformat()[:19])
    assert update(alice, active=False)["active"] is False
    for fields in ({"active": True}, {"expires_at": NOW + 3 * HOUR}, {"expires_at": None},
                   {"resource_policy": "gold"}):
        with pytest.raises(Denied):
            update(alice, **fields)
    assert update(ada, active=True, expires_at=None)["expires_at"] is None
    with pytest.raises(Invalid, match="future"):
        update(ada, expires_at=NOW - HOUR)


def test_a_superadmin_cannot_deactivate_their_own_domain(tenancy):
    refused(tenancy, Denied, manager.update_domain, tenancy.principal("root"), "acme",
            DomainUpdate(active=False))
    with tenancy.tx() as s:
        assert manager.update_domain(s, tenancy.principal("root"), "globex",
                                     DomainUpdate(active=False))["active"] is False
