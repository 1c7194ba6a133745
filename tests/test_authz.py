"""The authorization rules of quota_service.authz, caller by caller.

Every rule is asked of six callers about things in domain ``acme``:
a superadmin, acme's domain admin, globex's domain admin, a user who is a
member of acme/ml, a user of acme who is in no project, and a user of globex.
The answer is allowed, Denied (403: may see, may not do) or Hidden (404: may
not even know it exists).
"""

from __future__ import annotations

import pytest

from quota_service.core import authz
from quota_service.core.authz import Principal
from quota_service.core.errors import Denied, Hidden
from quota_service.core.models import Role

CALLERS = {
    "superadmin": Principal("root", Role.superadmin, "acme"),
    "admin-here": Principal("ada", Role.domain_admin, "acme"),
    "admin-other": Principal("gus", Role.domain_admin, "globex"),
    "member": Principal("alice", Role.user, "acme", frozenset({("acme", "ml")})),
    "non-member": Principal("bob", Role.user, "acme"),
    "foreign-user": Principal("gina", Role.user, "globex", frozenset({("globex", "lab")})),
}
ORDER = list(CALLERS)
OK = "allow"


def outcomes(*expected) -> dict:
    """Expected outcome per caller, in the order of CALLERS."""
    assert len(expected) == len(ORDER)
    return dict(zip(ORDER, expected))


# target of the user rules: carol, a plain user of acme (not a caller);
# root is acme's superadmin
RULES = {
    "see domain acme": (
        lambda p: authz.require_see_domain(p, "acme"),
        outcomes(OK, OK, Hidden, OK, OK, Hidden),
    ),
    "create, change or delete domains": (
        authz.require_manage_domains,
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "see project acme/ml": (
        lambda p: authz.require_see_project(p, "acme", "ml"),
        outcomes(OK, OK, Hidden, OK, Hidden, Hidden),
    ),
    "see project acme/web (nobody's)": (
        lambda p: authz.require_see_project(p, "acme", "web"),
        outcomes(OK, OK, Hidden, Hidden, Hidden, Hidden),
    ),
    "administer acme (projects, members)": (
        lambda p: authz.require_administer(p, "acme", "change it"),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "see user carol of acme": (
        lambda p: authz.require_see_user(p, "carol", "acme"),
        outcomes(OK, OK, Hidden, Hidden, Hidden, Hidden),
    ),
    "see oneself": (
        lambda p: authz.require_see_user(p, p.name, p.domain),
        outcomes(OK, OK, OK, OK, OK, OK),
    ),
    "create a user in acme": (
        lambda p: authz.require_create_user(p, "acme", Role.user),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "create a domain admin in acme": (
        lambda p: authz.require_create_user(p, "acme", Role.domain_admin),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "create a superadmin in acme": (
        lambda p: authz.require_create_user(p, "acme", Role.superadmin),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "create a superadmin in one's own domain": (
        lambda p: authz.require_create_user(p, p.domain, Role.superadmin),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "deactivate carol": (
        lambda p: authz.require_change_user(p, "acme", Role.user, {"active": False}),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "make carol a domain admin": (
        lambda p: authz.require_change_user(p, "acme", Role.user, {"role": Role.domain_admin}),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "make carol a superadmin": (
        lambda p: authz.require_change_user(p, "acme", Role.user, {"role": Role.superadmin}),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "deactivate superadmin root": (
        lambda p: authz.require_change_user(p, "acme", Role.superadmin, {"active": False}),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "demote superadmin root": (
        lambda p: authz.require_change_user(p, "acme", Role.superadmin, {"role": Role.user}),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "move carol from acme to globex": (
        lambda p: authz.require_change_user(p, "acme", Role.user, {"domain": "globex"}),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "move gina from globex to acme": (
        lambda p: authz.require_change_user(p, "globex", Role.user, {"domain": "acme"}),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "keep carol in acme (no move)": (
        lambda p: authz.require_change_user(p, "acme", Role.user, {"domain": "acme"}),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "delete carol": (
        lambda p: authz.require_delete_user(p, "acme", Role.user),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "delete superadmin root": (
        lambda p: authz.require_delete_user(p, "acme", Role.superadmin),
        outcomes(OK, Denied, Denied, Denied, Denied, Denied),
    ),
    "manage carol's keypairs": (
        lambda p: authz.require_manage_keypairs_of(p, "carol", "acme", Role.user),
        outcomes(OK, OK, Hidden, Hidden, Hidden, Hidden),
    ),
    "manage superadmin root's keypairs (a keypair is a login)": (
        lambda p: authz.require_manage_keypairs_of(p, "root", "acme", Role.superadmin),
        outcomes(OK, Hidden, Hidden, Hidden, Hidden, Hidden),
    ),
    "manage one's own keypairs": (
        lambda p: authz.require_manage_keypairs_of(p, p.name, p.domain, p.role),
        outcomes(OK, OK, OK, OK, OK, OK),
    ),
    "set a keypair's resource policy in acme": (
        lambda p: authz.require_set_resource_policy(p, "acme"),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
    "set the resource policy of one's own keypair": (
        lambda p: authz.require_set_resource_policy(p, p.domain),
        outcomes(OK, OK, OK, Denied, Denied, Denied),
    ),
    "list users": (
        authz.user_listing_scope,
        outcomes(OK, OK, OK, Denied, Denied, Denied),
    ),
    "read the access log": (
        authz.audit_scope,
        outcomes(OK, OK, OK, Denied, Denied, Denied),
    ),
    # model serving: endpoints of project acme/ml
    "see, use or give tokens to an endpoint of acme/ml": (
        lambda p: authz.require_see_endpoint(p, "acme", "ml", "e1"),
        outcomes(OK, OK, Hidden, OK, Hidden, Hidden),
    ),
    "scale or delete an endpoint of acme/ml that alice (the member) made": (
        lambda p: authz.require_change_endpoint(p, "acme", "ml", "alice", "e1"),
        outcomes(OK, OK, Hidden, OK, Hidden, Hidden),
    ),
    "scale or delete an endpoint of acme/ml that carol (another member) made": (
        lambda p: authz.require_change_endpoint(p, "acme", "ml", "carol", "e1"),
        outcomes(OK, OK, Hidden, Denied, Hidden, Hidden),
    ),
    "scale or delete an endpoint of acme/ml that bob made before he left the project": (
        lambda p: authz.require_change_endpoint(p, "acme", "ml", "bob", "e1"),
        outcomes(OK, OK, Hidden, Denied, Hidden, Hidden),
    ),
    "create an endpoint in acme/ml (members only)": (
        lambda p: authz.require_create_endpoint(p, "acme", "ml"),
        outcomes(Denied, Denied, Hidden, OK, Hidden, Hidden),
    ),
    "make an endpoint of acme public": (
        lambda p: authz.require_set_endpoint_public(p, "acme"),
        outcomes(OK, OK, Denied, Denied, Denied, Denied),
    ),
}

CASES = [
    pytest.param(rule, caller, id=f"{rule} / {caller}")
    for rule in RULES
    for caller in ORDER
]


@pytest.mark.parametrize("rule, caller", CASES)
def test_rule(rule, caller):
    check, expected_by_caller = RULES[rule]
    expected = expected_by_caller[caller]
    principal = CALLERS[caller]
    if expected == OK:
        check(principal)
        return
    with pytest.raises(expected) as e:
        check(principal)
    # Hidden is a 404 and never a Denied; Denied is a 403 and never a 404
    assert type(e.value) is expected
    assert e.value.status == {Hidden: 404, Denied: 403}[expected]


@pytest.mark.parametrize(
    "check", [authz.user_listing_scope, authz.audit_scope], ids=["users", "audit"]
)
@pytest.mark.parametrize(
    "caller, scope", [("superadmin", None), ("admin-here", "acme"), ("admin-other", "globex")]
)
def test_admins_list_and_read_only_their_scope(check, caller, scope):
    assert check(CALLERS[caller]) == scope


@pytest.mark.parametrize("check", [authz.session_listing_scope, authz.usage_scope],
                         ids=["sessions", "usage"])
@pytest.mark.parametrize("caller, scope", [("superadmin", (None, None)),
                                           ("admin-here", ("acme", None)),
                                           ("admin-other", ("globex", None))])
def test_whose_sessions_and_usage_a_caller_reads(check, caller, scope):
    assert check(CALLERS[caller]) == scope
    user = CALLERS["member"]
    assert check(user) == (user.domain, user.name)


@pytest.mark.parametrize("caller, scope", [
    ("superadmin", (None, None)), ("admin-here", ("acme", None)),
    ("admin-other", ("globex", None)), ("member", ("acme", frozenset({("acme", "ml")}))),
    ("non-member", ("acme", frozenset())),
    ("foreign-user", ("globex", frozenset({("globex", "lab")})))])
def test_whose_endpoints_a_caller_lists(caller, scope):
    assert authz.endpoint_listing_scope(CALLERS[caller]) == scope


def test_a_member_who_did_not_make_an_endpoint_is_told_who_may_change_it():
    with pytest.raises(Denied) as e:
        authz.require_change_endpoint(CALLERS["member"], "acme", "ml", "carol", "e1")
    assert str(e.value) == ("only the endpoint's creator (carol) or an admin of domain "
                            "'acme' may change or delete it")
    assert authz.can_change_endpoint(CALLERS["member"], "acme", "ml", "alice")
    assert not authz.can_change_endpoint(CALLERS["member"], "acme", "ml", "carol")


def test_hidden_refusals_do_not_say_more_than_not_found():
    with pytest.raises(Hidden) as e:
        authz.require_see_project(CALLERS["foreign-user"], "acme", "ml")
    assert str(e.value) == "project 'acme/ml' not found"


@pytest.mark.parametrize(
    "caller, administers",
    [
        ("superadmin", {"acme", "globex", "initech"}),
        ("admin-here", {"acme"}),
        ("admin-other", {"globex"}),
        ("member", set()),
        ("non-member", set()),
        ("foreign-user", set()),
    ],
)
def test_who_administers_which_domain(caller, administers):
    p = CALLERS[caller]
    assert {d for d in ("acme", "globex", "initech") if p.administers(d)} == administers


@pytest.mark.parametrize("caller, has", [
    ("superadmin", True), ("admin-here", True), ("admin-other", True),
    ("member", False), ("non-member", False), ("foreign-user", False),
])
def test_who_gets_the_admin_pages(caller, has):
    assert authz.has_admin_pages(CALLERS[caller]) is has


def test_a_domain_admin_of_a_lookalike_domain_administers_nothing_else():
    p = Principal("eve", Role.domain_admin, "acme2")
    assert not p.administers("acme")
    with pytest.raises(Hidden):
        authz.require_see_domain(p, "acme")


def test_user_role_given_as_string_is_not_a_superadmin():
    # roles are enum members; a raw string must never pass for one
    p = Principal("mallory", "superadmin", "acme")  # type: ignore[arg-type]
    assert not p.is_superadmin
    with pytest.raises(Denied):
        authz.require_manage_domains(p)
