"""Hub roles for a hubgrid identity: a pure function, no IO."""

from __future__ import annotations


USER_ROLE = {
    "name": "hubgrid-user",
    "description": "hubgrid: call the hubgrid API with one's own tokens",
    "scopes": ["access:services!service=hubgrid"],
}


def domain_admin_role_name(domain: str) -> str:
    return f"hubgrid-domain-admin-{domain}"


def domain_admin_scopes(groups: list[str]) -> list[str]:
    """What a domain admin may do in the hub: see and start/stop the servers
    of the users in their domain's groups, and read those groups. Not
    ``access:servers``: an admin does not enter users' notebooks."""
    scopes = ["admin-ui"]
    for g in groups:
        scopes += [
            f"list:users!group={g}",
            f"read:users!group={g}",
            f"read:users:activity!group={g}",
            f"read:servers!group={g}",
            f"servers!group={g}",
            f"list:groups!group={g}",
            f"read:groups!group={g}",
        ]
    return scopes


def hub_roles(identity: dict, builtin: dict[str, dict]) -> list[dict]:
    """The complete list of roles the hub should give this user.

    With ``Authenticator.manage_roles`` the hub strips every role not listed,
    so the built-in ``user`` role (and ``admin`` for superadmins) is listed
    too, with its definition as the hub has it (``builtin``: name -> spec).
    """
    roles: list[dict] = [builtin["user"], dict(USER_ROLE)]
    if identity["admin"]:
        roles.append(builtin["admin"])
    if identity["domain_admin"]:
        roles.append(
            {
                "name": domain_admin_role_name(identity["domain"]),
                "description": f"hubgrid: admin of domain {identity['domain']}",
                "scopes": domain_admin_scopes(identity["domain_hub_groups"]),
            }
        )
    return roles
