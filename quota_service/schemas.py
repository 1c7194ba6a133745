"""Request bodies of the REST API, one pydantic model each.

Unknown fields, wrong types and bad names are refused before anything is
read from or written to the database; the same models feed the OpenAPI
document (``quota_service.openapi``).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
)

from . import names
from .errors import Invalid
from .models import Role

EntityName = Annotated[StrictStr, AfterValidator(names.check_entity_name)]
UserName = Annotated[StrictStr, AfterValidator(names.check_user_name)]
Slots = Annotated[
    dict[str, Any],
    BeforeValidator(names.check_slots),
    Field(
        json_schema_extra={
            "additionalProperties": {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"},
            "example": {"cpu": "8", "mem": "34359738368", "gpu.shares": "2.5"},
        }
    ),
]
Description = Annotated[StrictStr, Field(max_length=4096)]
NameList = list[Annotated[StrictStr, AfterValidator(names.check_list_item)]]


def _utc(t: dt.datetime) -> dt.datetime:
    # SQLite keeps no offset: store every instant in UTC (naive means UTC)
    return t.astimezone(dt.timezone.utc) if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


UtcTime = Annotated[dt.datetime, AfterValidator(_utc)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class ProjectUpdate(Body):
    description: Description | None = None
    active: StrictBool | None = None
    total_resource_slots: Slots | None = None


class UserCreate(Body):
    name: UserName
    domain: EntityName
    role: Role = Role.user
    active: StrictBool = True


class UserUpdate(Body):
    domain: EntityName | None = None
    role: Role | None = None
    active: StrictBool | None = None


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
    """The fields an update body actually sets (null means 'not given')."""
    return {k: v for k, v in body.model_dump(exclude_unset=True).items() if v is not None}
