"""REST handlers for domains, projects, members, users, keypairs and /me."""

from __future__ import annotations

from ..tenancy import accounts
from ..core.db import ledger_transaction
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
from .base import APIHandler


class MeHandler(APIHandler):
    resource = "me"

    def get(self):
        with self.transaction() as s:
            self.finish_json(accounts.me(s, self.principal))


class DomainsHandler(APIHandler):
    resource = "domain"
    bodies = {"post": DomainCreate}

    def get(self):
        with self.transaction() as s:
            self.finish_json(accounts.list_domains(s, self.principal))

    def post(self):
        body = parse(DomainCreate, self.json_body())
        self.audit_target = self.audit_domain = body.name
        with self.transaction() as s:
            model = accounts.create_domain(s, self.principal, body)
        self.service.mirror.request_sync()
        self.created(model, self.service.api_url("domains", body.name))


class DomainHandler(APIHandler):
    resource = "domain"
    bodies = {"patch": DomainUpdate}

    def prepare_target(self, name):
        self.audit_target = self.audit_domain = name

    def get(self, name):
        self.prepare_target(name)
        with self.transaction() as s:
            self.finish_json(accounts.get_domain(s, self.principal, name))

    def patch(self, name):
        self.prepare_target(name)
        body = parse(DomainUpdate, self.json_body())
        # the ledger lock: deactivating a domain may take away the last superadmin
        with ledger_transaction(self.service.session_factory) as s:
            model = accounts.update_domain(s, self.principal, name, body)
        self.finish_json(model)

    def delete(self, name):
        self.prepare_target(name)
        with self.transaction() as s:
            accounts.delete_domain(s, self.principal, name)
        self.service.mirror.request_sync()
        self.no_content()


class ProjectsHandler(APIHandler):
    """Every project the caller sees (``?domain=`` narrows); created per domain."""

    resource = "project"
    queries = {"get": {"domain": "only the projects of this domain"}}

    def get(self, domain=None):
        domain = domain or self.get_query_argument("domain", None)
        with self.transaction() as s:
            self.finish_json(accounts.list_projects(s, self.principal, domain))


class DomainProjectsHandler(ProjectsHandler):
    bodies = {"post": ProjectCreate}

    def post(self, domain):
        body = parse(ProjectCreate, self.json_body())
        self.audit_domain = domain
        self.audit_target = f"{domain}/{body.name}"
        with self.transaction() as s:
            model = accounts.create_project(s, self.principal, domain, body)
        self.service.mirror.request_sync()
        self.created(model, self.service.api_url("domains", domain, "projects", body.name))


class ProjectHandler(APIHandler):
    resource = "project"
    bodies = {"patch": ProjectUpdate}

    def prepare_target(self, domain, name):
        self.audit_domain = domain
        self.audit_target = f"{domain}/{name}"

    def get(self, domain, name):
        self.prepare_target(domain, name)
        with self.transaction() as s:
            self.finish_json(accounts.get_project(s, self.principal, domain, name))

    def patch(self, domain, name):
        self.prepare_target(domain, name)
        body = parse(ProjectUpdate, self.json_body())
        with self.transaction() as s:
            model = accounts.update_project(s, self.principal, domain, name, body)
        self.finish_json(model)

    def delete(self, domain, name):
        self.prepare_target(domain, name)
        with self.transaction() as s:
            accounts.delete_project(s, self.principal, domain, name)
        self.service.mirror.request_sync()
        self.no_content()


class MembersHandler(APIHandler):
    resource = "member"

    def get(self, domain, project):
        self.audit_domain = domain
        with self.transaction() as s:
            self.finish_json(accounts.list_members(s, self.principal, domain, project))


class MemberHandler(APIHandler):
    resource = "member"

    def prepare_target(self, domain, project, user):
        self.audit_domain = domain
        self.audit_target = f"{domain}/{project}/{user}"

    def put(self, domain, project, user):
        self.prepare_target(domain, project, user)
        with self.transaction() as s:
            added = accounts.add_member(s, self.principal, domain, project, user)
            members = accounts.list_members(s, self.principal, domain, project)
        self.service.mirror.request_sync()
        self.finish_json(members, 201 if added else 200)

    def delete(self, domain, project, user):
        self.prepare_target(domain, project, user)
        with self.transaction() as s:
            accounts.remove_member(s, self.principal, domain, project, user)
        self.service.mirror.request_sync()
        self.no_content()


class UsersHandler(APIHandler):
    resource = "user"
    queries = {"get": {"domain": "only the users of this domain"}}
    bodies = {"post": UserCreate}

    def get(self):
        domain = self.get_query_argument("domain", None)
        with self.transaction() as s:
            self.finish_json(accounts.list_users(s, self.principal, domain))

    def post(self):
        body = parse(UserCreate, self.json_body())
        self.audit_target, self.audit_domain = body.name, body.domain
        with self.transaction() as s:
            model = accounts.create_user(s, self.principal, body)
        self.service.mirror.request_sync()
        self.created(model, self.service.api_url("users", body.name))


class UserHandler(APIHandler):
    resource = "user"
    bodies = {"patch": UserUpdate}

    def get(self, name):
        self.audit_target = name
        with self.transaction() as s:
            self.finish_json(accounts.get_user(s, self.principal, name))

    def patch(self, name):
        self.audit_target = name
        body = parse(UserUpdate, self.json_body())
        # the ledger lock: two last superadmins demoting each other are decided in turn
        with ledger_transaction(self.service.session_factory) as s:
            model = accounts.update_user(s, self.principal, name, body)
        self.audit_domain = model["domain"]
        self.service.mirror.request_sync()
        self.finish_json(model)

    def delete(self, name):
        self.audit_target = name
        with ledger_transaction(self.service.session_factory) as s:
            self.audit_domain = accounts.delete_user(s, self.principal, name)
        self.service.mirror.request_sync()
        self.no_content()


class KeypairsHandler(APIHandler):
    resource = "keypair"
    queries = {"get": {"user": "whose keypairs (default: the caller's)"}}
    bodies = {"post": KeypairCreate}

    def get(self):
        user = self.get_query_argument("user", None)
        with self.transaction() as s:
            self.finish_json(accounts.list_keypairs(s, self.principal, user))

    def post(self):
        body = parse(KeypairCreate, self.json_body())
        self.audit_target = body.user or self.principal.name
        with self.transaction() as s:
            model = accounts.create_keypair(s, self.principal, body, self.now())
        self.audit_target = f"{model['user']}/{model['access_key']}"
        self.audit_domain = model["domain"]
        self.created(model, self.service.api_url("keypairs", model["access_key"]))


class KeypairHandler(APIHandler):
    resource = "keypair"
    bodies = {"patch": KeypairUpdate}

    def get(self, access_key):
        self.audit_target = access_key
        with self.transaction() as s:
            self.finish_json(accounts.get_keypair(s, self.principal, access_key))

    def patch(self, access_key):
        self.audit_target = access_key
        body = parse(KeypairUpdate, self.json_body())
        with self.transaction() as s:
            model = accounts.update_keypair(s, self.principal, access_key, body, self.now())
        self.audit_domain = model["domain"]
        self.finish_json(model)

    def delete(self, access_key):
        self.audit_target = access_key
        with self.transaction() as s:
            self.audit_domain = accounts.delete_keypair(s, self.principal, access_key)
        self.no_content()


class AuditHandler(APIHandler):
    resource = "audit"
    queries = {
        "get": {
            "user": "only what this user did",
            "action": "only this action, e.g. login, project.create",
            "outcome": "success, failure, denied, invalid or error",
            "since": "from this time on (ISO 8601)",
            "until": "before this time (ISO 8601)",
            "limit": "page size, 1 to 500 (100)",
            "offset": "entries to skip (0)",
        }
    }

    def get(self):
        from ..tenancy import audit

        with self.transaction() as s:
            self.finish_json(audit.query(s, self.principal, self.query_args()))


NAME = r"([^/]+)"

# (path under the API root, handler): the URL table, also read by openapi.py
routes = [
    (r"me", MeHandler),
    (r"domains", DomainsHandler),
    (rf"domains/{NAME}", DomainHandler),
    (r"projects", ProjectsHandler),
    (rf"domains/{NAME}/projects", DomainProjectsHandler),
    (rf"domains/{NAME}/projects/{NAME}", ProjectHandler),
    (rf"domains/{NAME}/projects/{NAME}/members", MembersHandler),
    (rf"domains/{NAME}/projects/{NAME}/members/{NAME}", MemberHandler),
    (r"users", UsersHandler),
    (rf"users/{NAME}", UserHandler),
    (r"keypairs", KeypairsHandler),
    (rf"keypairs/{NAME}", KeypairHandler),
    (r"audit", AuditHandler),
]
