"""``hubgrid folders``: my storage folders, their files, and sharing.

A folder is named by its id (or the start of it) or by its name among the
folders you see; a name several folders share asks for the id.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..client import format_bytes
from .base import UsageError, command, group
from .output import safe, short_id, table

PERMISSIONS = ("ro", "rw", "wd")
#: what each permission allows (Backend.AI's read-only, read-write, write-delete)
PERMISSION_LEGEND = ("PERMISSION: ro read only; rw read and add files (no delete); "
                     "wd write-delete: also delete, move, rename, and manage the folder "
                     "(trash, shares)")


def owner_text(f: dict) -> str:
    o = f.get("owner") or {}
    if o.get("kind") == "project":
        return f"project {o.get('project')}"
    return f"user {o.get('user')}"


def quota_of(f: dict, me: dict, policy: dict | None) -> int | None:
    """The owner's size limit (all their folders together), where I can read it."""
    o = f.get("owner") or {}
    if o.get("kind") == "project":
        for p in me.get("projects") or []:
            if p.get("name") == o.get("project") and p.get("domain") == o.get("domain"):
                return p.get("max_vfolder_size")
        return None
    if o.get("user") == me.get("name") and policy:
        return policy.get("max_vfolder_size")
    return None


def folder_rows(folders: list[dict], me: dict, policy: dict | None) -> list[list]:
    rows = []
    for f in folders:
        limit = quota_of(f, me, policy)
        rows.append([
            f.get("name"), short_id(f["id"]), owner_text(f), f.get("host"),
            f.get("usage_mode"), f.get("permission"),
            format_bytes(f.get("usage_bytes") or 0),
            "unlimited" if limit is None else format_bytes(limit),
            f.get("status"), "every session" if f.get("auto_mount") else "on request"])
    return rows


HEADERS = ["NAME", "ID", "OWNER", "HOST", "TYPE", "PERMISSION", "USED", "OWNER'S QUOTA",
           "STATUS", "MOUNTS"]


def find_folder(ctx, ref: str, status: str | None = None) -> dict:
    """A folder I see, by id, unique id prefix or unique name."""
    folders = ctx.client.folders(status=status)
    exact = [f for f in folders if f["id"] == ref]
    if exact:
        return exact[0]
    named = [f for f in folders if f.get("name") == ref]
    if not named and len(ref) >= 4:
        named = [f for f in folders if f["id"].startswith(ref)]
    if not named:
        raise UsageError(f"no folder of yours with the name or id {ref!r} "
                         "(see 'hubgrid folders ls')")
    if len(named) > 1:
        which = ", ".join(f"{short_id(f['id'])} ({owner_text(f)})" for f in named)
        raise UsageError(f"several folders are named {ref!r}: {which}; give the id")
    return named[0]


def ls(ctx, args) -> None:
    client = ctx.client
    status = "all" if args.all else ("trashed" if args.trashed else None)
    folders = client.folders(status=status, project=args.project)
    if ctx.json:
        ctx.emit(folders, str)
        return
    if not folders:
        ctx.print("no folders")
        return
    me = client.me()
    ctx.print(table(HEADERS, folder_rows(folders, me, client.my_policy(me))))
    ctx.print(PERMISSION_LEGEND)


def create(ctx, args) -> None:
    f = ctx.client.create_folder(args.name, host=args.host, project=args.project,
                                 permission=args.permission, usage_mode=args.usage_mode)
    ctx.emit(f, lambda f: f"created folder {safe(f['name'])} ({f['id']}) on host "
             f"{safe(f.get('host'))}, {owner_text(f)}")


def this_session(ctx, args) -> str:
    session = args.session or ctx.env.get("HUBGRID_ALLOCATION", "").strip()
    if not session:
        raise UsageError("not in a hubgrid session: name one with --session ID "
                         "(see 'hubgrid sessions ls')")
    return session


def mount(ctx, args) -> None:
    m = ctx.client.mount_folder(this_session(ctx, args), args.folder)
    where = ctx.env.get("HUBGRID_LIVE_FOLDERS", "") if not args.session else ""
    at = f" at {safe(where.rstrip('/') + '/' + m['name'])}" if where else ""
    mode = "read-only" if m["mode"] == "ro" else "read-write"
    ctx.emit(m, lambda m: f"mounting {safe(m['name'])} ({mode}) in the session{at}: "
             "it appears within seconds")


def files(ctx, args) -> None:
    f = find_folder(ctx, args.folder)
    entry = ctx.client.files(f["id"], args.path or "")

    def render(e):
        entries = e.get("entries")
        if entries is None:  # a file
            entries = [e]
        if not entries:
            return f"{safe(f['name'])}:{safe(e.get('path') or '/')} is empty"
        return table(["NAME", "TYPE", "SIZE", "MODIFIED"],
                     [[x.get("name"), x.get("type"),
                       format_bytes(x["size"]) if x.get("type") == "file" else "-",
                       x.get("modified") or x.get("mtime") or "-"] for x in entries])

    ctx.emit(entry, render)


def upload(ctx, args) -> None:
    local = Path(args.local)
    if not local.is_file():
        raise UsageError(f"{args.local}: not a readable file")
    remote = args.remote or local.name
    if remote.endswith("/"):
        remote += local.name
    f = find_folder(ctx, args.folder)
    try:
        data = local.open("rb")
    except OSError as e:
        raise UsageError(f"{args.local}: {e.strerror}") from None
    with data:
        size = os.fstat(data.fileno()).st_size
        result = ctx.client.upload(f["id"], remote, data, size, overwrite=args.overwrite)
    ctx.emit(result or {"path": remote, "size": size},
             lambda r: f"uploaded {safe(local.name)} ({format_bytes(size)}) to "
             f"{safe(f['name'])}:{safe(r.get('path', remote))}")


def download(ctx, args) -> None:
    f = find_folder(ctx, args.folder)
    if args.local == "-":
        if ctx.out is not sys.stdout:
            raise UsageError("'-' writes to standard output: run it in a terminal or a pipe")
        ctx.client.download(f["id"], args.remote, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    target = Path(args.local or Path(args.remote).name)
    if target.is_dir():
        target = target / Path(args.remote).name
    if target.exists() and not args.force:
        raise UsageError(f"{target} exists: --force replaces it")
    part = target.with_name(target.name + ".part")
    try:
        out = part.open("wb")
    except OSError as e:
        raise UsageError(f"{part}: {e.strerror}") from None
    try:
        with out:
            size = ctx.client.download(f["id"], args.remote, out)
        part.replace(target)
    finally:
        part.unlink(missing_ok=True)
    ctx.emit({"folder": f["id"], "path": args.remote, "file": str(target), "size": size},
             lambda r: f"downloaded {safe(f['name'])}:{safe(args.remote)} to "
             f"{safe(target)} ({format_bytes(size)})")


def share(ctx, args) -> None:
    f = find_folder(ctx, args.folder)
    inv = ctx.client.invite(f["id"], args.user, args.permission)
    ctx.emit(inv, lambda i: f"invited {safe(i['invitee'])} to {safe(i['folder_name'])} "
             f"({i['permission']}): invitation {short_id(i['id'])}, waiting for an answer")


# --- invitations --------------------------------------------------------------------

def invitation_rows(invitations: list[dict], sent: bool) -> list[list]:
    return [[short_id(i["id"]), i.get("folder_name"), owner_text(i),
             i.get("invitee") if sent else i.get("inviter"), i.get("permission"),
             i.get("state"), i.get("created_at")] for i in invitations]


def invitations_ls(ctx, args) -> None:
    sent = getattr(args, "sent", False)
    state = None if getattr(args, "all", False) else "pending"
    got = ctx.client.invitations("sent" if sent else None, state)
    ctx.emit(got, lambda data: table(
        ["ID", "FOLDER", "OWNER", "TO" if sent else "FROM", "PERMISSION", "STATE", "SENT AT"],
        invitation_rows(data, sent)) if data else
        f"no {'pending ' if state else ''}invitations {'sent' if sent else 'for you'}")


def find_invitation(ctx, ref: str, direction: str | None) -> dict:
    got = ctx.client.invitations(direction, None)
    match = [i for i in got if i["id"] == ref] or (
        [i for i in got if i["id"].startswith(ref)] if len(ref) >= 4 else [])
    if not match:
        raise UsageError(f"no invitation {ref!r} (see 'hubgrid folders invitations')")
    if len(match) > 1:
        raise UsageError(f"{ref!r} names several invitations: give more of the id")
    return match[0]


def answer(verb: str):
    def run(ctx, args) -> None:
        inv = find_invitation(ctx, args.invitation, "sent" if verb == "cancel" else None)
        client = ctx.client
        if verb == "accept":
            result = client.accept(inv["id"])
        elif verb == "decline":
            result = client.decline(inv["id"])
        else:
            client.cancel_invitation(inv["id"])
            result = {**inv, "state": "canceled"}
        past = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}[verb]
        ctx.emit(result, lambda r: f"{past} the invitation to {safe(inv['folder_name'])} "
                 f"({inv['permission']})")
    return run


def ls_by_default(ctx, args) -> None:
    """``hubgrid folders`` alone: ``hubgrid folders ls`` (its options unset)."""
    ls(ctx, argparse.Namespace(**{"all": False, "trashed": False, "project": None,
                                  **vars(args)}))


def register(groups, common) -> None:
    subs = group(groups, "folders", "your storage folders: list (also with no command), "
                 "create, upload, download, share, invitations", default=ls_by_default,
                 parents=[common], description=__doc__.split("\n\n", 1)[1])
    p = command(subs, "ls", common, ls, "the folders you see: yours, your projects', shared",
                aliases=["list"])
    which = p.add_mutually_exclusive_group()
    which.add_argument("--trashed", action="store_true", help="only those in the trash")
    which.add_argument("--all", action="store_true", help="active and trashed")
    p.add_argument("--project", help="only this project's folders")

    p = command(subs, "create", common, create, "create a folder")
    p.add_argument("name")
    p.add_argument("--host", help="storage host (default: the service's)")
    p.add_argument("--project", help="a project's folder (its domain admins)")
    p.add_argument("--permission", choices=PERMISSIONS,
                   help="what the project's members may do (project folders): ro read only, "
                   "rw read and add, wd also delete")
    p.add_argument("--usage-mode", choices=("general", "data", "model"))

    p = command(subs, "mount", common, mount,
                "mount a folder into this running session, without a restart")
    p.add_argument("folder", help="name or id")
    p.add_argument("--session", help="the session's id (default: this one, "
                   "$HUBGRID_ALLOCATION)")

    p = command(subs, "files", common, files, "the files in a folder")
    p.add_argument("folder", help="name or id")
    p.add_argument("path", nargs="?", help="a directory or file inside it (default: its root)")

    p = command(subs, "upload", common, upload, "upload a file into a folder")
    p.add_argument("folder", help="name or id")
    p.add_argument("local", help="the file to upload")
    p.add_argument("remote", nargs="?",
                   help="where it goes in the folder (default: its name at the root; "
                   "a path ending in / puts it there under its name)")
    p.add_argument("--overwrite", action="store_true", help="replace a file already there")

    p = command(subs, "download", common, download, "download a file from a folder")
    p.add_argument("folder", help="name or id")
    p.add_argument("remote", help="the file's path in the folder")
    p.add_argument("local", nargs="?", help="where to write it (default: its name here; "
                   "'-': standard output)")
    p.add_argument("--force", action="store_true", help="replace a local file")

    p = command(subs, "share", common, share, "invite a user of your domain to a folder")
    p.add_argument("folder", help="name or id")
    p.add_argument("user")
    p.add_argument("--permission", choices=PERMISSIONS, default="ro",
                   help="ro: read only, rw: read and add, wd (write-delete): also delete, move, "
                   "rename, manage the folder (default: %(default)s)")

    listing = argparse.ArgumentParser(add_help=False)
    listing.add_argument("--sent", action="store_true", default=argparse.SUPPRESS,
                         help="those you sent")
    listing.add_argument("--all", action="store_true", default=argparse.SUPPRESS,
                         help="answered ones too")
    inv = group(subs, "invitations", "invitations to folders: list (the default), accept, "
                "decline, cancel", default=invitations_ls, parents=[common, listing])
    command(inv, "ls", common, invitations_ls, "invitations waiting for you (or sent)",
            parents=[listing], aliases=["list"])
    for verb, text in (("accept", "accept an invitation: the folder is shared with you"),
                       ("decline", "decline an invitation"),
                       ("cancel", "take back an invitation you sent")):
        p = command(inv, verb, common, answer(verb), text)
        p.add_argument("invitation", help="its id (or the start of it)")
