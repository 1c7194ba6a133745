"""Request bodies of the REST API, one pydantic model each.

Unknown fields, wrong types and bad names are refused before anything is
read from or written to the database; the same models feed the OpenAPI
document (``quota_service.openapi``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from . import images
from . import names
from . import sizes
from .errors import Invalid
from .models import Role

#: names are checked by ``names`` (messages that say what is wrong); the
#: OpenAPI document shows the same patterns
EntityName = Annotated[StrictStr, Field(json_schema_extra={
    "pattern": f"^{names.ENTITY_NAME.pattern}$", "maxLength": 64}),
    AfterValidator(names.check_entity_name)]
UserName = Annotated[StrictStr, Field(json_schema_extra={
    "pattern": f"^{names.USER_NAME.pattern}$", "maxLength": 255}),
    AfterValidator(names.check_user_name)]


def _limit_slots(value):
    """A limit map over the registered slot types, amounts as canonical text."""
    from . import slots as slotlib

    return slotlib.to_text(slotlib.parse_request(value, limits=True))


#: one amount of a slot map: a decimal (integers too), or for ``mem`` a size
#: with a binary unit ("32G", "512 MiB": core/sizes.py)
SLOT_AMOUNT_SCHEMA = {
    "oneOf": [
        {"type": "string", "pattern": sizes.SIZE_PATTERN},
        {"type": "integer", "minimum": 0},
    ],
    "description": "an exact amount (a decimal string or an integer; never a float); "
                   "mem in bytes, or with a binary unit: '32G', '32 GiB', '512 MiB', "
                   "'1.5G' (K, M, G, T, P are powers of 1024; fractions of a byte are "
                   "refused)",
}

Slots = Annotated[
    dict[str, Any],
    BeforeValidator(_limit_slots),
    Field(
        json_schema_extra={
            "additionalProperties": SLOT_AMOUNT_SCHEMA,
            "example": {"cpu": "8", "mem": "32G", "gpu.shares": "2.5"},
        }
    ),
]


def _size(value):
    return sizes.parse_bytes(value)


def byte_size(maximum: int):
    """A size in bytes: an integer, or a string in binary units ("32G",
    "512 MiB", "1.5G"), read exactly (core/sizes.py); at most ``maximum``."""
    return Annotated[int, BeforeValidator(_size), Field(ge=0, le=maximum), WithJsonSchema({
        "oneOf": [{"type": "integer", "minimum": 0, "maximum": maximum},
                  {"type": "string", "pattern": sizes.SIZE_PATTERN}],
        "description": "bytes, or a size with a binary unit: '32G', '32 GiB', '512 MiB', "
                       "'1.5G' (K, M, G, T, P are powers of 1024; fractions of a byte are "
                       "refused)",
        "examples": [34359738368, "32G", "512 MiB"]})]


#: a folder size limit (bytes or "100G")
FolderSize = byte_size(2**60)
Description = Annotated[StrictStr, Field(max_length=4096)]
NameList = list[Annotated[StrictStr, AfterValidator(names.check_list_item)]]


def _utc(t: dt.datetime) -> dt.datetime:
    # SQLite keeps no offset: store every instant in UTC (naive means UTC)
    return t.astimezone(dt.timezone.utc) if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


UtcTime = Annotated[dt.datetime, AfterValidator(_utc)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


def clear_list(*fields: str):
    """The ``clear`` field of an update body: limits to set back to unlimited.

    In a PATCH, ``null`` means "unchanged"; ``"clear": ["max_vfolder_count"]``
    removes the limit. A field may not be both given and cleared.
    """
    return Annotated[list[Literal[fields]], Field(
        max_length=len(fields),
        description="limits to set back to unlimited (a null field is left unchanged)",
        json_schema_extra={"uniqueItems": True}), AfterValidator(_no_duplicates)]


def _no_duplicates(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError("names a field twice")
    return value


class Update(Body):
    """An update body: fields not given or null stay as they are."""

    @model_validator(mode="after")
    def _not_given_and_cleared(self):
        both = sorted(f for f in getattr(self, "clear", ()) if getattr(self, f) is not None)
        if both:
            raise ValueError(f"{', '.join(both)}: both given and cleared; send one or the other")
        return self


class DomainCreate(Body):
    name: EntityName
    description: Description = ""
    active: StrictBool = True
    total_resource_slots: Slots = {}
    allowed_vfolder_hosts: NameList = []
    allowed_images: NameList = []
    allow_first_login: StrictBool = False


class DomainUpdate(Body):
    description: Description | None = None
    active: StrictBool | None = None
    total_resource_slots: Slots | None = None
    allowed_vfolder_hosts: NameList | None = None
    allowed_images: NameList | None = None
    allow_first_login: StrictBool | None = None


class ProjectCreate(Body):
    name: EntityName
    description: Description = ""
    active: StrictBool = True
    total_resource_slots: Slots = {}
    max_concurrent_sessions: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    max_vfolder_count: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    max_vfolder_size: FolderSize | None = None
    allowed_vfolder_hosts: NameList = []


class ProjectUpdate(Update):
    description: Description | None = None
    active: StrictBool | None = None
    total_resource_slots: Slots | None = None
    max_concurrent_sessions: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    max_vfolder_count: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    max_vfolder_size: FolderSize | None = None
    allowed_vfolder_hosts: NameList | None = None
    clear: clear_list("max_concurrent_sessions", "max_vfolder_count", "max_vfolder_size") = []


class UserCreate(Body):
    name: UserName
    domain: EntityName
    role: Role = Role.user
    active: StrictBool = True


class UserUpdate(Body):
    domain: EntityName | None = None
    role: Role | None = None
    active: StrictBool | None = None
    resource_policy: EntityName | None = None


class KeypairCreate(Body):
    user: UserName | None = None
    resource_policy: EntityName | None = None
    expires_at: UtcTime | None = None


class KeypairUpdate(Body):
    active: StrictBool | None = None
    resource_policy: EntityName | None = None
    expires_at: UtcTime | None = None


class LoginEvent(Body):
    """Sent by the hub's authenticator for every login attempt."""

    username: StrictStr = Field(max_length=255)
    success: StrictBool
    source: StrictStr | None = Field(default=None, max_length=64)
    reason: StrictStr = Field(default="", max_length=1024)


def parse(model: type[Body], data: Any) -> Body:
    """Validate ``data`` against ``model``; a refusal names every bad field."""
    if not isinstance(data, dict):
        raise Invalid("request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        problems = []
        for err in e.errors(include_url=False, include_input=False):
            where = ".".join(str(p) for p in err["loc"]) or "body"
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown field"
            problems.append(f"{where}: {msg}")
        raise Invalid("; ".join(problems), detail=problems) from None


def changes(body: Body) -> dict[str, Any]:
    """The fields an update body actually sets (null means 'not given'), and
    None for each field it clears (``clear``: back to unlimited)."""
    given = body.model_dump(exclude_unset=True)
    cleared = given.pop("clear", None) or []
    return {k: v for k, v in given.items() if v is not None} | dict.fromkeys(cleared)


# --- scheduling ---------------------------------------------------

def _request_slots(value):
    from . import slots as slotlib

    amounts = slotlib.parse_request(value)
    if not amounts:  # {} or only zeros: a session with no resources at all
        raise ValueError("a session must ask for resources: at least one slot above 0 "
                         "(e.g. {\"cpu\": \"1\", \"mem\": \"1G\"})")
    return amounts


RequestSlots = Annotated[dict[str, Any], BeforeValidator(_request_slots)]
LimitSlots = Slots
Count = Annotated[int, Field(ge=0, le=1_000_000)]
Seconds = Annotated[int, Field(ge=1, le=10 * 365 * 86400)]
SessionType = Literal["interactive", "batch", "inference"]
GroupNames = list[EntityName]


#: utilization thresholds of a resource policy, percent per metric (idle reclamation)
Percent = Annotated[Decimal, Field(ge=0, le=100, decimal_places=2)]
Thresholds = dict[Literal["cpu", "mem", "gpu_util", "gpu_mem"], Percent]
ReclaimSeconds = Annotated[int, Field(ge=0, le=10 * 365 * 86400)]


class ResourcePolicyCreate(Body):
    name: EntityName
    total_resource_slots: LimitSlots = {}
    unspecified_limited: StrictBool = False
    max_concurrent_sessions: Count | None = None
    max_session_lifetime: Seconds | None = None
    idle_timeout: Seconds | None = None
    max_pending_sessions: Count | None = None
    max_pending_resource_slots: LimitSlots = {}
    max_gpus_per_session: Annotated[Decimal, Field(ge=0, le=1024, decimal_places=2)] | None = None
    allowed_resource_groups: GroupNames = []
    max_vfolder_count: Count | None = None
    max_vfolder_size: FolderSize | None = None
    allowed_vfolder_hosts: NameList = []
    utilization_window: Seconds | None = None
    utilization_grace: ReclaimSeconds | None = None
    utilization_thresholds: Thresholds | None = None
    utilization_operator: Literal["and", "or"] = "and"
    reclaim_warning: ReclaimSeconds | None = None
    keep_extension: Seconds | None = None
    max_keeps: Count | None = None


class ResourcePolicyUpdate(Update):
    total_resource_slots: LimitSlots | None = None
    unspecified_limited: StrictBool | None = None
    max_concurrent_sessions: Count | None = None
    max_session_lifetime: Seconds | None = None
    idle_timeout: Seconds | None = None
    max_pending_sessions: Count | None = None
    max_pending_resource_slots: LimitSlots | None = None
    max_gpus_per_session: Annotated[Decimal, Field(ge=0, le=1024, decimal_places=2)] | None = None
    allowed_resource_groups: GroupNames | None = None
    max_vfolder_count: Count | None = None
    max_vfolder_size: FolderSize | None = None
    allowed_vfolder_hosts: NameList | None = None
    utilization_window: Seconds | None = None
    utilization_grace: ReclaimSeconds | None = None
    utilization_thresholds: Thresholds | None = None
    utilization_operator: Literal["and", "or"] | None = None
    reclaim_warning: ReclaimSeconds | None = None
    keep_extension: Seconds | None = None
    max_keeps: Count | None = None
    clear: clear_list("max_concurrent_sessions", "max_session_lifetime", "idle_timeout",
                      "max_pending_sessions", "max_gpus_per_session", "max_vfolder_count",
                      "max_vfolder_size", "utilization_window", "utilization_grace",
                      "utilization_thresholds", "reclaim_warning", "keep_extension",
                      "max_keeps") = []


class ResourceGroupCreate(Body):
    name: EntityName
    description: Description = ""
    active: StrictBool = True
    #: what the group runs: every type unless said (``inference``: endpoints' replicas)
    session_types: list[SessionType] = ["interactive", "batch", "inference"]
    queue_order: Literal["fifo", "priority", "drf"] = "fifo"
    hol_passes: Annotated[int, Field(ge=0, le=1000)] = 3
    pending_timeout: Seconds | None = None


class ResourceGroupUpdate(Update):
    description: Description | None = None
    active: StrictBool | None = None
    session_types: list[SessionType] | None = None
    queue_order: Literal["fifo", "priority", "drf"] | None = None
    hol_passes: Annotated[int, Field(ge=0, le=1000)] | None = None
    pending_timeout: Seconds | None = None
    clear: clear_list("pending_timeout") = []


class Grant(Body):
    """Exactly one of: a domain, a project (``domain/project``), a user."""

    domain: EntityName | None = None
    project: Annotated[StrictStr, Field(pattern=r"^[a-z0-9][a-z0-9_-]*/[a-z0-9][a-z0-9_-]*$",
                                        max_length=129)] | None = None
    user: UserName | None = None


class DeviceSpec(Body):
    index: Annotated[int, Field(ge=0, le=1023)]
    model: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
    memory: byte_size(2**50) = 0
    #: the driver's device UUID (``GPU-...``, ``MIG-...``), as NVML reports it
    uuid: Annotated[StrictStr, Field(pattern=r"^((GPU|MIG)-[A-Za-z0-9/-]{1,90})?$")] = ""


SharingMode = Literal["", "mps", "hami", "framework"]


class NodeCreate(Body):
    name: Annotated[StrictStr, Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,254}$")]
    resource_group: EntityName
    capacity: LimitSlots
    devices: list[DeviceSpec] = []
    schedulable: StrictBool = True
    backend_url: Annotated[StrictStr, Field(max_length=1024)] = ""
    #: why GPU shares cannot be enforced on the node now ("" when they can)
    share_check: Annotated[StrictStr, Field(max_length=200)] = ""
    #: an admin lets the node take shares it cannot enforce ("shares not enforced")
    shares_unenforced: StrictBool = False
    #: how the node enforces GPU shares (its spawners' gpu_sharing_mode; "" not said)
    sharing_mode: SharingMode = ""


class NodeUpdate(Body):
    capacity: LimitSlots | None = None
    devices: list[DeviceSpec] | None = None
    schedulable: StrictBool | None = None
    backend_url: Annotated[StrictStr, Field(max_length=1024)] | None = None
    share_check: Annotated[StrictStr, Field(max_length=200)] | None = None
    shares_unenforced: StrictBool | None = None
    sharing_mode: SharingMode | None = None


def _server_name(value: str) -> str:
    if value and not value.strip("."):
        raise ValueError("a server name must not be only dots")
    return value


ImageName = Annotated[StrictStr, Field(max_length=images.MAX_NAME,
                                       json_schema_extra={"example": "hubgrid/base:latest"}),
                      AfterValidator(images.check_name)]
#: a JupyterHub named server ("" for the default server)
ServerName = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9._-]{0,255}$"),
                       AfterValidator(_server_name)]
Command = Annotated[StrictStr, Field(max_length=4096)]


class AllocationCreate(Body):
    project: EntityName
    resource_group: EntityName
    slots: RequestSlots
    gpu_models: list[Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]] = []
    session_type: SessionType = "interactive"
    priority: Annotated[int, Field(ge=0, le=100)] = 0
    #: an image of the registry the caller's domain may use (none: the
    #: backend has no images, e.g. local processes)
    image: ImageName | None = None
    server_name: ServerName = ""
    #: what a batch session runs (required for batch, refused for interactive)
    command: Command | None = None

    @model_validator(mode="after")
    def _command_iff_batch(self):
        if self.session_type == "batch" and not (self.command or "").strip():
            raise ValueError("command: a batch session needs a command")
        if self.session_type != "batch" and self.command is not None:
            raise ValueError("command: only batch sessions take a command")
        if self.session_type == "inference" and getattr(self, "endpoint", None) is None:
            raise ValueError("session_type: an inference session is a replica of an endpoint, "
                             "started by the endpoint (POST endpoints), not asked for alone")
        if self.session_type != "inference" and getattr(self, "endpoint", None) is not None:
            raise ValueError("endpoint: only inference sessions belong to an endpoint")
        return self


class InternalAllocationCreate(AllocationCreate):
    """An allocation the hub asks for on behalf of ``user``."""

    user: UserName
    #: the endpoint an ``inference`` session is a replica of (its id)
    endpoint: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{32}$")] | None = None
    #: vfolders to mount, by name or id (dot-folders are mounted anyway)
    vfolders: Annotated[list[Annotated[StrictStr, Field(min_length=1, max_length=64)]],
                        Field(max_length=64)] = []


# --- images -----------------------------------------------------------

def _min_slots(value):
    return images.check_min_slots(value)


MinSlots = Annotated[
    dict[str, Any],
    BeforeValidator(_min_slots),
    Field(json_schema_extra={
        "additionalProperties": {"type": "string"},
        "example": {"cpu": "0.5", "mem": "256M"},
    }),
]


class ServicePortBody(Body):
    """An app a session of the image serves, at ``path`` under the server's URL."""

    name: Annotated[StrictStr, Field(pattern=r"^[a-z0-9-]{1,32}$")]
    protocol: Literal["http"] = "http"
    path: Annotated[StrictStr, Field(max_length=256)] = ""


def _ports(value: list[ServicePortBody]) -> list[dict]:
    return [p.as_dict() for p in images.check_ports([p.model_dump() for p in value])]


ServicePorts = Annotated[list[ServicePortBody], AfterValidator(_ports)]
LabelMap = Annotated[
    dict[Annotated[StrictStr, Field(max_length=256)], Annotated[StrictStr, Field(max_length=images.MAX_LABEL_VALUE)]],
    Field(max_length=images.MAX_LABELS),
]


class ImageCreate(Body):
    """An image added by hand: its labels (as the image carries them) and/or
    its minimum and service ports given directly (these win over the labels)."""

    name: ImageName
    labels: LabelMap = {}
    min_slots: MinSlots | None = None
    service_ports: ServicePorts | None = None
    domains: list[EntityName] = []


class ImageUpdate(Body):
    min_slots: MinSlots | None = None
    service_ports: ServicePorts | None = None
    domains: list[EntityName] | None = None


# --- virtual folders ------------------------------------------------------

FolderName = Annotated[StrictStr, Field(max_length=256,
                                        json_schema_extra={"example": "datasets"}),
                       AfterValidator(names.check_folder_name)]
Permission = Literal["ro", "rw", "wd"]
#: a project of the caller's domain, or ``domain/project``
ProjectRef = Annotated[StrictStr, Field(
    pattern=r"^([a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9_-]*$", max_length=129)]


class VFolderCreate(Body):
    """A folder of the caller, or (admins) of a project with the permission
    its members get (default rw)."""

    name: FolderName
    host: EntityName | None = None
    usage_mode: Literal["general", "data", "model"] = "general"
    project: ProjectRef | None = None
    permission: Permission | None = None


class VFolderUpdate(Body):
    name: FolderName


class InvitationCreate(Body):
    user: UserName
    permission: Permission = "ro"


# --- the admin pages ---------------------------------------------------

class QueueChange(Body):
    """Change a pending request: its ``priority``, and/or its place: exactly
    one of ``before``/``after`` (another request's id) or ``position`` (0:
    the front of the requests the caller may move)."""

    priority: Annotated[int, Field(ge=0, le=100)] | None = None
    before: Annotated[StrictStr, Field(max_length=36)] | None = None
    after: Annotated[StrictStr, Field(max_length=36)] | None = None
    position: Annotated[int, Field(ge=0, le=1_000_000)] | None = None

    @model_validator(mode="after")
    def _something(self):
        places = [x for x in (self.before, self.after, self.position) if x is not None]
        if len(places) > 1:
            raise ValueError("give at most one of before, after or position")
        if self.priority is None and not places:
            raise ValueError("give a priority, or a place: before, after or position")
        return self


class UsersBulk(Body):
    """Users to add, one object per row: name (required), domain (default:
    the caller's), role, projects (a list), resource_policy, active. A
    text/csv body with a header row of the same names does the same."""

    users: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=1000)]


# --- model serving -----------------------------------------------------

Replicas = Annotated[int, Field(ge=0, le=64)]


class EndpointCreate(Body):
    """An endpoint of a project the caller is a member of: ``replicas``
    replicas of ``image`` with ``slots`` each, over the model folder
    ``model_folder`` (a folder id), mounted read-only at /models."""

    name: EntityName
    project: EntityName
    resource_group: EntityName
    image: ImageName
    model_folder: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    slots: RequestSlots
    replicas: Replicas = 1
    public: StrictBool = False


class AutoscalingRule(Body):
    """Change the replicas by ``step`` when ``metric`` (per routed replica)
    compares to ``threshold``, within ``min_replicas``..``max_replicas``, at
    most once per ``cooldown`` seconds (serving/autoscale.py)."""

    metric: Literal["requests_per_second", "in_flight"]
    comparator: Literal["gt", "ge", "lt", "le"]
    threshold: Annotated[StrictStr, Field(pattern=r"^[0-9]{1,9}(\.[0-9]{1,3})?$")]
    step: Annotated[int, Field(ge=-64, le=64)]
    cooldown: Annotated[int, Field(ge=0, le=86400)] = 300
    min_replicas: Annotated[int, Field(ge=0, le=64)] = 1
    max_replicas: Annotated[int, Field(ge=0, le=64)] = 4


class EndpointUpdate(Body):
    replicas: Replicas | None = None
    public: StrictBool | None = None
    #: replaces every rule ([] removes them)
    autoscaling: Annotated[list[AutoscalingRule], Field(max_length=8)] | None = None


class EndpointTokenCreate(Body):
    """A bearer token, valid for ``expires_in_days`` days (at most the
    service's ``endpoint_token_max_days``)."""

    expires_in_days: Annotated[int, Field(ge=1, le=3650)]
