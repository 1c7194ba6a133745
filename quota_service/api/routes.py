"""The URL table of the service: every (pattern, handler) pair, in the order
tornado tries them.

Path parameters are named groups (``(?P<domain>[^/]+)``): tornado passes
them to the verbs as keyword arguments of those names, and the OpenAPI
document (``api.openapi``) takes its parameter names from them.
"""

from __future__ import annotations

from tornado import web

from . import (admin, chats, files, images, internal, livemounts, modelstore, reclaim, scheduling,
               serving, servingroutes, sessionstop, sessionview, tenancy, uploads, usage,
               vfolders)
from .base import APIHandler, JSONNotFoundHandler, OpenAPIHandler
from .browser import (ConsoleHandler, ConsoleStaticHandler, HomeHandler,
                      OAuthCallbackHandler)
from .consolegateway import ConsoleGatewayHandler
from .reconcile import ReconcileHandler
from .metrics import MetricsHandler


def segment(name: str) -> str:
    """A path parameter of one segment (URL-decoded by tornado)."""
    return rf"(?P<{name}>[^/]+)"


DOMAIN, PROJECT, USER = segment("domain"), segment("project"), segment("user")
ALLOCATION, FOLDER, INVITATION = (segment("allocation_id"), segment("folder_id"),
                                  segment("invitation_id"))
ENDPOINT = segment("endpoint_id")
STORE_MODEL = segment("model_id")
#: an image name: one URL-encoded segment or the raw 'repository/path:tag'
IMAGE = r"(?P<image>.+)"

#: (path under the API root, handler)
API: list[tuple[str, type[APIHandler]]] = [
    # the hub's internal routes first: tornado tries the routes in order, and
    # pending spawners' long-polls are most of the requests
    (r"internal/login", internal.LoginHandler),
    (rf"internal/identity/{USER}", internal.IdentityHandler),
    (r"internal/sync", internal.SyncHandler),
    (rf"internal/spawn-choices/{USER}", internal.SpawnChoicesHandler),
    (r"internal/serving/routes", servingroutes.RoutesHandler),
    (r"internal/serving/report", servingroutes.ReportHandler),
    (r"internal/serving/wake", servingroutes.WakeHandler),
    (r"internal/allocations", internal.InternalAllocationsHandler),
    (rf"internal/allocations/{ALLOCATION}", internal.InternalAllocationHandler),
    (rf"internal/allocations/{ALLOCATION}/logs", internal.InternalLogHandler),
    (rf"internal/allocations/{ALLOCATION}/mounts", livemounts.InternalMountsHandler),
    # tenancy
    (r"me", tenancy.MeHandler),
    (r"domains", tenancy.DomainsHandler),
    (rf"domains/{DOMAIN}", tenancy.DomainHandler),
    (rf"domains/{DOMAIN}/totals", admin.DomainTotalsHandler),
    (r"projects", tenancy.ProjectsHandler),
    (rf"domains/{DOMAIN}/projects", tenancy.DomainProjectsHandler),
    (rf"domains/{DOMAIN}/projects/{PROJECT}", tenancy.ProjectHandler),
    (rf"domains/{DOMAIN}/projects/{PROJECT}/members", tenancy.MembersHandler),
    (rf"domains/{DOMAIN}/projects/{PROJECT}/members/{USER}", tenancy.MemberHandler),
    (r"users", tenancy.UsersHandler),
    (r"users/bulk", admin.UsersBulkHandler),  # before users/{user}
    (rf"users/{USER}", tenancy.UserHandler),
    (r"keypairs", tenancy.KeypairsHandler),
    (rf"keypairs/{segment('access_key')}", tenancy.KeypairHandler),
    (r"audit", tenancy.AuditHandler),
    # scheduling
    (r"resource-policies", scheduling.PoliciesHandler),
    (rf"resource-policies/{segment('policy')}", scheduling.PolicyHandler),
    (r"resource-presets", scheduling.PresetsHandler),
    (r"resource-groups", scheduling.GroupsHandler),
    (rf"resource-groups/{segment('group')}", scheduling.GroupHandler),
    (rf"resource-groups/{segment('group')}/grants", scheduling.GrantsHandler),
    (r"nodes", scheduling.NodesHandler),
    (rf"nodes/{segment('node')}", scheduling.NodeHandler),
    # the admin pages
    (rf"nodes/{segment('node')}/sessions", admin.NodeSessionsHandler),
    (r"node-sessions", admin.NodesSessionsHandler),
    (rf"resource-groups/{segment('group')}/queue", admin.QueueHandler),
    (rf"resource-groups/{segment('group')}/queue/{ALLOCATION}", admin.QueuedHandler),
    (r"allocations", scheduling.AllocationsHandler),
    (r"allocations/dry-run", scheduling.DryRunHandler),
    (rf"allocations/{ALLOCATION}", scheduling.AllocationHandler),
    (rf"allocations/{ALLOCATION}/logs", scheduling.AllocationLogHandler),
    (rf"allocations/{ALLOCATION}/mounts", livemounts.AllocationMountsHandler),
    (rf"allocations/{ALLOCATION}/stop", sessionstop.AllocationStopHandler),  # admin pages
    # a session's own face
    (rf"allocations/{ALLOCATION}/history", sessionview.HistoryHandler),
    (rf"allocations/{ALLOCATION}/usage", sessionview.UsageHandler),
    # idle reclamation
    (rf"allocations/{ALLOCATION}/activity", reclaim.ActivityHandler),
    (rf"allocations/{ALLOCATION}/keep", reclaim.KeepHandler),
    (r"reclaim/events", reclaim.ReclaimEventsHandler),
    # usage accounting
    (r"usage", usage.UsageHandler),
    # reconcile
    (r"reconcile", ReconcileHandler),
    # images
    (r"images", images.ImagesHandler),
    (r"images/scan", images.ImageScanHandler),
    (rf"images/{IMAGE}", images.ImageHandler),
    (r"openapi\.json", OpenAPIHandler),
    # virtual folders, their invitations and shares
    (r"vfolder-hosts", vfolders.HostsHandler),
    (r"vfolders", vfolders.FoldersHandler),
    (rf"vfolders/{FOLDER}", vfolders.FolderHandler),
    (rf"vfolders/{FOLDER}/restore", vfolders.RestoreHandler),
    (rf"vfolders/{FOLDER}/purge", vfolders.PurgeHandler),
    (rf"vfolders/{FOLDER}/invitations", vfolders.FolderInvitationsHandler),
    (rf"vfolders/{FOLDER}/shares", vfolders.SharesHandler),
    (rf"vfolders/{FOLDER}/shares/{USER}", vfolders.ShareHandler),
    (r"invitations", vfolders.InvitationsHandler),
    (rf"invitations/{INVITATION}", vfolders.InvitationHandler),
    (rf"invitations/{INVITATION}/accept", vfolders.AcceptHandler),
    (rf"invitations/{INVITATION}/reject", vfolders.RejectHandler),
    # the files inside a folder
    (rf"vfolders/{FOLDER}/files", files.FilesHandler),
    (rf"vfolders/{FOLDER}/download", files.DownloadHandler),
    (rf"vfolders/{FOLDER}/upload", uploads.UploadHandler),
    (rf"vfolders/{FOLDER}/mkdir", files.MkdirHandler),
    (rf"vfolders/{FOLDER}/move", files.MoveHandler),
    (rf"vfolders/{FOLDER}/tus", uploads.TusCreateHandler),
    (rf"vfolders/{FOLDER}/tus/{segment('upload_id')}", uploads.TusUploadHandler),
    # model serving
    (r"endpoints", serving.EndpointsHandler),
    (r"endpoints/validate", serving.ValidateHandler),  # before endpoints/{id}
    (rf"endpoints/{ENDPOINT}", serving.EndpointHandler),
    (rf"endpoints/{ENDPOINT}/tokens", serving.TokensHandler),
    (rf"endpoints/{ENDPOINT}/tokens/{segment('token_id')}", serving.TokenHandler),
    # the Model Store
    (r"model-store", modelstore.StoreHandler),
    (rf"model-store/{STORE_MODEL}", modelstore.StoreEntryHandler),
    (rf"model-store/{STORE_MODEL}/check", modelstore.StoreCheckHandler),
    (rf"model-store/{STORE_MODEL}/deploy", modelstore.StoreDeployHandler),
    # chat history, per user
    (r"chats", chats.ChatsHandler),
    (rf"chats/{segment('chat_id')}", chats.ChatHandler),
    (rf"chats/{segment('chat_id')}/messages", chats.MessagesHandler),
    # Prometheus
    (r"metrics", MetricsHandler),
]


#: where the console's calls go, under the service's prefix: the console's
#: base URL + the Lab's ``hubgrid/api/`` (labextension/src/request.ts), so the
#: Lab's own request code works there unchanged
CONSOLE_API = "console/hubgrid/api/"
#: where the console's Chat calls the serving gateway (api/consolegateway.py),
#: as the Lab's calls its server's ``hubgrid/gateway/``
CONSOLE_GATEWAY = "console/hubgrid/gateway/"


def console_api() -> list[tuple[str, type[APIHandler]]]:
    """The API as the console calls it: every user route (not the hub's
    internal ones), the very same handlers."""
    return [(path, handler) for path, handler in API if handler.caller_kind == "user"]


def service_routes(service_prefix: str, api_prefix: str,
                   ) -> list[tuple[str, type[web.RequestHandler]]]:
    """Every route of the service, as tornado patterns: the API (with or
    without a trailing slash), the browser's entry points (OAuth through the
    hub; the console page, its bundle and the API again under it), then a
    JSON 404 for any other path under either API."""
    prefix = service_prefix.rstrip("/") + "/"
    console = prefix + CONSOLE_API
    return [(api_prefix + path + "/?", handler) for path, handler in API] + [
        (console + path + "/?", handler) for path, handler in console_api()] + [
        (prefix + CONSOLE_GATEWAY + "(.*)", ConsoleGatewayHandler),
        (prefix + "oauth_callback", OAuthCallbackHandler),
        (prefix + "?", HomeHandler),
        (prefix + "console/?", ConsoleHandler),
        (prefix + "console/static/(.*)", ConsoleStaticHandler),
        (api_prefix + ".*", JSONNotFoundHandler),
        (console + ".*", JSONNotFoundHandler),
    ]
