"""Who may do what: plain functions over a Principal, no IO.

The rules:
- a superadmin may do everything;
- a domain admin acts only inside their own domain: never on another
  domain's things, never promoting anyone to superadmin, never moving a user
  across domains, never changing a superadmin;
- a user reads themself, their domain and their projects, and manages their
  own keypairs.

Visibility checks answer 404 (existence must not leak); permission checks on
something the caller can see answer 403.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import Denied, Hidden
from .models import Role


@dataclass(frozen=True)
class Principal:
    """The caller of one request, resolved by the service."""

    name: str
    role: Role
    domain: str
    projects: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    credential: str = "token"  # token | keypair | internal
    #: the keypair used (credential "keypair") and its resource policy
    keypair: str | None = None
    policy: str | None = None

    @property
    def is_superadmin(self) -> bool:
        return is_superadmin_role(self.role)

    def administers(self, domain: str) -> bool:
        return self.is_superadmin or (
            is_domain_admin_role(self.role) and self.domain == domain
        )


def _not_found(kind: str, name: str) -> Hidden:
    return Hidden(f"{kind} {name!r} not found")


# --- roles -----------------------------------------------------------------

def is_superadmin_role(role: Role) -> bool:
    """Does this role hold every right (and the hub's ``admin`` role)?"""
    return role is Role.superadmin


def is_domain_admin_role(role: Role) -> bool:
    """Does this role administer its own domain (and only it)?"""
    return role is Role.domain_admin


def require_superadmin(p: Principal, what: str) -> None:
    """Cluster-wide writes (policies, resource groups, nodes, images)."""
    if not p.is_superadmin:
        raise Denied(f"only a superadmin may {what}")


# --- domains ---------------------------------------------------------------

def can_see_domain(p: Principal, domain: str) -> bool:
    return p.is_superadmin or p.domain == domain


def require_see_domain(p: Principal, domain: str) -> None:
    if not can_see_domain(p, domain):
        raise _not_found("domain", domain)


def require_manage_domains(p: Principal) -> None:
    """Creating, changing and deleting domains is for superadmins."""
    if not p.is_superadmin:
        raise Denied("only a superadmin may create, change or delete domains")


# --- projects --------------------------------------------------------------

def can_see_project(p: Principal, domain: str, project: str) -> bool:
    return p.administers(domain) or (domain, project) in p.projects


def require_see_project(p: Principal, domain: str, project: str) -> None:
    if not can_see_project(p, domain, project):
        raise _not_found("project", f"{domain}/{project}")


def require_administer(p: Principal, domain: str, what: str) -> None:
    """Writes inside a domain: its domain admins and superadmins."""
    if not p.administers(domain):
        raise Denied(f"only an admin of domain {domain!r} may {what}")


# --- users -----------------------------------------------------------------

def can_see_user(p: Principal, name: str, domain: str) -> bool:
    return p.name == name or p.administers(domain)


def require_see_user(p: Principal, name: str, domain: str) -> None:
    if not can_see_user(p, name, domain):
        raise _not_found("user", name)


def require_session_owner(p: Principal, owner: str, owner_domain: str) -> None:
    """A session's own reports and "keep it": its owner only (an admin sees
    the session but does not act as its owner)."""
    require_see_user(p, owner, owner_domain)
    if p.name != owner:
        raise Denied("only the session's owner may do this")


def require_stop_session(p: Principal, owner: str, owner_domain: str) -> None:
    """Stop a session (its hub server or its allocation): its owner and the
    admins of the owner's domain; anybody else does not find it."""
    require_see_user(p, owner, owner_domain)


def require_create_user(p: Principal, domain: str, role: Role) -> None:
    require_administer(p, domain, "create users in it")
    if is_superadmin_role(role) and not p.is_superadmin:
        raise Denied("only a superadmin may make a superadmin")


def require_change_user(
    p: Principal, target_domain: str, target_role: Role, changes: dict
) -> None:
    """May ``p`` apply ``changes`` (domain, role, active) to this user?"""
    require_administer(p, target_domain, "change its users")
    if p.is_superadmin:
        return
    if is_superadmin_role(target_role):
        raise Denied("a domain admin may not change a superadmin")
    if changes.get("role") is not None and is_superadmin_role(changes["role"]):
        raise Denied("only a superadmin may make a superadmin")
    if "domain" in changes and changes["domain"] != target_domain:
        raise Denied("only a superadmin may move a user to another domain")


def require_delete_user(p: Principal, target_domain: str, target_role: Role) -> None:
    require_change_user(p, target_domain, target_role, {})


def session_listing_scope(p: Principal) -> tuple[str | None, str | None]:
    """Whose sessions ``p`` lists, as (domain, user), None meaning any: a
    superadmin everyone's, a domain admin their domain's, a user their own
    (``can_see_user`` for every row, said once for a query)."""
    if p.is_superadmin:
        return None, None
    if is_domain_admin_role(p.role):
        return p.domain, None
    return p.domain, p.name


def user_listing_scope(p: Principal) -> str | None:
    """Which domain's users ``p`` may list: None for all; Denied for users."""
    if p.is_superadmin:
        return None
    if is_domain_admin_role(p.role):
        return p.domain
    raise Denied("only admins may list users")


# --- resource policies -----------------------------------------------------

def reads_every_policy(p: Principal) -> bool:
    """Admins read every resource policy; users only the ones that apply to them."""
    return p.is_superadmin or is_domain_admin_role(p.role)


# --- keypairs --------------------------------------------------------------

def can_manage_keypairs_of(p: Principal, owner: str, owner_domain: str, owner_role: Role) -> bool:
    """Own keypairs, or those of a domain one administers -- but a
    superadmin's keypairs only to superadmins (a keypair is a login)."""
    if p.name == owner or p.is_superadmin:
        return True
    return p.administers(owner_domain) and not is_superadmin_role(owner_role)


def require_manage_keypairs_of(p: Principal, owner: str, owner_domain: str, owner_role: Role) -> None:
    if not can_manage_keypairs_of(p, owner, owner_domain, owner_role):
        raise _not_found("user", owner)


def require_set_resource_policy(p: Principal, owner_domain: str) -> None:
    require_administer(p, owner_domain, "set a keypair's resource policy")


def require_change_keypair(
    p: Principal, owner_domain: str, changes: dict, current_expiry, new_expiry_given: bool
) -> None:
    """Owners may only restrict their keypairs (deactivate, expire sooner);
    re-activating, extending or clearing the expiry and setting the resource
    policy are for admins of the owner's domain."""
    if p.administers(owner_domain):
        return
    if changes.get("active") is True:
        raise Denied("only an admin may re-activate a keypair")
    if "resource_policy" in changes:
        require_set_resource_policy(p, owner_domain)
    if new_expiry_given:
        new = changes.get("expires_at")
        if new is None or (current_expiry is not None and new > current_expiry):
            raise Denied("only an admin may extend or clear a keypair's expiry")


# --- access log ------------------------------------------------------------

def audit_scope(p: Principal) -> str | None:
    """The domain whose access log ``p`` reads: None for all of it."""
    if p.is_superadmin:
        return None
    if is_domain_admin_role(p.role):
        return p.domain
    raise Denied("only admins may read the access log")


# --- usage accounting --------------------------------------------------------

def usage_scope(p: Principal) -> tuple[str | None, str | None]:
    """Whose usage ``p`` reads, as (domain, user), None meaning any: a
    superadmin everyone's, a domain admin their domain's, a user their own."""
    if p.is_superadmin:
        return None, None
    if is_domain_admin_role(p.role):
        return p.domain, None
    return p.domain, p.name


# --- metrics ---------------------------------------------------------------

#: the hub's scope for reading metrics (JupyterHub's /hub/metrics asks for it too)
METRICS_SCOPE = "read:metrics"


def may_read_metrics(p: Principal | None, hub_scopes: frozenset[str] = frozenset()) -> bool:
    """Who may scrape the Prometheus endpoint: a superadmin (any credential),
    or any hub token (a user's or a service's, e.g. Prometheus's) carrying
    the hub's ``read:metrics`` scope. Domain admins may not: the metrics
    cover every domain."""
    return METRICS_SCOPE in hub_scopes or (p is not None and p.is_superadmin)


def require_read_metrics(p: Principal | None, hub_scopes: frozenset[str] = frozenset()) -> None:
    if not may_read_metrics(p, hub_scopes):
        raise Denied(f"reading the metrics needs a superadmin or a hub token with the scope "
                     f"{METRICS_SCOPE}")


# --- the admin pages -----------------------------------------------

def admin_page_scope(p: Principal, what: str) -> str | None:
    """The domain whose things ``p`` manages on an admin page (the queue, a
    node's sessions and GPU map, bulk user import): None for every domain (a
    superadmin), their own (a domain admin); Denied for users."""
    if p.is_superadmin:
        return None
    if is_domain_admin_role(p.role):
        return p.domain
    raise Denied(f"only admins may {what}")


def has_admin_pages(p: Principal) -> bool:
    """Does ``p`` get the admin pages (the Lab's "hubgrid Admin" menu):
    superadmins and domain admins, not users."""
    return p.is_superadmin or is_domain_admin_role(p.role)


def sees_whose(p: Principal, domain: str) -> bool:
    """On an admin page, does ``p`` see who holds or asks for something of
    ``domain`` (else it shows only as taken or as a place in a queue)?"""
    return p.administers(domain)


def require_manage_queued(p: Principal, owner_domain: str, request: str) -> None:
    """Reorder, re-prioritise or cancel a pending request: superadmins any,
    domain admins their domain's (others' are not found), users none."""
    admin_page_scope(p, "change the scheduler's queue")
    if not p.administers(owner_domain):
        raise _not_found("pending request", request)


def role_matches(role: str, wanted: str | None) -> bool:
    """A listing's role filter (the Users page's search): does a user of
    ``role`` match ``wanted`` (None: any role)? It narrows, never grants."""
    return wanted is None or role == wanted


# --- model serving -------------------------------------------------

def can_see_endpoint(p: Principal, domain: str, project: str) -> bool:
    """An endpoint is seen (and used: its tokens made and revoked) by its
    project's members, the admins of its domain and superadmins."""
    return can_see_project(p, domain, project)


def can_change_endpoint(p: Principal, domain: str, project: str, creator: str) -> bool:
    """Scale, change or delete an endpoint: its creator (its replicas run
    under their quota), the admins of its domain and superadmins; the
    project's other members use it but may not."""
    return can_see_endpoint(p, domain, project) and (
        p.administers(domain) or (p.name == creator and p.domain == domain))


def require_change_endpoint(p: Principal, domain: str, project: str, creator: str,
                            endpoint: str) -> None:
    """404 for who does not see it, 403 for a member who did not create it."""
    require_see_endpoint(p, domain, project, endpoint)
    if not can_change_endpoint(p, domain, project, creator):
        raise Denied(f"only the endpoint's creator ({creator}) or an admin of domain "
                     f"{domain!r} may change or delete it")


def require_see_endpoint(p: Principal, domain: str, project: str, endpoint: str) -> None:
    if not can_see_endpoint(p, domain, project):
        raise _not_found("endpoint", endpoint)


def require_create_endpoint(p: Principal, domain: str, project: str) -> None:
    """Create an endpoint in a project: its members (the replicas run under
    their quota); an admin who is no member sees the project but may not."""
    require_see_project(p, domain, project)
    if (domain, project) not in p.projects:
        raise Denied(f"only members of project {domain}/{project} may create endpoints in it")


def require_set_endpoint_public(p: Principal, domain: str) -> None:
    """Making an endpoint public (callable without a token) is for the admins
    of its domain and superadmins."""
    require_administer(p, domain, "make an endpoint public")


def endpoint_listing_scope(p: Principal) -> tuple[str | None, frozenset[tuple[str, str]] | None]:
    """Whose endpoints ``p`` lists, as (domain, projects), None meaning any:
    a superadmin every one, a domain admin their domain's, a user those of
    their projects."""
    if p.is_superadmin:
        return None, None
    if is_domain_admin_role(p.role):
        return p.domain, None
    return p.domain, p.projects


# --- chat history ---------------------------------------------------

def require_chat_owner(p: Principal, owner: str, chat: str) -> None:
    """A conversation is its owner's alone: anyone else, whatever their role
    (superadmins too), is told it does not exist (404)."""
    if p.name != owner:
        raise _not_found("conversation", chat)


# --- the Model Store --------------------------------------------------

def can_see_store_model(p: Principal, domain: str | None) -> bool:
    """A published model is seen (and deployed, into a project of one's own)
    by everyone when published to every domain (``domain`` None), else by
    the users of its domain and its admins."""
    return domain is None or p.domain == domain or p.administers(domain)


def require_see_store_model(p: Principal, domain: str | None, entry: str) -> None:
    if not can_see_store_model(p, domain):
        raise _not_found("model", entry)


def require_publish_store_model(p: Principal, domain: str | None) -> None:
    """Publishing to every domain is for superadmins; to one domain, for its
    admins and superadmins."""
    if domain is None:
        require_superadmin(p, "publish a model to every domain")
    else:
        require_administer(p, domain, "publish a model in it")


def require_manage_store_model(p: Principal, domain: str | None, entry: str) -> None:
    """Change or unpublish: the admins of its scope (404 for who does not
    see it, 403 for who sees it but may not)."""
    require_see_store_model(p, domain, entry)
    if domain is None and not p.is_superadmin:
        raise Denied("only a superadmin may change or unpublish a model of every domain")
    if domain is not None and not p.administers(domain):
        raise Denied(f"only an admin of domain {domain!r} may change or unpublish its models")
