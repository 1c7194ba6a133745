"""The model-serving world of the service-level tests (endpoints, the
Model Store, chats), on the served service of tests/service_app.py.

:func:`infer_world` adds what each of them starts from: the default
resource policy, a resource group ``infer`` granted to acme with one node,
and the inference image (every domain). :class:`ServingEnv` calls the API
as a named user and asserts each answer's status; each test module
subclasses it with its own helpers and keeps its own ``env`` fixture
(other modules import those fixtures by name).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import sqlalchemy as sa

from quota_service.core.models import AuditEntry, ResourcePolicy

REPO = Path(__file__).resolve().parent.parent
#: the echo-chat model folder's definition (examples/models/echo-chat)
CHAT = (REPO / "examples/models/echo-chat/model-definition.yaml").read_bytes()
IMAGE = "hubgrid/inference:latest"
INFERENCE_LABEL = {"ai.hubgrid.inference-image": "1"}
#: the one node of the group ``infer``: 4 CPUs, 8 GiB
NODE = {"name": "infer-1", "resource_group": "infer", "capacity": {"cpu": "4", "mem": "8G"}}


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class ServingEnv:
    """The served service, called as a user (tests/conftest.py's world)."""

    def __init__(self, served):
        self.served = served
        self.world = served.world
        #: the model folder the module's fixture made ("" until then)
        self.folder = ""

    async def call(self, method, path, user=None, json_body=None, body=None):
        return await self.served.call(method, path, user, json_body=json_body, body=body)

    async def ok(self, method, path, user, status, json_body=None, body=None):
        """The answer's JSON, once its status is ``status``."""
        r, data = await self.call(method, path, user, json_body, body)
        assert r.code == status, (method, path, r.code, data)
        return data

    async def folder_with(self, user: str, definition: bytes | None, name=None) -> str:
        """A new folder of ``user``'s, holding ``definition`` as its model-definition.yaml."""
        f = await self.ok("POST", "vfolders", user, 201, {"name": name or uniq("model")})
        if definition is not None:
            await self.put(user, f["id"], definition)
        return f["id"]

    async def put(self, user: str, folder: str, definition: bytes) -> None:
        await self.ok("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml&overwrite=true",
                      user, 201, body=definition)

    def audit(self, action: str) -> list[AuditEntry]:
        with self.world.session_factory() as s:
            return list(s.scalars(sa.select(AuditEntry).where(AuditEntry.action == action)
                                 .order_by(AuditEntry.id)))


async def infer_world(env: ServingEnv, node: dict = NODE, images: tuple[dict, ...] = ()) -> dict:
    """The default policy, the group ``infer`` granted to acme with ``node``
    in it, the inference image and ``images``; the group as made."""
    with env.world.tx() as s:
        if s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == "default")) is None:
            s.add(ResourcePolicy(name="default"))
    group = await env.ok("POST", "resource-groups", "root", 201, {"name": "infer"})
    await env.ok("PUT", "resource-groups/infer/grants", "root", 201, {"domain": "acme"})
    await env.ok("POST", "nodes", "root", 201, node)
    for image in ({"name": IMAGE, "labels": INFERENCE_LABEL}, *images):
        await env.ok("POST", "images", "root", 201, image)
    return group
