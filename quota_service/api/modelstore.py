"""REST handlers of the Model Store: published model folders,
their cards, and the check and deploy of one as an endpoint
(``serving/store.py``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictStr

from ..core.errors import Hidden
from ..core.schemas import Body, EntityName, ImageName, Replicas, RequestSlots, parse
from ..serving import store
from .base import APIHandler

FolderId = Annotated[StrictStr, Field(min_length=1, max_length=64)]


class StorePublish(Body):
    """Publish the model folder ``folder`` (one you may read, holding a
    valid model-definition.yaml): to ``domain`` (its admins), or to every
    domain (no domain: superadmins). ``slots``: one replica's, by default
    the definition's ``metadata.min_resource``; ``name``: what a deploy
    names its endpoint unless told (by default the folder's name)."""

    folder: FolderId
    image: ImageName
    domain: EntityName | None = None
    slots: RequestSlots | None = None
    name: EntityName | None = None


class StoreUpdate(Body):
    """Change an entry; its card is read again from the folder."""

    image: ImageName | None = None
    slots: RequestSlots | None = None
    name: EntityName | None = None


class StoreDeploy(Body):
    """Deploy an entry as an endpoint of ``project`` (you are a member) on
    ``resource_group``, with ``replicas`` replicas of the entry's slots."""

    project: EntityName
    resource_group: EntityName
    name: EntityName | None = None
    replicas: Replicas = 1


class _OnlyDenials:
    """A question, not a write: only a denial is worth an access-log record."""

    def audit_record(self):
        if self.get_status() in (401, 403) or isinstance(getattr(self, "_api_error", None),
                                                         Hidden):
            return super().audit_record()
        return None


class StoreHandler(APIHandler):
    resource = "store-model"
    bodies = {"post": StorePublish}

    async def get(self):
        """The published models the caller may see (every domain's and their domain's)."""
        self.finish_json(await self.db(lambda s: store.list_entries(s, self.principal)))

    async def post(self):
        """Publish a model folder (admins of the scope); 422 with every problem."""
        body = parse(StorePublish, self.json_body())
        self.audit_target, self.audit_domain = body.folder, body.domain
        now, hosts = self.now(), self.vfolder_hosts
        model = await self.db(lambda s: store.publish(s, self.principal, body, hosts, now))
        self.audit_target = model["id"]
        self.created(model, self.api_url("model-store", model["id"]))


class StoreEntryHandler(APIHandler):
    resource = "store-model"
    bodies = {"patch": StoreUpdate}

    async def get(self, model_id):
        """One published model and its card."""
        self.finish_json(await self.db(lambda s: store.get(s, self.principal, model_id)))

    async def patch(self, model_id):
        """Change its image, slots or name (admins of its scope); the card is read again."""
        self.audit_target = model_id
        body = parse(StoreUpdate, self.json_body())
        now, hosts = self.now(), self.vfolder_hosts
        model = await self.db(
            lambda s: store.update(s, self.principal, model_id, body, hosts, now))
        self.audit_domain = model["domain"]
        self.finish_json(model)

    async def delete(self, model_id):
        """Unpublish (admins of its scope); 409 while endpoints deployed from it exist."""
        self.audit_target = model_id
        self.audit_domain = await self.db(
            lambda s: store.unpublish(s, self.principal, model_id))
        self.no_content()


class StoreCheckHandler(_OnlyDenials, APIHandler):
    resource = "store-model"
    bodies = {"post": StoreDeploy}
    success = {"post": "200"}

    async def post(self, model_id):
        """The checks of a deploy for the caller, nothing written: {ok, problems, warnings}."""
        self.audit_target = model_id
        body = parse(StoreDeploy, self.json_body())
        now, hosts = self.now(), self.vfolder_hosts
        self.finish_json(await self.db(
            lambda s: store.check(s, self.principal, model_id, body, hosts, now)))

    def audit_action(self, method: str) -> str:
        return "store-model.check"


class StoreDeployHandler(APIHandler):
    resource = "store-model"
    bodies = {"post": StoreDeploy}

    async def post(self, model_id):
        """Deploy as an endpoint (201, the endpoint); 422 with every problem of the check."""
        self.audit_target = model_id
        body = parse(StoreDeploy, self.json_body())
        now, hosts = self.now(), self.vfolder_hosts
        model = await self.db(
            lambda s: store.deploy(s, self.principal, model_id, body, hosts, now))
        self.audit_target, self.audit_domain = f"{model_id}:{model['id']}", model["domain"]
        self.serve_soon()
        self.created(model, self.api_url("endpoints", model["id"]))

    def audit_action(self, method: str) -> str:
        return "store-model.deploy"
