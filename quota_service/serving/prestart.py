"""``service.pre_start_actions`` of a ``model-definition.yaml``: which of
Backend.AI's actions (ai.backend.kernel.service_actions) hubgrid runs, and
their arguments checked.

Every accepted action runs inside the replica's container, as the session
user, before ``start_command``; nothing runs on the host. Paths an action
writes must be under the session user's home or /tmp (the model folder is
read-only). Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from quota_service.serving.fields import Reader, clean_path, kind

#: where pre-start actions may write (the session user's home, scratch space)
WRITABLE_ROOTS = ("/home/jovyan", "/tmp")
MAX_ACTIONS = 32
#: the longest body write_file writes (bytes of text)
MAX_BODY = 64 * 1024

#: Backend.AI's pre-start actions (ai.backend.kernel.service_actions) that
#: hubgrid runs, each inside the replica's container as the session user
#: before ``start_command``; never on the host.
PRE_START_ACTIONS = {
    "run_command": "runs args.command (a list of strings) in the replica",
    "mkdir": "creates args.path (under /home/jovyan or /tmp) in the replica",
    "write_file": "writes args.body to args.filename (under /home/jovyan or /tmp) "
                  "in the replica, with args.mode (octal string, default 644) and "
                  "args.append (default false)",
    "log": "writes args.body to the replica's log",
}
#: the ones refused, with the reason given
REFUSED_ACTIONS = {
    "write_tempfile": "its result is handed to later actions through variable "
                      "substitution, which hubgrid does not do: write_file to a "
                      "path under /tmp instead",
}


@dataclass(frozen=True)
class PreStartAction:
    action: str
    args: Mapping[str, Any]


def read_actions(r: Reader, path: str, value) -> tuple[PreStartAction, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        r.bad(path, f"must be a list of actions, not {kind(value)}")
        return ()
    if len(value) > MAX_ACTIONS:
        r.bad(path, f"must have at most {MAX_ACTIONS} actions")
        return ()
    out = []
    for i, item in enumerate(value):
        action = _action(r, f"{path}[{i}]", item)
        if action is not None:
            out.append(action)
    return tuple(out)


def _action(r: Reader, path: str, value) -> PreStartAction | None:
    value = r.mapping(path, value, ("action", "args"))
    if value is None:
        return None
    name = value.get("action")
    if not isinstance(name, str):
        r.bad(f"{path}.action", "required: one of " + ", ".join(PRE_START_ACTIONS))
        return None
    if name in REFUSED_ACTIONS:
        r.bad(f"{path}.action", f"{name!r} is not run by hubgrid: {REFUSED_ACTIONS[name]}")
        return None
    if name not in PRE_START_ACTIONS:
        r.bad(f"{path}.action", f"{name!r:.60} is not a pre-start action hubgrid runs "
              "(it runs: " + ", ".join(PRE_START_ACTIONS) + ")")
        return None
    args = r.mapping(f"{path}.args", value.get("args", {}), None)
    if args is None:
        return None
    p = f"{path}.args"
    if name == "run_command":
        args = _keys(r, p, args, ("command",), ("command",))
        cmd = args and r.strings(f"{p}.command", args["command"], limit=256)
        if cmd is not None and cmd is not False and cmd == ():
            r.bad(f"{p}.command", "must name a program first")
            return None
        return None if not cmd else PreStartAction(name, MappingProxyType({"command": cmd}))
    if name == "mkdir":
        args = _keys(r, p, args, ("path",), ("path",))
        target = args and clean_path(r, f"{p}.path", args["path"], WRITABLE_ROOTS)
        return PreStartAction(name, MappingProxyType({"path": target})) if target else None
    if name == "write_file":
        args = _keys(r, p, args, ("filename", "body"), ("filename", "body", "mode", "append"))
        if not args:
            return None
        target = clean_path(r, f"{p}.filename", args["filename"], WRITABLE_ROOTS)
        body = r.text(f"{p}.body", args["body"], blank=True, limit=MAX_BODY)
        mode = args.get("mode", "644")
        # a string: YAML reads 644 as an integer and 0644 as the integer 420
        if not isinstance(mode, str) or not mode or any(c not in "01234567" for c in mode) \
                or int(mode, 8) > 0o777:
            r.bad(f"{p}.mode", "must be an octal permission string in quotes, like '644'")
            mode = None
        append = args.get("append", False)
        if not isinstance(append, bool):
            r.bad(f"{p}.append", f"must be true or false, not {kind(append)}")
            append = None
        if None in (target, body, mode, append):
            return None
        return PreStartAction(name, MappingProxyType(
            {"filename": target, "body": body, "mode": mode, "append": append}))
    # log
    args = _keys(r, p, args, ("body",), ("body", "debug"))
    body = args and r.text(f"{p}.body", args["body"], blank=True)
    debug = args.get("debug", False) if args else False
    if args and not isinstance(debug, bool):
        r.bad(f"{p}.debug", f"must be true or false, not {kind(debug)}")
        return None
    return None if body is None or body is False else PreStartAction(
        name, MappingProxyType({"body": body, "debug": debug}))


def _keys(r: Reader, path: str, args: dict, required: tuple[str, ...],
          allowed: tuple[str, ...]) -> dict | bool:
    """``args`` if it has every required key and no other than ``allowed``, else False."""
    ok = True
    for key in required:
        if key not in args:
            r.bad(f"{path}.{key}", "required")
            ok = False
    for key in args:
        if key not in allowed:
            r.bad(f"{path}.{key}", "unknown argument (expected one of: " + ", ".join(allowed) + ")")
            ok = False
    return args if ok else False
