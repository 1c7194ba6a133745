"""What the service writes into a folder is the sessions' to read and write
(uploads must not land ``root:root 0600`` under the demo's ``umask 077``).

Every write path -- PUT, tus, mkdir (one and ``parents``), move -- runs with
the service's umask at 077 (scripts/run.sh's), in this process, where the
service runs. The layer tests check owner and mode on disk; the API test
lands one entry of each path through the served service; the container test
mounts that folder the way the Docker spawner does (rw and ro, as the
session user) and reads and writes every entry from inside one container.
"""

from __future__ import annotations

import os
import stat
import uuid
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

import pytest
from files_world import Files, files  # noqa: F401
from service_app import served  # noqa: F401
from hub_fixtures import require

from quota_service.storage import files as vfiles
from quota_service.storage import modes
from quota_service.storage.files import FolderFS, Uploads
from spawner.builders import SessionSpec, container_config, vfolder_mounts

SESSION_UID, SESSION_GID = 1000, 100  # jovyan:users, the spawner's defaults
ROOT = os.geteuid() == 0


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """Modes do not depend on the database: SQLite only."""
    return sqlite_db_url


@pytest.fixture
def umask077():
    """The demo's umask (scripts/run.sh) for the service, in this process."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def perms(path: Path) -> tuple[int, int, str]:
    st = os.lstat(path)
    return st.st_uid, st.st_gid, oct(stat.S_IMODE(st.st_mode))


def settled(path: Path, owner=(SESSION_UID, SESSION_GID)) -> tuple[int, int, str]:
    """What ``path`` must be: the folder's owner (when the service is root)
    and the mode of its kind."""
    want = oct(modes.DIR_MODE if path.is_dir() else modes.FILE_MODE)
    st = os.lstat(path)
    return (*(owner if ROOT else (st.st_uid, st.st_gid)), want)


# --- the rule -------------------------------------------------------------------

def test_the_owner_is_the_roots_when_root_and_unchanged_otherwise(tmp_path):
    st = os.stat(tmp_path)
    assert modes.folder_owner(st, 0) == modes.Owner(st.st_uid, st.st_gid)
    assert modes.folder_owner(st, 1000) == modes.Owner() and not modes.Owner().changes
    assert modes.mode_for(stat.S_IFREG | 0o600) == 0o660
    assert modes.mode_for(stat.S_IFDIR | 0o700) == 0o2770
    assert modes.mode_for(stat.S_IFLNK | 0o777) is None
    assert modes.mode_for(stat.S_IFIFO | 0o600) is None


# --- the storage layer, every write path ------------------------------------------

@pytest.fixture
def folder(tmp_path, umask077) -> tuple[Path, Path]:
    """(root, staging) as the service makes them: root 2770, the session's."""
    root, staging = tmp_path / "host" / "fid", tmp_path / "host" / ".staging"
    root.mkdir(parents=True)
    staging.mkdir()
    if ROOT:
        os.chown(root, SESSION_UID, SESSION_GID)
    os.chmod(root, modes.DIR_MODE)
    return root, staging


class Access:
    def __init__(self, root, staging):
        self.folder_id, self.root, self.staging = "fid", root, staging
        self.quota_key, self.size_limit, self.used = "user:alice", None, 0


async def test_a_put_upload_lands_as_the_folders_whatever_the_umask(folder):
    root, staging = folder
    uploads, access = Uploads(), Access(*folder)
    for overwrite in (False, True):
        p = await uploads.begin(access, ("put.txt",), 3, overwrite)
        p.upload.write(b"abc")
        await uploads.finish(p, access, lambda f, d: None)
        assert perms(root / "put.txt") == settled(root / "put.txt")
    assert os.listdir(staging) == []


async def test_a_tus_upload_lands_as_the_folders_whatever_the_umask(folder):
    root, _ = folder
    uploads, access = Uploads(), Access(*folder)
    state = await uploads.tus_create(access, "alice", ("tus.txt",), 4, False, "now")
    up = uploads.tus_open(access, state, 0, 4)
    up.write(b"abcd")
    await uploads.tus_complete(access, state, up, lambda f, d: None)
    assert perms(root / "tus.txt") == settled(root / "tus.txt")


def test_mkdir_makes_directories_as_the_folders_and_leaves_existing_ones(folder):
    root, _ = folder
    fs = FolderFS(root)
    fs.mkdir(("one",))
    (root / "theirs").mkdir(mode=0o700)  # a session's own directory
    fs.mkdir(("theirs", "deep", "er"), parents=True)
    for made in ("one", "theirs/deep", "theirs/deep/er"):
        assert perms(root / made) == settled(root / made), made
    assert perms(root / "theirs")[2] == oct(0o2700)  # setgid inherited, nothing else


def test_a_move_settles_what_the_service_wrote_and_keeps_a_sessions_own(folder):
    root, _ = folder
    fs = FolderFS(root)
    # stored before this fix: the service's, 0600
    fd = os.open(root / "legacy.txt", os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    fs.move(("legacy.txt",), ("moved.txt",))
    assert perms(root / "moved.txt") == settled(root / "moved.txt")
    (root / "private.txt").write_bytes(b"mine")
    os.chmod(root / "private.txt", 0o600)
    if ROOT:
        os.chown(root / "private.txt", SESSION_UID + 1, SESSION_GID)
        fs.move(("private.txt",), ("still-private.txt",))
        assert perms(root / "still-private.txt") == (SESSION_UID + 1, SESSION_GID, oct(0o600))


def test_a_symlink_and_what_it_points_to_are_never_touched(folder, tmp_path):
    root, _ = folder
    target = tmp_path / "outside"
    target.write_bytes(b"x")
    os.chmod(target, 0o600)
    (root / "link").symlink_to(target)
    with vfiles.FolderFS(root).directory(()) as fd:
        modes.settle_at(fd, "link", modes.Owner(SESSION_UID, SESSION_GID))
    assert perms(target) == (os.geteuid(), os.getegid(), oct(0o600))


# --- through the service: one entry of each write path ------------------------------

ENTRIES = ("put.txt", "tus.txt", "made", "deep", "deep/er", "made/inner.txt", "moved.txt")


async def land_everything(files: Files) -> tuple[str, Path]:  # noqa: F811
    """A folder alice makes through the API (so the service chowns it as the
    demo's does), and one entry of every write path in it: (id, root)."""
    r, body = await files.served.call("POST", "vfolders", "alice",
                                      json_body={"name": "landed"})
    assert r.code == 201, body
    fid = body["id"]
    root = files.host.folder_dir(fid)

    async def call(method, tail, **kw):
        r, body = await files.served.call(method, f"vfolders/{fid}/{tail}", "alice", **kw)
        assert r.code in (200, 201, 204), (tail, body)
        return r

    await call("PUT", "upload?path=put.txt", body=b"put\n")
    auth = files.served.auth("alice")
    r = await files.served.client.fetch(
        f"{files.served.api}vfolders/{fid}/tus", method="POST", body=b"", headers={
            "Authorization": auth, "Tus-Resumable": "1.0.0", "Upload-Length": "4",
            "Upload-Metadata": vfiles.encode_metadata({"path": "tus.txt"})})
    assert r.code == 201
    port = urlparse(files.served.svc.service_url).port
    r = await files.served.client.fetch(
        f"http://127.0.0.1:{port}{urlparse(r.headers['Location']).path}", method="PATCH",
        body=b"tus\n", headers={"Authorization": auth, "Tus-Resumable": "1.0.0",
                                "Content-Type": "application/offset+octet-stream",
                                "Upload-Offset": "0"})
    assert r.code == 204
    await call("POST", "mkdir", json_body={"path": "made"})
    await call("POST", "mkdir", json_body={"path": "deep/er", "parents": True})
    await call("PUT", "upload?path=made/inner.txt", body=b"inner\n")
    await call("PUT", "upload?path=old.txt", body=b"old\n")
    await call("POST", "move", json_body={"src": "old.txt", "dst": "moved.txt"})
    return fid, root


async def test_every_write_path_of_the_api_lands_as_the_folders(files, umask077):  # noqa: F811
    _, root = await land_everything(files)
    assert perms(root) == settled(root)
    for name in ENTRIES:
        assert perms(root / name) == settled(root / name), name


# --- in a real container, as the session user ---------------------------------------

HOSTS = [h for h in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if h]
IMAGE = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE") or "hubgrid/base:latest"

#: run in the container: read and write every entry in the rw mount, only
#: read in the ro one; one line per check
CHECKS = r"""
cd /home/jovyan
for f in put.txt tus.txt made/inner.txt moved.txt; do
  cat rw/$f >/dev/null && echo "read rw/$f ok"
  echo more >> rw/$f && echo "append rw/$f ok"
  cat ro/$f >/dev/null && echo "read ro/$f ok"
  (echo more >> ro/$f) 2>/dev/null || echo "append ro/$f refused"
done
for d in made deep deep/er; do
  ls rw/$d >/dev/null && echo "list rw/$d ok"
  echo new > rw/$d/new.txt && rm rw/$d/new.txt && echo "create rw/$d ok"
  ls ro/$d >/dev/null && echo "list ro/$d ok"
  (touch ro/$d/new.txt) 2>/dev/null || echo "create ro/$d refused"
done
rm rw/put.txt && echo "delete rw/put.txt ok"
mv rw/tus.txt rw/made/ && echo "move rw/tus.txt ok"
"""


def expected_checks() -> list[str]:
    out = []
    for f in ("put.txt", "tus.txt", "made/inner.txt", "moved.txt"):
        out += [f"read rw/{f} ok", f"append rw/{f} ok", f"read ro/{f} ok",
                f"append ro/{f} refused"]
    for d in ("made", "deep", "deep/er"):
        out += [f"list rw/{d} ok", f"create rw/{d} ok", f"list ro/{d} ok",
                f"create ro/{d} refused"]
    return out + ["delete rw/put.txt ok", "move rw/tus.txt ok"]


async def test_a_session_reads_and_writes_everything_the_service_wrote(files,  # noqa: F811
                                                                        umask077):
    import docker

    require("a Docker engine", bool(HOSTS), "run `make test` (scripts/start-docker.sh)")
    require("the service running as root", ROOT, "the service chowns only as root")
    cl = docker.APIClient(base_url=HOSTS[0], version="auto", timeout=60)
    try:
        cl.inspect_image(IMAGE)
    except docker.errors.DockerException as e:
        require(f"the session image {IMAGE}", False, f"{e} (scripts/build-images.sh)")
    _, root = await land_everything(files)
    # the spawner's container: its user, its limits, the folder mounted rw and ro
    mounts = vfolder_mounts([{"name": "rw", "path": str(root), "mode": "rw"},
                             {"name": "ro", "path": str(root), "mode": "ro"}], "/home/jovyan")
    spec = SessionSpec(allocation=uuid.uuid4().hex, user="alice", domain="acme", project="ml",
                       image=IMAGE, cpu=Decimal(1), mem=256 * 2**20,
                       mounts=mounts, uid=SESSION_UID, gid=SESSION_GID)
    config = container_config(spec)
    c = cl.create_container(config["Image"], ["sh", "-c", CHECKS], user=config["User"],
                            environment=config["Env"], labels={"hubgrid.test": "vfolder-modes"},
                            host_config=config["HostConfig"] | {"NetworkMode": "none"})
    try:
        cl.start(c["Id"])
        rc = cl.wait(c["Id"], timeout=120)["StatusCode"]
        out = cl.logs(c["Id"]).decode(errors="replace")
    finally:
        cl.remove_container(c["Id"], force=True)
    assert out.splitlines() == expected_checks(), out
    assert rc == 0, out
    # what the session wrote is there, as the session's
    assert (root / "moved.txt").read_bytes() == b"old\nmore\n"
    assert not (root / "put.txt").exists() and (root / "made" / "tus.txt").exists()
