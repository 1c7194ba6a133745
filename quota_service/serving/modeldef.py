"""``model-definition.yaml`` as Backend.AI writes it, read into frozen data.

A model folder (a vfolder mounted read-only at ``/models`` in every replica)
holds one ``model-definition.yaml``. Its format is Backend.AI's
(``ai.backend.common.config.ModelDefinition``): the same field names, the same
defaults::

    models:
      - name: my-model                 # required
        model_path: /models/weights    # required, under /models
        service:                       # optional (a model without one is not servable)
          pre_start_actions: []        # [{action, args}], see PRE_START_ACTIONS
          start_command: [python, serve.py]   # list, or a string run by `shell -c`
          shell: /bin/bash             # for a string start_command
          port: 8000                   # required, 1..65535
          health_check:                # optional
            path: /health              # required
            interval: 10               # seconds between probes
            max_retries: 10            # failed probes before "down"
            max_wait_time: 15          # seconds one probe may take
            expected_status_code: 200
            initial_delay: 60          # seconds before the first probe
          methods: [GET, POST]         # optional (hubgrid's): what the gateway's
                                       # e/<id>/ passes on; the default
          paths: [/v1/chat/completions, /v2/models/*]  # optional (hubgrid's): the
                                       # paths e/<id>/ passes on; by default the
                                       # OpenAI routes and the health check's path
        metadata: {title, author, version, created, last_modified, description,
                   task, category, architecture, framework: [..], label: [..],
                   license, min_resource: {slot: amount}, ...any other key}

:func:`parse` takes the file's bytes or text (at most :data:`MAX_BYTES`),
reads it with ``yaml.safe_load`` and returns a :class:`ModelDefinition`, or
raises :class:`ModelDefinitionError` listing every problem found, each a
:class:`FieldProblem` with its field path (``models[0].service.port``).
Stricter than Backend.AI where a typo would otherwise pass unnoticed: unknown
keys outside ``metadata`` are refused, numbers must be numbers (``"8000"`` is
not a port), YAML aliases are refused (no alias bombs), and only the
pre-start actions that run inside the replica are accepted.

Pure: no IO.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from quota_service.core import urlpaths
from quota_service.serving.fields import (FieldProblem, ModelDefinitionError, Reader,
                                          clean_path, kind)
from quota_service.serving.prestart import (PRE_START_ACTIONS, REFUSED_ACTIONS,
                                            PreStartAction, read_actions)

__all__ = ("PRE_START_ACTIONS", "REFUSED_ACTIONS", "FieldProblem", "HealthCheck", "Metadata",
           "ModelConfig", "ModelDefinition", "ModelDefinitionError", "PreStartAction",
           "ServiceConfig", "parse")

#: the largest definition read (bytes, UTF-8)
MAX_BYTES = 64 * 1024
#: where the model folder is mounted in a replica
MODELS_ROOT = "/models"
MAX_NAME = 128
MAX_MODELS = 32

#: Backend.AI's defaults of ``health_check`` (seconds as Decimal)
HEALTH_DEFAULTS = {"interval": Decimal(10), "max_retries": 10, "max_wait_time": Decimal(15),
                   "expected_status_code": 200, "initial_delay": Decimal(60)}
#: what ``service.methods`` may name (hubgrid's field: the HTTP methods the
#: gateway passes on to a replica at the endpoint's own URL), and its default
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
DEFAULT_METHODS = ("GET", "POST")

METADATA_TEXT = ("author", "title", "created", "last_modified", "description", "task",
                 "category", "architecture", "license")
METADATA_ALIASES = {"created_at": "created", "modified_at": "last_modified"}


@dataclass(frozen=True)
class HealthCheck:
    path: str
    interval: Decimal = HEALTH_DEFAULTS["interval"]
    max_retries: int = HEALTH_DEFAULTS["max_retries"]
    max_wait_time: Decimal = HEALTH_DEFAULTS["max_wait_time"]
    expected_status_code: int = HEALTH_DEFAULTS["expected_status_code"]
    initial_delay: Decimal = HEALTH_DEFAULTS["initial_delay"]


@dataclass(frozen=True)
class ServiceConfig:
    start_command: str | tuple[str, ...]
    port: int
    shell: str = "/bin/bash"
    pre_start_actions: tuple[PreStartAction, ...] = ()
    health_check: HealthCheck | None = None
    #: the HTTP methods the gateway passes on at ``e/<id>/`` (hubgrid's own field)
    methods: tuple[str, ...] = DEFAULT_METHODS
    #: the paths it passes on there, as listed (None: core/urlpaths.py's defaults)
    paths: tuple[str, ...] | None = None

    @property
    def allowed_paths(self) -> tuple[str, ...]:
        """The paths ``e/<id>/`` passes on: the listed ones, else the OpenAI
        routes and the health check's path."""
        return urlpaths.declared(self.paths, self.health_check.path if self.health_check
                                 else None)

    @property
    def argv(self) -> tuple[str, ...]:
        """The command as an argument vector: a string runs as ``shell -c``."""
        if isinstance(self.start_command, str):
            return (self.shell, "-c", self.start_command)
        return self.start_command


@dataclass(frozen=True)
class Metadata:
    author: str | None = None
    title: str | None = None
    version: int | str | None = None
    created: str | None = None
    last_modified: str | None = None
    description: str | None = None
    task: str | None = None
    category: str | None = None
    architecture: str | None = None
    framework: tuple[str, ...] | None = None
    label: tuple[str, ...] | None = None
    license: str | None = None
    min_resource: Mapping[str, int | Decimal | str] | None = None
    #: any other key, as read
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ModelConfig:
    name: str
    model_path: str
    service: ServiceConfig | None = None
    metadata: Metadata | None = None


@dataclass(frozen=True)
class ModelDefinition:
    models: tuple[ModelConfig, ...]

    def servable(self) -> tuple[ModelConfig, ...]:
        """The models that say how to serve them (have a ``service``)."""
        return tuple(m for m in self.models if m.service is not None)


def _refuse_aliases(text: str) -> None:
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise ModelDefinitionError([FieldProblem(
                "", "YAML aliases (*name) are not accepted in model-definition.yaml")])


def _load(data: bytes | str, max_bytes: int):
    if isinstance(data, str):
        raw = data.encode("utf-8", "surrogatepass")
    elif isinstance(data, (bytes, bytearray)):
        raw = bytes(data)
    else:
        raise TypeError(f"parse() takes bytes or str, not {type(data).__name__}")
    if len(raw) > max_bytes:
        raise ModelDefinitionError([FieldProblem(
            "", f"model-definition.yaml is {len(raw)} bytes: at most {max_bytes} are read")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelDefinitionError([FieldProblem(
            "", f"model-definition.yaml is not UTF-8 text (byte {e.start})")]) from None
    try:
        _refuse_aliases(text)
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        what = getattr(e, "problem", None) or type(e).__name__
        raise ModelDefinitionError([FieldProblem("", f"not valid YAML{at}: {what}")]) from None
    except RecursionError:
        raise ModelDefinitionError([FieldProblem("", "YAML nested too deeply")]) from None
    except (ValueError, OverflowError) as e:
        # a constructor refusing a scalar, e.g. the timestamp 2024-13-45
        raise ModelDefinitionError([FieldProblem("", f"not valid YAML: {e}")]) from None


def parse(data: bytes | str, *, max_bytes: int = MAX_BYTES) -> ModelDefinition:
    """The definition in ``data`` (a ``model-definition.yaml``'s content), or
    :class:`ModelDefinitionError` with every problem found."""
    doc = _load(data, max_bytes)
    r = Reader()
    result = _definition(r, doc)
    if r.problems:
        raise ModelDefinitionError(r.problems)
    assert result is not None
    return result


def _definition(r: Reader, doc) -> ModelDefinition | None:
    if doc is None:
        r.bad("", "model-definition.yaml is empty: it needs a list `models`")
        return None
    doc = r.mapping("", doc, ("models",))
    if doc is None:
        return None
    if "models" not in doc:
        r.bad("models", "required (a list of models)")
        return None
    models = doc["models"]
    if not isinstance(models, list) or not models:
        r.bad("models", "must be a non-empty list of models"
              + ("" if isinstance(models, list) else f", not {kind(models)}"))
        return None
    if len(models) > MAX_MODELS:
        r.bad("models", f"must have at most {MAX_MODELS} models")
        return None
    out = [_model(r, f"models[{i}]", m) for i, m in enumerate(models)]
    seen: dict[str, int] = {}
    for i, m in enumerate(models):
        name = m.get("name") if isinstance(m, dict) else None
        if isinstance(name, str) and name in seen:
            r.bad(f"models[{i}].name", f"{name!r:.60} is also the name of models[{seen[name]}]")
        elif isinstance(name, str):
            seen[name] = i
    return None if any(m is None for m in out) else ModelDefinition(tuple(out))


def _model(r: Reader, path: str, value) -> ModelConfig | None:
    value = r.mapping(path, value, ("name", "model_path", "service", "metadata"))
    if value is None:
        return None
    before = len(r.problems)
    name = model_path = None
    if "name" not in value:
        r.bad(f"{path}.name", "required")
    else:
        name = r.text(f"{path}.name", value["name"], limit=MAX_NAME)
        if name is not None and (name != name.strip() or any(ord(c) < 32 or c == "\x7f" for c in name)):
            r.bad(f"{path}.name", "must not have control characters or surrounding spaces")
    if "model_path" not in value:
        r.bad(f"{path}.model_path", "required (a path under /models)")
    else:
        model_path = _model_path(r, f"{path}.model_path", value["model_path"])
    service = value.get("service")
    service = None if service is None else _service(r, f"{path}.service", service)
    metadata = value.get("metadata")
    metadata = None if metadata is None else _metadata(r, f"{path}.metadata", metadata)
    if len(r.problems) > before:
        return None
    return ModelConfig(name=name, model_path=model_path, service=service, metadata=metadata)


def _model_path(r: Reader, path: str, value) -> str | None:
    return clean_path(r, path, value, (MODELS_ROOT,))


def _service(r: Reader, path: str, value) -> ServiceConfig | None:
    value = r.mapping(path, value, ("pre_start_actions", "start_command", "shell", "port",
                                    "health_check", "methods", "paths"))
    if value is None:
        return None
    before = len(r.problems)
    command = None
    if "start_command" not in value:
        r.bad(f"{path}.start_command", "required (a list of strings, or a string)")
    elif isinstance(value["start_command"], list):
        command = r.strings(f"{path}.start_command", value["start_command"], limit=256)
        if command is not None and (not command or not command[0].strip()):
            r.bad(f"{path}.start_command", "must name a program first")
    else:
        command = r.text(f"{path}.start_command", value["start_command"])
    shell = "/bin/bash"
    if value.get("shell") is not None:
        shell = r.text(f"{path}.shell", value["shell"], limit=256)
        if shell is not None and not shell.startswith("/"):
            r.bad(f"{path}.shell", "must be an absolute path")
    port = None
    if "port" not in value:
        r.bad(f"{path}.port", "required (the port start_command listens on)")
    else:
        port = r.integer(f"{path}.port", value["port"], 1, 65535)
    actions = read_actions(r, f"{path}.pre_start_actions", value.get("pre_start_actions"))
    health = value.get("health_check")
    health = None if health is None else _health(r, f"{path}.health_check", health)
    methods = DEFAULT_METHODS
    if value.get("methods") is not None:  # null means the default
        methods = _methods(r, f"{path}.methods", value["methods"])
    paths = None
    if value.get("paths") is not None:  # null means the default
        paths = _paths(r, f"{path}.paths", value["paths"])
    if len(r.problems) > before:
        return None
    return ServiceConfig(start_command=command, port=port, shell=shell,
                         pre_start_actions=actions, health_check=health, methods=methods,
                         paths=paths)


def _paths(r: Reader, path: str, value) -> tuple[str, ...] | None:
    """A non-empty list of paths in normal form, or ``/prefix/*``, each once
    (core/urlpaths.py)."""
    entries = r.strings(path, value, limit=urlpaths.MAX_PATHS)
    if entries is None:
        return None
    if not entries:
        r.bad(path, "must list at least one path (leave it out for the OpenAI routes)")
        return None
    ok = True
    for i, entry in enumerate(entries):
        why = urlpaths.pattern_problem(entry)
        if why:
            r.bad(f"{path}[{i}]", why)
            ok = False
    if ok and len(set(entries)) != len(entries):
        r.bad(path, "lists a path twice")
        ok = False
    return entries if ok else None


def _methods(r: Reader, path: str, value) -> tuple[str, ...] | None:
    """A non-empty list of HTTP methods among ``HTTP_METHODS``, each once;
    any case is read, kept upper-case."""
    names = r.strings(path, value, limit=len(HTTP_METHODS))
    if names is None:
        return None
    upper = tuple(n.upper() for n in names)
    unknown = [n for n in upper if n not in HTTP_METHODS]
    if not upper:
        r.bad(path, "must name at least one method (leave it out for GET and POST)")
    elif unknown:
        r.bad(path, f"{unknown[0]!r:.30} is not one of {', '.join(HTTP_METHODS)}")
    elif len(set(upper)) != len(upper):
        r.bad(path, "names a method twice")
    else:
        return upper
    return None


def _health(r: Reader, path: str, value) -> HealthCheck | None:
    value = r.mapping(path, value, ("path", "interval", "max_retries", "max_wait_time",
                                    "expected_status_code", "initial_delay"))
    if value is None:
        return None
    before = len(r.problems)
    probe = None
    if "path" not in value:
        r.bad(f"{path}.path", "required (the URL path probed, e.g. /health)")
    else:
        probe = r.text(f"{path}.path", value["path"], limit=1024)
        if probe is not None and (not probe.startswith("/") or any(
                c.isspace() or ord(c) < 32 for c in probe)):
            r.bad(f"{path}.path", "must be a URL path starting with / without spaces")
    got = dict(HEALTH_DEFAULTS)
    checks = {"interval": lambda p, v: r.seconds(p, v, zero=False),
              "max_wait_time": lambda p, v: r.seconds(p, v, zero=False),
              "initial_delay": lambda p, v: r.seconds(p, v, zero=True),
              "max_retries": lambda p, v: r.integer(p, v, 1, 1000),
              "expected_status_code": lambda p, v: r.integer(p, v, 100, 599)}
    for key, check in checks.items():
        if value.get(key) is not None:  # null means the default, as in Backend.AI
            got[key] = check(f"{path}.{key}", value[key])
    if len(r.problems) > before:
        return None
    return HealthCheck(path=probe, **got)


def _metadata(r: Reader, path: str, value) -> Metadata | None:
    value = r.mapping(path, value, None)
    if value is None:
        return None
    before = len(r.problems)
    got: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, v in value.items():
        name = METADATA_ALIASES.get(key, key)
        if name in got:
            r.bad(f"{path}.{key}", f"given twice (as {name} too)")
            continue
        if v is None:
            if name in Metadata.__dataclass_fields__ and name != "extra":
                got[name] = None
            else:
                extra[key] = None
            continue
        if name in ("created", "last_modified") and isinstance(v, datetime.date):
            got[name] = v.isoformat()  # YAML reads an unquoted 2024-05-01 as a date
        elif name in METADATA_TEXT:
            got[name] = r.text(f"{path}.{key}", v, blank=True)
        elif name == "version":
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                r.bad(f"{path}.version", f"must be an integer or a string, not {kind(v)}")
            else:
                got[name] = r.text(f"{path}.version", v, blank=True) if isinstance(v, str) else v
        elif name in ("framework", "label"):
            got[name] = r.strings(f"{path}.{key}", v)
        elif name == "min_resource":
            got[name] = _min_resource(r, f"{path}.{key}", v)
        elif name == "extra":
            r.bad(f"{path}.extra", "is a reserved name")
        else:
            extra[key] = v
    if len(r.problems) > before:
        return None
    return Metadata(**got, extra=MappingProxyType(extra))


def _min_resource(r: Reader, path: str, value) -> Mapping[str, int | Decimal | str] | None:
    value = r.mapping(path, value, None)
    if value is None:
        return None
    out: dict[str, int | Decimal | str] = {}
    for slot, amount in value.items():
        p = f"{path}.{slot}"
        if isinstance(amount, bool) or amount is None or not isinstance(amount, (int, float, str)):
            r.bad(p, f"must be an amount (a number, or a size like 8g), not {kind(amount)}")
        elif isinstance(amount, float):
            if not math.isfinite(amount) or amount < 0:
                r.bad(p, "must be a finite amount, 0 or more")
            else:
                out[slot] = Decimal(repr(amount))
        elif isinstance(amount, int) and amount < 0:
            r.bad(p, "must be 0 or more")
        elif isinstance(amount, str):
            text = r.text(p, amount, limit=64)
            if text is not None:
                out[slot] = text
        else:
            out[slot] = amount
    return MappingProxyType(out)
