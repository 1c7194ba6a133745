"""Spawn options: one schema for the spawn form and the REST API's user_options."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, model_validator

from quota_service.core import names as namelib
from quota_service.core import slots as slotlib
from quota_service.core.schemas import EntityName

Amount = Annotated[Decimal, Field(ge=0, allow_inf_nan=False)]
Model = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
#: an image of the service's registry, ``repository:tag``
ImageName = Annotated[StrictStr, Field(pattern=r"^[a-z0-9][a-z0-9._/-]{0,199}(:[A-Za-z0-9_.-]{1,128})?$")]


class SessionOptions(BaseModel):
    """What a user asks for when starting a session."""

    model_config = ConfigDict(extra="forbid")

    project: EntityName | None = None
    resource_group: EntityName = "default"
    image: ImageName | None = None
    cpu: Amount = Decimal(1)
    mem: Annotated[StrictStr, Field(max_length=32)] | int = "2G"
    gpu: Annotated[int, Field(ge=0, le=1024)] = 0
    gpu_shares: Amount = Decimal(0)
    gpu_models: list[Model] = []
    #: vfolders to mount, by name or id (the service resolves and checks them)
    vfolders: Annotated[list[Annotated[StrictStr, Field(min_length=1, max_length=64)]],
                        Field(max_length=64)] = []
    session_type: Literal["interactive", "batch", "inference"] = "interactive"
    command: Annotated[StrictStr, Field(min_length=1, max_length=4096)] | None = None
    #: an inference session's endpoint (its id): the service checks the
    #: request against it (docs/serving.md)
    endpoint: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{32}$")] | None = None

    @model_validator(mode="after")
    def _command_iff_batch(self):
        if self.session_type == "batch" and not (self.command or "").strip():
            raise ValueError("a batch session needs a command")
        if self.session_type != "batch" and self.command is not None:
            raise ValueError("only batch sessions take a command")
        if (self.session_type == "inference") != (self.endpoint is not None):
            raise ValueError("an inference session, and only one, names its endpoint")
        return self

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
            + ("unknown option" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, "))
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
    for key in ("project", "resource_group", "image", "cpu", "mem", "gpu_shares", "session_type",
                "command"):
        value = one(key)
        if value is not None:
            out[key] = value
    gpu = one("gpu")
    if gpu is not None:
        out["gpu"] = int(gpu) if gpu.isdigit() else gpu
    if out.get("session_type", "interactive") == "interactive":
        out.pop("command", None)  # the form always posts the field
    # a multi-select posts one value per item, a text field a comma list
    for key in ("gpu_models", "vfolders"):
        items = [m.strip() for v in formdata.get(key, []) for m in v.split(",") if m.strip()]
        if items:
            out[key] = items
    return out


# --- the spawn form ----------------------------------------------------------

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
)
#: an amount of a slot as people read it (memory in binary units: 256 MiB, not 268435456)
def _slot_amount(amount, slot: str) -> str:
    try:
        return namelib.format_slot(slot, Decimal(str(amount)))
    except ArithmeticError:  # not a number (the service sends exact decimals): as it is
        return str(amount)


TEMPLATES.filters["slot_amount"] = _slot_amount

SLOT_TITLES = {"cpu": "CPU cores", "mem": "Memory", "gpu": "GPUs", "gpu.shares": "GPU shares"}
GiB = Decimal(2**30)


def show_amount(slot: str, amount: str | None) -> str:
    """A remaining amount as the form shows it: memory in GiB, None as no limit."""
    if amount is None:
        return "no limit"
    if slot == "mem":
        gib = (Decimal(amount) / GiB).quantize(Decimal("0.01")).normalize()
        return f"{gib:f} GiB"
    return amount


def mem_field(amount: str) -> str:
    """Bytes as the memory field shows them, exactly: ``2G``, ``512M`` when
    whole, else the bytes."""
    value = Decimal(amount)
    for unit, power in (("T", 4), ("G", 3), ("M", 2)):
        if value and value % (1024 ** power) == 0:
            return f"{value // 1024 ** power}{unit}"
    return str(value)


def preset_fields(preset: dict) -> dict:
    """A resource preset (the service's ``GET resource-presets`` model) as the
    form's fields: cpu, mem, gpu and gpu_shares."""
    slots = preset["slots"]
    return {"cpu": slots["cpu"], "mem": mem_field(slots["mem"]), "gpu": slots.get("gpu", "0"),
            "gpu_shares": slots.get("gpu.shares", "0")}


def preset_size(choices: dict) -> dict:
    """cpu and mem of the service's default resource preset (in its spawn
    choices): what a session gets that names no size."""
    preset = next((p for p in choices.get("presets") or [] if p.get("default")), None)
    if preset is None:
        raise OptionsError("the hubgrid service offers no default resource preset")
    fields = preset_fields(preset)
    return {"cpu": fields["cpu"], "mem": fields["mem"]}


def spawn_form(choices: dict, default_image: str | None = None,
               defaults: dict | None = None, images: bool = True,
               console_url: str = "/services/hubgrid/console/") -> str:
    """The spawn page's form for the service's spawn choices of one user;
    ``images``: the backend runs registry images (the form offers them);
    ``console_url``: the hubgrid console, where a domain admin in no project
    is sent to make one.
    The sizes start on the service's default resource preset, or on
    ``defaults`` (``Spawner.default_size``, set by this hub's admin)."""
    presets = [{**p, "fields": preset_fields(p)} for p in choices.get("presets") or []]
    chosen = next((p for p in presets if p["default"]), None)
    fields = dict(chosen["fields"]) if chosen else {"cpu": "", "mem": "", "gpu": "0",
                                                    "gpu_shares": "0"}
    if defaults:
        fields.update(defaults)
        chosen = next((p for p in presets if p["fields"] == fields), None)
    groups: dict[str, dict] = {}
    for p in choices["projects"]:
        for g in p["resource_groups"]:
            entry = groups.setdefault(g["name"], {"name": g["name"], "projects": [],
                                                  "session_types": g["session_types"]})
            entry["projects"].append(p["name"])
    names = sorted(groups)
    # the quota table's columns: the slots the service reports, in its order
    slots = list(choices["projects"][0]["remaining"]) if choices["projects"] else []
    default_group = "default" if "default" in groups else (names[0] if names else None)
    return TEMPLATES.get_template("form.html").render(
        choices=choices, images=choices["images"] if images else [], groups=[groups[n] for n in names], default_group=default_group,
        default_image=default_image, defaults=fields, presets=presets,
        preset=chosen["name"] if chosen else "",
        slots=slots, slot_titles=SLOT_TITLES, show=show_amount, console_url=console_url,
    )
