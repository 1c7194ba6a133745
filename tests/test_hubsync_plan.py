"""The hub mirror's plan: pure, from desired and actual state to actions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from quota_service.tenancy import hubmirror as hubsync
from quota_service.tenancy import accounts as manager
from quota_service.tenancy.hubmirror import Action, HubState
from quota_service.core.schemas import DomainUpdate, UserUpdate


def state(users=(), groups=None, inactive=()) -> HubState:
    return HubState(
        users=frozenset(users),
        groups={name: (kind, frozenset(members)) for name, (kind, members) in (groups or {}).items()},
        inactive=frozenset(inactive),
    )


DESIRED = state(
    users=["ada", "alice", "bob"],
    groups={"acme": ("domain", ["ada", "alice", "bob"]), "acme.ml": ("project", ["alice"])},
)


def test_nothing_to_do_when_the_hub_agrees():
    assert hubsync.plan(DESIRED, DESIRED) == []


def test_missing_users_and_groups_are_created_with_their_marker_kind():
    actions = hubsync.plan(DESIRED, state(users=["ada"]))
    assert actions == [
        Action("create-user", "alice"),
        Action("create-user", "bob"),
        Action("create-group", "acme", ("ada", "alice", "bob"), "domain"),
        Action("create-group", "acme.ml", ("alice",), "project"),
    ]


def test_users_are_created_before_any_group_names_them():
    actions = hubsync.plan(DESIRED, state())
    verbs = [a.verb for a in actions]
    assert verbs.index("create-group") > max(i for i, v in enumerate(verbs) if v == "create-user")


def test_members_are_added_and_removed():
    actual = state(
        users=["ada", "alice", "bob", "eve"],
        groups={"acme": ("domain", ["ada", "eve"]), "acme.ml": ("project", ["alice", "bob"])},
    )
    assert hubsync.plan(DESIRED, actual) == [
        Action("revoke", "eve"),  # eve is unknown to hubgrid
        Action("add", "acme", ("alice", "bob")),
        Action("remove", "acme", ("eve",)),
        Action("remove", "acme.ml", ("bob",)),
    ]


def test_an_unmarked_group_of_a_desired_name_is_taken_over():
    actual = state(users=[*DESIRED.users, "mallory"],
                   groups={**DESIRED.groups, "acme.ml": (None, ["alice", "mallory"])})
    assert hubsync.plan(DESIRED, actual) == [
        Action("revoke", "mallory"),  # unknown to hubgrid
        Action("mark-group", "acme.ml", kind="project"),
        Action("remove", "acme.ml", ("mallory",)),
    ]


def test_a_group_marked_with_the_wrong_kind_is_re_marked():
    actual = state(users=DESIRED.users, groups={"acme": ("project", ["ada", "alice", "bob"]),
                                                "acme.ml": ("project", ["alice"])})
    assert hubsync.plan(DESIRED, actual) == [Action("mark-group", "acme", kind="domain")]


def test_stale_marked_groups_are_deleted_but_unmanaged_groups_never_touched():
    actual = state(
        users=DESIRED.users,
        groups={
            **DESIRED.groups,
            "acme.old": ("project", ["alice"]),
            "initech": ("domain", []),
            "jupyter-admins": (None, ["ada"]),
            "acme.by-hand": (None, ["bob"]),
        },
    )
    assert hubsync.plan(DESIRED, actual) == [
        Action("delete-group", "acme.old"),
        Action("delete-group", "initech"),
    ]


def test_hub_users_unknown_to_hubgrid_are_revoked_never_deleted():
    actual = state(users=[*DESIRED.users, "hub-only"], groups=dict(DESIRED.groups))
    assert hubsync.plan(DESIRED, actual) == [Action("revoke", "hub-only")]


def test_inactive_users_present_in_the_hub_are_revoked():
    desired = state(users=DESIRED.users, groups=dict(DESIRED.groups), inactive=["bob", "carol"])
    actual = state(users=["ada", "alice", "bob"], groups=dict(DESIRED.groups))
    assert hubsync.plan(desired, actual) == [Action("revoke", "bob")]


# --- the plan converges --------------------------------------------------------

def apply(actual: HubState, actions: list[Action]) -> HubState:
    """What the hub looks like after the actions (a model of HubAPI.apply)."""
    users = set(actual.users)
    groups = dict(actual.groups)
    for a in actions:
        if a.verb in ("create-group", "add", "remove"):
            missing = set(a.users) - users
            assert not missing, f"{a} names users the hub does not have: {missing}"
        if a.verb == "create-user":
            assert a.target not in users
            users.add(a.target)
        elif a.verb == "create-group":
            assert a.target not in groups
            groups[a.target] = (a.kind, frozenset(a.users))
        elif a.verb == "mark-group":
            groups[a.target] = (a.kind, groups[a.target][1])
        elif a.verb == "add":
            kind, members = groups[a.target]
            groups[a.target] = (kind, members | set(a.users))
        elif a.verb == "remove":
            kind, members = groups[a.target]
            groups[a.target] = (kind, members - set(a.users))
        elif a.verb == "delete-group":
            assert groups[a.target][0] is not None, "deleted an unmanaged group"
            del groups[a.target]
        elif a.verb != "revoke":
            raise AssertionError(f"unknown verb {a.verb}")
    return HubState(users=frozenset(users), groups=groups, inactive=actual.inactive)


USERS = st.sampled_from(["ada", "alice", "bob", "gina", "gus", "eve"])
GROUPS = st.sampled_from(["acme", "acme.ml", "acme.web", "globex", "globex.lab", "admins"])


@st.composite
def desired_states(draw):
    users = draw(st.frozensets(USERS))
    groups = draw(st.dictionaries(
        GROUPS,
        st.tuples(st.sampled_from(["domain", "project"]),
                  st.frozensets(st.sampled_from(sorted(users))) if users else st.just(frozenset())),
    ))
    inactive = draw(st.frozensets(st.sampled_from(sorted(users)))) if users else frozenset()
    return HubState(users=users, groups=groups, inactive=inactive)


@st.composite
def actual_states(draw):
    users = draw(st.frozensets(USERS))
    groups = draw(st.dictionaries(
        GROUPS,
        st.tuples(st.sampled_from([None, "domain", "project"]),
                  st.frozensets(st.sampled_from(sorted(users))) if users else st.just(frozenset())),
    ))
    return HubState(users=users, groups=groups)


@given(desired_states(), actual_states())
@settings(deadline=None, database=None, max_examples=300)
def test_applying_the_plan_makes_the_hub_match_and_leaves_the_rest_alone(desired, actual):
    after = apply(actual, hubsync.plan(desired, actual))
    assert after.users == actual.users | desired.users
    for name, wanted in desired.groups.items():
        assert after.groups[name] == wanted
    for name, (kind, members) in actual.groups.items():
        if name not in desired.groups:
            if kind is None:
                assert after.groups[name] == (None, members)
            else:
                assert name not in after.groups
    # a second run has nothing left to do but keep inactive and unknown users
    # locked out
    again = hubsync.plan(desired, after)
    assert all(a.verb == "revoke" for a in again)
    locked_out = (desired.inactive & after.users) | (after.users - desired.users)
    assert {a.target for a in again} == set(locked_out)


# --- desired state of the tenancy ------------------------------------------------

def test_desired_state_mirrors_domains_and_projects(tenancy):
    with tenancy.session_factory() as s:
        desired = hubsync.desired_state(s)
    assert desired == state(
        users=["root", "ada", "gus", "alice", "bob", "gina"],
        groups={
            "acme": ("domain", ["root", "ada", "alice", "bob"]),
            "acme.ml": ("project", ["alice"]),
            "acme.web": ("project", []),
            "globex": ("domain", ["gus", "gina"]),
            "globex.lab": ("project", ["gina"]),
        },
    )


def test_desired_state_names_inactive_users_and_users_of_inactive_domains(tenancy):
    ada, root = tenancy.principal("ada"), tenancy.principal("root")  # before the transaction
    with tenancy.tx() as s:
        manager.update_user(s, ada, "bob", UserUpdate(active=False))
        manager.update_domain(s, root, "globex", DomainUpdate(active=False))
    with tenancy.session_factory() as s:
        desired = hubsync.desired_state(s)
    assert desired.inactive == {"bob", "gus", "gina"}
    assert "bob" in desired.groups["acme"][1]  # still a member while inactive


def test_desired_state_follows_a_user_moved_to_another_domain(tenancy):
    root = tenancy.principal("root")  # before the transaction: SQLite has one writer
    with tenancy.tx() as s:
        manager.update_user(s, root, "alice", UserUpdate(domain="globex"))
    with tenancy.session_factory() as s:
        desired = hubsync.desired_state(s)
    assert "alice" not in desired.groups["acme"][1]
    assert "alice" not in desired.groups["acme.ml"][1]
    assert "alice" in desired.groups["globex"][1]


# --- revoking once ("revoke <user>" must not be logged on every pass) -------------

def test_a_revoked_user_is_revoked_again_only_when_something_may_be_there():
    desired = state(users=["ada"], inactive=["ada"])
    quiet = HubState(users=frozenset({"ada", "ghost"}), activity={"ada": "t1", "ghost": None})
    settled = {"ada": "t1", "ghost": None}
    assert hubsync.plan(desired, quiet, settled) == []
    # never revoked (or forgotten: a restart): revoked
    assert hubsync.plan(desired, quiet, {"ada": "t1"}) == [Action("revoke", "ghost")]
    # active since (a token used), or holding a server: revoked again
    used = HubState(users=quiet.users, activity={"ada": "t2", "ghost": None})
    assert hubsync.plan(desired, used, settled) == [Action("revoke", "ada")]
    running = HubState(users=quiet.users, activity=quiet.activity, serving=frozenset({"ghost"}))
    assert hubsync.plan(desired, running, settled) == [Action("revoke", "ghost")]


def test_the_hubs_user_models_say_who_has_a_server():
    models = [{"name": "a", "servers": {"": {}}}, {"name": "b", "servers": {}},
              {"name": "c", "server": "/user/c/"}, {"name": "d", "pending": "spawn"},
              {"name": "e"}]
    assert hubsync.serving(models) == {"a", "c", "d"}
