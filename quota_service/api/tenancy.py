"""REST handlers for domains, projects, members, users, keypairs and /me."""

from __future__ import annotations

from ..tenancy import accounts, audit, bulkusers
from ..core.schemas import (
    DomainCreate,
    DomainUpdate,
    KeypairCreate,
    KeypairUpdate,
    ProjectCreate,
    ProjectUpdate,
    UserCreate,
    UserUpdate,
    parse,
)
from ..core.errors import Invalid
from ..core.models import Role
from . import admin
from .base import APIHandler


class MeHandler(APIHandler):
    resource = "me"

    async def get(self):
        """The caller: their domain, role, projects and limits."""
        self.finish_json(await self.db(lambda s: accounts.me(s, self.principal)))


class DomainsHandler(APIHandler):
    resource = "domain"
    bodies = {"post": DomainCreate}

    async def get(self):
        """The domains the caller sees (superadmins: all)."""
        self.finish_json(await self.db(lambda s: accounts.list_domains(s, self.principal)))

    async def post(self):
        """Create a domain (superadmins)."""
        body = parse(DomainCreate, self.json_body())
        self.audit_target = self.audit_domain = body.name
        model = await self.db(lambda s: accounts.create_domain(s, self.principal, body))
        self.mirror.request_sync()
        self.created(model, self.api_url("domains", body.name))


class DomainHandler(APIHandler):
    resource = "domain"
    bodies = {"patch": DomainUpdate}

    def prepare_target(self, domain):
        self.audit_target = self.audit_domain = domain

    async def get(self, domain):
        """One domain."""
        self.prepare_target(domain)
        self.finish_json(await self.db(lambda s: accounts.get_domain(s, self.principal, domain)))

    async def patch(self, domain):
        """Change a domain (superadmins)."""
        self.prepare_target(domain)
        body = parse(DomainUpdate, self.json_body())
        # the ledger lock: deactivating a domain may take away the last superadmin
        model = await self.db(lambda s: accounts.update_domain(s, self.principal, domain, body),
                              ledger=True)
        self.finish_json(model)

    async def delete(self, domain):
        """Delete a domain that has no users left (superadmins)."""
        self.prepare_target(domain)
        await self.db(lambda s: accounts.delete_domain(s, self.principal, domain))
        self.mirror.request_sync()
        self.no_content()


class ProjectsHandler(APIHandler):
    """Every project the caller sees (``?domain=`` narrows); created per domain."""

    resource = "project"
    queries = {"get": {"domain": "only the projects of this domain"}}

    async def get(self, domain=None):
        """The projects the caller sees (a domain's only, in the path or ``?domain=``)."""
        domain = domain or self.get_query_argument("domain", None)
        self.finish_json(await self.db(
            lambda s: accounts.list_projects(s, self.principal, domain)))


class DomainProjectsHandler(ProjectsHandler):
    bodies = {"post": ProjectCreate}

    async def post(self, domain):
        """Create a project in a domain (its domain admins)."""
        body = parse(ProjectCreate, self.json_body())
        self.audit_domain = domain
        self.audit_target = f"{domain}/{body.name}"
        model = await self.db(lambda s: accounts.create_project(s, self.principal, domain, body))
        self.mirror.request_sync()
        self.created(model, self.api_url("domains", domain, "projects", body.name))


class ProjectHandler(APIHandler):
    resource = "project"
    bodies = {"patch": ProjectUpdate}

    def prepare_target(self, domain, project):
        self.audit_domain = domain
        self.audit_target = f"{domain}/{project}"

    async def get(self, domain, project):
        """One project."""
        self.prepare_target(domain, project)
        self.finish_json(await self.db(
            lambda s: accounts.get_project(s, self.principal, domain, project)))

    async def patch(self, domain, project):
        """Change a project (its domain admins; ``clear`` resets limits to unlimited)."""
        self.prepare_target(domain, project)
        body = parse(ProjectUpdate, self.json_body())
        model = await self.db(
            lambda s: accounts.update_project(s, self.principal, domain, project, body))
        self.finish_json(model)

    async def delete(self, domain, project):
        """Delete a project (its domain admins)."""
        self.prepare_target(domain, project)
        await self.db(lambda s: accounts.delete_project(s, self.principal, domain, project))
        self.mirror.request_sync()
        self.no_content()


class MembersHandler(APIHandler):
    resource = "member"

    async def get(self, domain, project):
        """The members of a project."""
        self.audit_domain = domain
        self.finish_json(await self.db(
            lambda s: accounts.list_members(s, self.principal, domain, project)))


class MemberHandler(APIHandler):
    resource = "member"
    creates_when_new = ("put",)

    def prepare_target(self, domain, project, user):
        self.audit_domain = domain
        self.audit_target = f"{domain}/{project}/{user}"

    async def put(self, domain, project, user):
        """Add a user to a project (201 when new, 200 when already a member)."""
        self.prepare_target(domain, project, user)

        def add(s):
            added = accounts.add_member(s, self.principal, domain, project, user)
            return added, accounts.list_members(s, self.principal, domain, project)

        added, members = await self.db(add)
        self.mirror.request_sync()
        self.finish_json(members, 201 if added else 200)

    async def delete(self, domain, project, user):
        """Remove a user from a project (its domain admins)."""
        self.prepare_target(domain, project, user)
        await self.db(lambda s: accounts.remove_member(s, self.principal, domain, project, user))
        self.mirror.request_sync()
        self.no_content()


class UsersHandler(APIHandler):
    resource = "user"
    queries = {"get": {"domain": "only the users of this domain",
                       "q": "only names containing this (any case)",
                       "role": "only this role: user, domain-admin or superadmin",
                       "active": "only active (true) or inactive (false) users"}}
    query_schemas = {"get": {
        "role": {"type": "string", "enum": [r.value for r in Role]},
        "active": {"type": "string", "enum": [*bulkusers.TRUE, *bulkusers.FALSE]}}}
    bodies = {"post": UserCreate}

    async def get(self):
        """The users the caller sees (domain admins: their domain's); q, role, active narrow."""
        domain = self.get_query_argument("domain", None)
        keep = bulkusers.search_filter(self.get_query_argument("q", None),
                                       self.get_query_argument("role", None),
                                       self.get_query_argument("active", None))
        users = await self.db(lambda s: accounts.list_users(s, self.principal, domain))
        self.finish_json([u for u in users if keep(u)])

    async def post(self):
        """Create a user (admins)."""
        body = parse(UserCreate, self.json_body())
        self.audit_target, self.audit_domain = body.name, body.domain
        model = await self.db(lambda s: accounts.create_user(s, self.principal, body))
        self.mirror.request_sync()
        self.created(model, self.api_url("users", body.name))


class UserHandler(APIHandler):
    resource = "user"
    bodies = {"patch": UserUpdate}

    async def get(self, user):
        """One user."""
        self.audit_target = user
        self.finish_json(await self.db(lambda s: accounts.get_user(s, self.principal, user)))

    async def patch(self, user):
        """Change a user (admins; never the last active superadmin away)."""
        self.audit_target = user
        body = parse(UserUpdate, self.json_body())
        # the ledger lock: two last superadmins demoting each other are decided in turn
        model = await self.db(lambda s: accounts.update_user(s, self.principal, user, body),
                              ledger=True)
        self.audit_domain = model["domain"]
        self.mirror.request_sync()
        self.finish_json(model)

    async def delete(self, user):
        """Delete a user (admins; never the last active superadmin)."""
        self.audit_target = user
        self.audit_domain = await self.db(
            lambda s: accounts.delete_user(s, self.principal, user), ledger=True)
        self.mirror.request_sync()
        self.no_content()


class KeypairsHandler(APIHandler):
    resource = "keypair"
    queries = {"get": {"user": "whose keypairs (default: the caller's)"}}
    bodies = {"post": KeypairCreate}

    async def get(self):
        """A user's keypairs, without their secrets (default: the caller's)."""
        user = self.get_query_argument("user", None)
        self.finish_json(await self.db(lambda s: accounts.list_keypairs(s, self.principal, user)))

    async def post(self):
        """Make a keypair; its secret is in this answer only."""
        body = parse(KeypairCreate, self.json_body())
        self.audit_target = body.user or self.principal.name
        now = self.now()
        model = await self.db(lambda s: accounts.create_keypair(s, self.principal, body, now))
        self.audit_target = f"{model['user']}/{model['access_key']}"
        self.audit_domain = model["domain"]
        self.created(model, self.api_url("keypairs", model["access_key"]))


class KeypairHandler(APIHandler):
    resource = "keypair"
    bodies = {"patch": KeypairUpdate}

    async def get(self, access_key):
        """One keypair, without its secret."""
        self.audit_target = access_key
        self.finish_json(await self.db(
            lambda s: accounts.get_keypair(s, self.principal, access_key)))

    async def patch(self, access_key):
        """Change a keypair (its owner may only deactivate it or bring its expiry closer)."""
        self.audit_target = access_key
        body = parse(KeypairUpdate, self.json_body())
        now = self.now()
        model = await self.db(
            lambda s: accounts.update_keypair(s, self.principal, access_key, body, now))
        self.audit_domain = model["domain"]
        self.finish_json(model)

    async def delete(self, access_key):
        """Delete a keypair."""
        self.audit_target = access_key
        self.audit_domain = await self.db(
            lambda s: accounts.delete_keypair(s, self.principal, access_key))
        self.no_content()


class AuditHandler(APIHandler):
    resource = "audit"
    queries = {
        "get": {
            "user": "only what users whose name starts with this did (ali: alice, alina)",
            "action": "only this action, e.g. login, project.create, session.end",
            "target": "only entries about this target, exactly (a session's: its id)",
            "outcome": "success, failure, denied, invalid or error",
            "since": "from this time on (ISO 8601)",
            "until": "before this time (ISO 8601)",
            "limit": "page size, 1 to 500 (100)",
            "offset": "entries to skip (0)",
            "format": "json (default) or csv: every matching entry as a CSV download "
                      "(no limit/offset; at most 100,000, until fixed at the request's time)",
        }
    }
    query_schemas = {"get": {"format": {"type": "string", "enum": ["json", "csv"]}}}

    async def get(self):
        """The access log the caller may read, newest first (filters narrow; format=csv exports)."""
        fmt = self.get_query_argument("format", "json")
        if fmt not in ("json", "csv"):
            raise Invalid(f"format: {fmt[:40]!r} is not 'json' or 'csv'")
        if fmt == "csv":
            return await admin.audit_csv(self)
        args = {k: v for k, v in self.query_args().items() if k != "format"}
        self.finish_json(await self.db(lambda s: audit.query(s, self.principal, args)))
