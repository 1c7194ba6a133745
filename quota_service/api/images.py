"""REST handlers for the image registry.

Image names hold '/' and ':': a name is accepted URL-encoded
(``images/hubgrid%2Fbase%3Alatest``) and as a raw path
(``images/hubgrid/base:latest``).
"""

from __future__ import annotations

from ..core import authz

from ..sessions import registry
from ..core.schemas import ImageCreate, ImageUpdate, parse
from .base import APIHandler


class ImagesHandler(APIHandler):
    resource = "image"
    bodies = {"post": ImageCreate}

    async def get(self):
        """The images the caller's domain may use (superadmins: all)."""
        self.finish_json(await self.db(lambda s: registry.list_images(s, self.principal)))

    async def post(self):
        """Add an image (superadmins)."""
        body = parse(ImageCreate, self.json_body())
        self.audit_target = body.name
        now = self.now()
        model = await self.db(lambda s: registry.create_image(s, self.principal, body, now))
        self.created(model, self.api_url("images", body.name))


class ImageScanHandler(APIHandler):
    resource = "image"
    success = {"post": "200"}

    async def post(self):
        """Scan the Docker hosts for session images and record them (superadmins)."""
        self.audit_target = "scan"
        authz.require_superadmin(self.principal, "scan for images")
        report = await self.scan_images()
        self.audit_detail = report.summary
        self.finish_json(report.as_dict())

    def audit_action(self, method: str) -> str:
        return "image.scan"


class ImageHandler(APIHandler):
    resource = "image"
    bodies = {"patch": ImageUpdate}

    async def get(self, image):
        """One image (404 when the caller's domain may not use it)."""
        self.audit_target = image
        self.finish_json(await self.db(lambda s: registry.get_image(s, self.principal, image)))

    async def patch(self, image):
        """Change who may use an image, its minimum or its service ports (superadmins)."""
        self.audit_target = image
        body = parse(ImageUpdate, self.json_body())
        now = self.now()
        model = await self.db(lambda s: registry.update_image(s, self.principal, image, body,
                                                              now))
        self.finish_json(model)

    async def delete(self, image):
        """Remove an image from the registry (superadmins); running sessions go on."""
        self.audit_target = image
        await self.db(lambda s: registry.delete_image(s, self.principal, image))
        self.no_content()
