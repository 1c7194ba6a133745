"""Spawn options: one schema for the spawn form and the REST API's user_options."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from quota_service import slots as slotlib
from quota_service.schemas import EntityName

Amount = Annotated[Decimal, Field(ge=0, allow_inf_nan=False)]
Model = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


class SessionOptions(BaseModel):
    """What a user asks for when starting a session."""

    model_config = ConfigDict(extra="forbid")

    project: EntityName | None = None
    resource_group: EntityName = "default"
    cpu: Amount = Decimal(1)
    mem: Annotated[StrictStr, Field(max_length=32)] | int = "2G"
    gpu: Annotated[int, Field(ge=0, le=1024)] = 0
    gpu_shares: Amount = Decimal(0)
    gpu_models: list[Model] = []
    vfolders: list[EntityName] = []
    session_type: Literal["interactive", "batch"] = "interactive"
    command: Annotated[StrictStr, Field(max_length=4096)] | None = None

    def slots(self) -> dict[str, Decimal]:
        """The request as a validated slot map (ValueError with the reason)."""
        raw = {"cpu": self.cpu, "mem": self.mem, "gpu": self.gpu, "gpu.shares": self.gpu_shares}
        return slotlib.parse_request(raw)


class OptionsError(ValueError):
    pass


def parse_options(data: dict | None) -> tuple[SessionOptions, dict[str, Decimal]]:
    """Validated options and their slot map; OptionsError names the problem."""
    try:
        opts = SessionOptions.model_validate(data or {})
        return opts, opts.slots()
    except ValidationError as e:
        problems = [
            f"{'.'.join(str(x) for x in err['loc']) or 'options'}: "
            + ("unknown option" if err["type"] == "extra_forbidden" else err["msg"])
            for err in e.errors(include_url=False, include_input=False)
        ]
        raise OptionsError("; ".join(problems)) from None
    except ValueError as e:
        raise OptionsError(str(e)) from None


def options_from_form(formdata: dict[str, list[str]]) -> dict:
    """The spawn form's fields (lists of strings) as user_options."""
    def one(name, default=None):
        values = formdata.get(name) or []
        return values[0].strip() if values and values[0].strip() != "" else default

    out = {}
    for key in ("project", "resource_group", "cpu", "mem", "gpu_shares", "session_type", "command"):
        value = one(key)
        if value is not None:
            out[key] = value
    gpu = one("gpu")
    if gpu is not None:
        out["gpu"] = int(gpu) if gpu.isdigit() else gpu
    models = [m for m in formdata.get("gpu_models", []) if m.strip()]
    if models:
        out["gpu_models"] = models
    return out
