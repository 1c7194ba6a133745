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

    def get(self):
        """The images the caller's domain may use (superadmins: all)."""
        with self.transaction() as s:
            self.finish_json(registry.list_images(s, self.principal))

    def post(self):
        """Add an image (superadmins)."""
        body = parse(ImageCreate, self.json_body())
        self.audit_target = body.name
        with self.transaction() as s:
            model = registry.create_image(s, self.principal, body, self.now())
        self.created(model, self.service.api_url("images", body.name))


class ImageScanHandler(APIHandler):
    resource = "image"
    success = {"post": "200"}

    async def post(self):
        """Scan the Docker hosts for session images and record them (superadmins)."""
        self.audit_target = "scan"
        authz.require_superadmin(self.principal, "scan for images")
        report = await self.service.scan_images()
        self.audit_detail = report.summary
        self.finish_json(report.as_dict())

    def audit_action(self, method: str) -> str:
        return "image.scan"


class ImageHandler(APIHandler):
    resource = "image"
    bodies = {"patch": ImageUpdate}

    def get(self, name):
        """One image (404 when the caller's domain may not use it)."""
        self.audit_target = name
        with self.transaction() as s:
            self.finish_json(registry.get_image(s, self.principal, name))

    def patch(self, name):
        """Change who may use an image, its minimum or its service ports (superadmins)."""
        self.audit_target = name
        body = parse(ImageUpdate, self.json_body())
        with self.transaction() as s:
            model = registry.update_image(s, self.principal, name, body, self.now())
        self.finish_json(model)

    def delete(self, name):
        """Remove an image from the registry (superadmins); running sessions go on."""
        self.audit_target = name
        with self.transaction() as s:
            registry.delete_image(s, self.principal, name)
        self.no_content()


#: an image name: one URL-encoded segment or the raw 'repository/path:tag'
IMAGE = r"(.+)"

routes = [
    (r"images", ImagesHandler),
    (r"images/scan", ImageScanHandler),
    (rf"images/{IMAGE}", ImageHandler),
]
