"""There is always an active superadmin: no change takes the last one away,
two racing demotions do not both pass, and a start repairs a database where
none is left.

The world (tests/conftest.py): root is acme's and the only superadmin.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.tenancy import superadmins
from quota_service.tenancy import accounts as manager
from quota_service.core.errors import Conflict
from quota_service.core.models import Domain, Role, User
from quota_service.core.schemas import DomainUpdate, UserCreate, UserUpdate
from service_app import served  # noqa: F401

BARRIER_TIMEOUT = 60  # only so that a broken test fails instead of hanging


def add_superadmin(world, name="sam", domain="globex"):
    with world.tx() as s:
        manager.create_user(s, world.principal("root"),
                            UserCreate(name=name, domain=domain, role=Role.superadmin))


def active(world) -> int:
    with world.session_factory() as s:
        return superadmins.active_count(s)


@pytest.mark.parametrize("change, words", [
    ({"role": Role.user}, "making superadmin 'root' a user"),
    ({"role": Role.domain_admin}, "making superadmin 'root' a domain-admin"),
    ({"active": False}, "deactivating superadmin 'root'"),
])
def test_the_last_superadmin_cannot_demote_or_deactivate_themself(tenancy, change, words):
    with pytest.raises(Conflict) as e, tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("root"), "root", UserUpdate(**change))
    assert e.value.status == 409
    assert words in e.value.message and "would leave no active superadmin" in e.value.message
    assert "make another user superadmin first" in e.value.message
    assert tenancy.user("root").role is Role.superadmin and tenancy.user("root").active


def test_the_last_superadmin_cannot_move_into_an_inactive_domain(tenancy):
    root = tenancy.principal("root")
    with tenancy.tx() as s:
        manager.update_domain(s, root, "globex", DomainUpdate(active=False))
    with pytest.raises(Conflict, match="moving superadmin 'root' to domain 'globex'"), \
            tenancy.tx() as s:
        manager.update_user(s, root, "root", UserUpdate(domain="globex"))
    assert tenancy.user("root").domain.name == "acme"


def test_with_another_superadmin_the_change_is_allowed_once(tenancy):
    add_superadmin(tenancy)
    with tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("root"), "root", UserUpdate(role=Role.user))
    assert active(tenancy) == 1
    with pytest.raises(Conflict), tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("sam"), "sam", UserUpdate(active=False))
    assert active(tenancy) == 1


def test_a_superadmin_of_an_inactive_domain_does_not_count(tenancy):
    add_superadmin(tenancy)
    with tenancy.tx() as s:
        manager.update_domain(s, tenancy.principal("root"), "globex", DomainUpdate(active=False))
    assert active(tenancy) == 1  # sam's domain is inactive: sam could not act
    with pytest.raises(Conflict, match="no active superadmin"), tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("root"), "root", UserUpdate(active=False))


def test_deactivating_a_domain_is_refused_if_it_holds_every_active_superadmin(tenancy):
    """Only reachable with a principal that is no longer an active
    superadmin itself (e.g. a request in flight when root was deactivated)."""
    add_superadmin(tenancy)
    stale_sam = tenancy.principal("sam")
    with tenancy.tx() as s:
        manager.update_user(s, tenancy.principal("root"), "sam", UserUpdate(active=False))
    with pytest.raises(Conflict, match="deactivating domain 'acme' would leave"), \
            tenancy.tx() as s:
        manager.update_domain(s, stale_sam, "acme", DomainUpdate(active=False))
    with pytest.raises(Conflict, match="deleting superadmin 'root' would leave"), \
            tenancy.tx() as s:
        manager.delete_user(s, stale_sam, "root")
    assert active(tenancy) == 1


def test_another_superadmin_may_be_deleted_while_one_remains(tenancy):
    add_superadmin(tenancy)
    with tenancy.tx() as s:
        manager.delete_user(s, tenancy.principal("root"), "sam")
    assert tenancy.user("sam") is None and active(tenancy) == 1


@pytest.mark.parametrize("who_demotes_whom", [
    pytest.param({"root": "root", "sam": "sam"}, id="each demotes themself"),
    pytest.param({"root": "sam", "sam": "root"}, id="each demotes the other"),
])
def test_two_racing_demotions_of_the_last_two_superadmins_do_not_both_pass(
        tenancy, who_demotes_whom):
    """Both start together (a barrier), each in the ledger transaction the
    API uses: one is decided first, the other sees it and is refused."""
    add_superadmin(tenancy)
    callers = {name: tenancy.principal(name) for name in who_demotes_whom}
    barrier = threading.Barrier(len(callers), timeout=BARRIER_TIMEOUT)

    def demote(actor):
        barrier.wait()
        try:
            with db.ledger_transaction(tenancy.session_factory) as s:
                manager.update_user(s, callers[actor], who_demotes_whom[actor],
                                    UserUpdate(role=Role.user))
            return "demoted"
        except Conflict:
            return "refused"

    with ThreadPoolExecutor(len(callers)) as pool:
        outcomes = sorted(pool.map(demote, callers))
    assert outcomes == ["demoted", "refused"]
    assert active(tenancy) == 1


# --- over the API -----------------------------------------------------------------

@pytest.mark.parametrize("body", [{"role": "user"}, {"role": "domain-admin"}, {"active": False}])
async def test_the_api_answers_409_and_the_superadmin_still_acts(served, body):  # noqa: F811
    resp, data = await served.call("PATCH", "users/root", "root", json_body=body)
    assert resp.code == 409, data
    assert data["reason"] == "conflict" and "would leave no active superadmin" in data["message"]
    resp, me = await served.call("GET", "me", "root")
    assert resp.code == 200 and me["role"] == "superadmin" and me["active"]


# --- the repair at start ------------------------------------------------------------

def start(served, name="root"):  # noqa: F811
    """What the service does at every start (``HubgridService.bootstrap``)."""
    served.svc.bootstrap_superadmin = name
    served.svc.default_domain = "acme"
    served.svc.bootstrap()


def force(world, **values):
    """Write around the API, as an old database or an operator could have."""
    with world.tx() as s:
        s.execute(sa.update(User).where(User.name == "root").values(**values))


@pytest.mark.parametrize("broken", [
    pytest.param({"active": False}, id="deactivated"),
    pytest.param({"role": Role.user}, id="demoted"),
])
def test_a_start_restores_the_bootstrap_superadmin(served, broken):  # noqa: F811
    force(served.world, **broken)
    assert active(served.world) == 0
    start(served)
    root = served.world.user("root")
    assert (root.role, root.active, active(served.world)) == (Role.superadmin, True, 1)


def test_a_start_moves_the_bootstrap_superadmin_out_of_an_inactive_domain(served):  # noqa: F811
    with served.world.tx() as s:
        s.execute(sa.update(Domain).where(Domain.name == "globex").values(active=False))
    with served.world.tx() as s:
        globex = s.scalar(sa.select(Domain).where(Domain.name == "globex"))
        s.execute(sa.update(User).where(User.name == "root").values(domain_id=globex.id))
    assert active(served.world) == 0
    start(served)
    assert served.world.user("root").domain.name == "acme" and active(served.world) == 1


def test_a_start_creates_the_bootstrap_superadmin_if_new(served):  # noqa: F811
    force(served.world, active=False)
    start(served, "newboss")
    boss = served.world.user("newboss")
    assert (boss.role, boss.domain.name) == (Role.superadmin, "acme")


def test_a_start_changes_nothing_while_a_superadmin_can_act(served):  # noqa: F811
    start(served, "alice")
    assert served.world.user("alice").role is Role.user
