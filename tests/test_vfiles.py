"""The files layer of vfolders (quota_service/storage/) on real directories.

Every refusal test also checks that a sentinel file outside the folder is
untouched (content and mtime) and that nothing new appeared next to it.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quota_service.core.errors import ApiError, Conflict, NotFound
from quota_service.storage.files import (
    BadPath,
    BadUpload,
    FolderFS,
    QuotaBook,
    QuotaExceeded,
    Upload,
    Uploads,
    encode_metadata,
    parse_metadata,
    parse_path,
    plan_sweep,
    tus_load,
    tus_offset,
)


@dataclass(frozen=True)
class Access:
    """What the vfolder core's FolderAccess carries, for this layer's tests."""

    folder_id: str
    root: Path
    staging: Path
    quota_key: str = "user:alice"
    size_limit: int | None = None
    used: int = 0
    perm: str = "wd"
    name: str = "f"


@dataclass
class Box:
    root: Path
    staging: Path
    outside: Path
    fs: FolderFS

    def access(self, **kw) -> Access:
        return Access("fid", self.root, self.staging, **kw)

    def snapshot(self) -> dict:
        """Everything outside the folder a refusal must not touch."""
        out = {}
        for p in sorted(self.outside.rglob("*")):
            st = p.lstat()
            out[str(p)] = (p.read_bytes() if p.is_file() else None, st.st_mtime_ns)
        return out

    def staged(self) -> list[str]:
        return sorted(os.listdir(self.staging))


@pytest.fixture
def box(tmp_path) -> Box:
    """A folder root with symlinks pointing out of it, a sibling directory
    with a secret, and a staging directory."""
    root = tmp_path / "storage" / "folder"
    staging = tmp_path / "storage" / ".staging"
    outside = tmp_path / "outside"
    for d in (root, staging, outside):
        d.mkdir(parents=True)
    (outside / "secret").write_bytes(b"top secret")
    (outside / "subdir").mkdir()
    (root / "a").mkdir()
    (root / "a" / "b.txt").write_bytes(b"bee")
    (root / "link_etc").symlink_to("/etc")
    (root / "link_out").symlink_to(outside)
    (root / "link_secret").symlink_to(outside / "secret")
    (root / "link_rel").symlink_to("../../outside")
    return Box(root, staging, outside, FolderFS(root))


# --- parsing --------------------------------------------------------------

REFUSED_AT_PARSE = [
    "../x", "a/../../x", "/etc/passwd", "..", ".", "a/./b", "a/..", "a//b", "x\x00y",
    "a\x01b", "a\nb", "a\\..\\x", "a\uff0f..\uff0fx", "\uff0f", "\u2024\u2024/x",
    "\u2025", "a/\u2024\u2024", "\uff0e\uff0e/x", "\uff0e", "\u202eevil", "x\ud800",
    "a" * 256, "/".join(["a"] * 65), ("a/" * 2100)[:4100],
]


@pytest.mark.parametrize("text", REFUSED_AT_PARSE)
def test_traversal_and_injection_paths_are_refused_by_the_parser(text):
    with pytest.raises(BadPath):
        parse_path(text)


def test_a_dot_component_is_refused_not_normalised():
    with pytest.raises(BadPath, match=r"'\.' and '\.\.' are not allowed"):
        parse_path("a/./b")


def test_the_root_is_the_empty_path_only_where_allowed():
    assert parse_path("", root_ok=True) == ()
    with pytest.raises(BadPath):
        parse_path("")
    with pytest.raises(BadPath):
        parse_path("/", root_ok=True)


def test_a_trailing_slash_names_the_directory():
    assert parse_path("a/b/") == ("a", "b")


def test_percent_encoded_dots_are_a_plain_name():
    assert parse_path("%2e%2e/x") == ("%2e%2e", "x")
    assert parse_path("%252e%252e") == ("%252e%252e",)


def test_names_are_normalised_to_nfc():
    assert parse_path("e\u0301.txt") == ("\u00e9.txt",)


def test_plain_names_with_dots_are_fine():
    assert parse_path("a..b/.hidden/...") == ("a..b", ".hidden", "...")


PIECES = st.sampled_from(["..", ".", "/", "\\", "\x00", "\u2024", "\u2025", "\uff0f", "\uff0e",
                          "%2e", "%2f", "a", "\u00e9", "e\u0301", " ", "~", "\u202e"])
PATHS = st.lists(PIECES | st.text(max_size=6), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=PATHS)
def test_every_path_is_refused_or_stays_inside_the_root(tmp_path_factory, text):
    root = Path("/srv/vfolders/root")
    try:
        parts = parse_path(text, root_ok=True)
    except BadPath:
        return
    for part in parts:
        assert part not in ("", ".", "..") and "/" not in part and "\x00" not in part
    resolved = Path(os.path.normpath(root.joinpath(*parts)))
    assert resolved == root or root in resolved.parents


# --- symlinks and the sentinel ----------------------------------------------

SYMLINK_ESCAPES = ["link_etc/passwd", "link_out/secret", "link_rel/secret", "link_out/subdir/x",
                   "link_out/../outside/secret"]


def _attempts(fs: FolderFS, text: str):
    """Every operation on a path, one at a time (each must be refused)."""
    try:
        parts = parse_path(text)
    except BadPath:
        parts = None
    ops = {
        "stat": lambda: fs.stat(parts),
        "list": lambda: fs.list(parts),
        "mkdir": lambda: fs.mkdir(parts),
        "mkdir -p": lambda: fs.mkdir(parts + ("new",), parents=True),
        "read": lambda: os.close(fs.open_read(parts)[0]),
        "delete": lambda: fs.delete(parts, recursive=True),
        "move from": lambda: fs.move(parts, ("moved",), overwrite=True),
        "move to": lambda: fs.move(("a", "b.txt"), parts, overwrite=True),
    }
    return parts, ops


@pytest.mark.parametrize("text", SYMLINK_ESCAPES + REFUSED_AT_PARSE[:12])
def test_no_operation_leaves_the_folder(box, text):
    before = box.snapshot()
    parts, ops = _attempts(box.fs, text)
    for name, op in ops.items():
        if parts is None:
            continue  # the parser refused it (tested above)
        with pytest.raises(ApiError):
            op()
    assert box.snapshot() == before
    assert (box.root / "a" / "b.txt").read_bytes() == b"bee"


def test_a_symlink_is_listed_as_a_symlink(box):
    entries = {e["name"]: e for e in box.fs.list(())}
    assert entries["link_etc"]["type"] == "symlink"
    assert entries["link_out"]["type"] == "symlink"
    assert entries["link_etc"]["size"] is None
    assert entries["a"]["type"] == "dir"
    assert box.fs.stat(("link_secret",))["type"] == "symlink"


@pytest.mark.parametrize("name", ["link_secret", "link_etc", "link_out"])
def test_a_symlink_is_never_read_through(box, name):
    with pytest.raises(Conflict, match="symlink"):
        box.fs.open_read((name,))


def test_a_symlinked_directory_in_the_middle_of_a_path_is_refused(box):
    (box.root / "a" / "in").symlink_to(box.outside)
    before = box.snapshot()
    for op in (lambda: box.fs.list(("a", "in")), lambda: box.fs.stat(("a", "in", "secret")),
               lambda: box.fs.mkdir(("a", "in", "x"), parents=True),
               lambda: box.fs.delete(("a", "in", "secret"))):
        with pytest.raises(Conflict, match="a symlink"):
            op()
    assert box.snapshot() == before


def test_deleting_a_symlink_removes_the_link_not_its_target(box):
    before = box.snapshot()
    assert box.fs.delete(("link_secret",)) == 0
    assert box.fs.delete(("link_out",), recursive=True) == 0
    assert not (box.root / "link_secret").is_symlink()
    assert not (box.root / "link_out").is_symlink()
    assert box.snapshot() == before


def test_moving_a_symlink_moves_the_link(box):
    before = box.snapshot()
    box.fs.move(("link_out",), ("a", "moved"))
    assert (box.root / "a" / "moved").is_symlink()
    assert box.snapshot() == before


def test_overwriting_a_symlink_replaces_the_link_not_its_target(box):
    before = box.snapshot()
    freed = box.fs.move(("a", "b.txt"), ("link_secret",), overwrite=True)
    assert freed == 0
    assert not (box.root / "link_secret").is_symlink()
    assert (box.root / "link_secret").read_bytes() == b"bee"
    assert box.snapshot() == before


def test_a_tree_delete_removes_links_inside_and_not_their_targets(box):
    tree = box.root / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "f").write_bytes(b"12345")
    (tree / "g").write_bytes(b"123")
    (tree / "to_out").symlink_to(box.outside)
    (tree / "sub" / "to_secret").symlink_to(box.outside / "secret")
    before = box.snapshot()
    with pytest.raises(Conflict, match="not empty"):
        box.fs.delete(("tree",))
    assert box.fs.delete(("tree",), recursive=True) == 8
    assert not tree.exists()
    assert box.snapshot() == before


def test_a_literal_percent_name_stays_inside(box):
    box.fs.mkdir(parse_path("%2e%2e"))
    box.fs.mkdir(parse_path("%252e%252e/x"), parents=True)
    assert (box.root / "%2e%2e").is_dir()
    assert (box.root / "%252e%252e" / "x").is_dir()
    assert sorted(os.listdir(box.root.parent)) == [".staging", "folder"]


# --- tree operations ---------------------------------------------------------

def test_mkdir_parents_and_conflicts(box):
    entry = box.fs.mkdir(("x", "y", "z"), parents=True)
    assert entry["type"] == "dir" and (box.root / "x" / "y" / "z").is_dir()
    assert box.fs.mkdir(("x", "y"), parents=True)["type"] == "dir"  # like mkdir -p
    with pytest.raises(Conflict, match="already exists"):
        box.fs.mkdir(("x",))
    with pytest.raises(NotFound, match="no such directory: nope"):
        box.fs.mkdir(("nope", "q"))
    with pytest.raises(Conflict, match="not a directory"):
        box.fs.mkdir(("a", "b.txt", "q"), parents=True)


def test_move_refuses_to_overwrite_unless_asked_and_never_replaces_a_directory(box):
    (box.root / "c.txt").write_bytes(b"0123456789")
    with pytest.raises(Conflict, match="overwrite=true"):
        box.fs.move(("a", "b.txt"), ("c.txt",))
    assert (box.root / "c.txt").read_bytes() == b"0123456789"
    with pytest.raises(Conflict, match="never replaced"):
        box.fs.move(("c.txt",), ("a",), overwrite=True)
    (box.root / "d").mkdir()
    with pytest.raises(Conflict, match="with a directory"):
        box.fs.move(("d",), ("c.txt",), overwrite=True)
    with pytest.raises(Conflict, match="into itself"):
        box.fs.move(("a",), ("a", "inner"))
    assert box.fs.move(("a", "b.txt"), ("c.txt",), overwrite=True) == 10
    assert (box.root / "c.txt").read_bytes() == b"bee"
    assert box.fs.move(("d",), ("a", "d")) == 0
    assert (box.root / "a" / "d").is_dir()
    with pytest.raises(NotFound):
        box.fs.move(("gone",), ("x",))


def test_list_and_stat(box):
    assert [e["name"] for e in box.fs.list(("a",))] == ["b.txt"]
    entry = box.fs.stat(("a", "b.txt"))
    assert entry["type"] == "file" and entry["size"] == 3 and entry["mtime"].endswith("+00:00")
    with pytest.raises(Conflict, match="not a directory"):
        box.fs.list(("a", "b.txt"))
    with pytest.raises(NotFound):
        box.fs.stat(("a", "none"))
    assert box.fs.stat(())["type"] == "dir"


def test_nfd_and_nfc_names_are_the_same_file(box):
    (box.root / "\u00e9.txt").write_bytes(b"x")
    assert box.fs.stat(parse_path("e\u0301.txt"))["size"] == 1
    assert box.fs.delete(parse_path("e\u0301.txt")) == 1


def test_a_fifo_is_not_read(box):
    os.mkfifo(box.root / "fifo")
    with pytest.raises(Conflict, match="not a regular file"):
        box.fs.open_read(("fifo",))


# --- quota --------------------------------------------------------------------

async def test_exactly_at_the_limit_is_allowed_one_byte_over_is_refused():
    book = QuotaBook()
    r = await book.reserve("user:alice", 10, used=90, limit=100)
    assert book.in_flight("user:alice") == 10
    book.release(r)
    await book.reserve("user:alice", 5, used=90, limit=100)
    with pytest.raises(QuotaExceeded) as e:
        await book.reserve("user:alice", 6, used=90, limit=100)
    assert e.value.message == "vfolder quota: used 90 + in flight 5 + upload 6 > limit 100 bytes"
    assert e.value.status == 413
    # other keys have their own limit; None is unlimited
    await book.reserve("user:bob", 10**15, used=0, limit=None)
    await book.reserve("project:acme/ml", 100, used=0, limit=100)


async def test_two_uploads_racing_for_the_last_bytes_exactly_one_wins():
    book = QuotaBook()
    results = await asyncio.gather(
        *(book.reserve("user:alice", 60, used=40, limit=100) for _ in range(2)),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["QuotaExceeded", "Reservation"]
    assert book.in_flight("user:alice") == 60


async def test_an_upload_over_the_limit_writes_nothing(box):
    uploads = Uploads()
    with pytest.raises(QuotaExceeded):
        await uploads.begin(box.access(size_limit=100, used=90), ("new.bin",), 11, False)
    assert box.staged() == [] and not (box.root / "new.bin").exists()
    assert uploads.book.in_flight("user:alice") == 0


async def test_uploads_exactly_filling_the_quota_land_and_count(box):
    uploads = Uploads()
    changes = []
    access = box.access(size_limit=100, used=90)
    p = await uploads.begin(access, ("new.bin",), 10, False)
    p.upload.write(b"0123456789")
    entry, delta = await uploads.finish(p, access, lambda fid, d: changes.append((fid, d)))
    assert entry["size"] == 10 and delta == 10 and changes == [("fid", 10)]
    assert (box.root / "new.bin").read_bytes() == b"0123456789"
    assert box.staged() == [] and uploads.book.in_flight("user:alice") == 0


async def test_concurrent_uploads_racing_for_the_last_bytes_one_lands(box):
    uploads = Uploads()
    access = box.access(size_limit=100, used=40)
    results = await asyncio.gather(
        *(uploads.begin(access, (f"f{i}",), 60, False) for i in range(2)),
        return_exceptions=True,
    )
    won = [r for r in results if not isinstance(r, Exception)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(won) == 1 and isinstance(lost[0], QuotaExceeded)
    assert len(box.staged()) == 1
    uploads.abort(won[0])


async def test_an_interrupted_upload_leaves_nothing_and_releases_its_bytes(box):
    uploads = Uploads()
    access = box.access(size_limit=100)
    p = await uploads.begin(access, ("half.bin",), 10, False)
    p.upload.write(b"01234")
    assert len(box.staged()) == 1
    uploads.abort(p)
    uploads.abort(p)  # idempotent
    assert box.staged() == [] and not (box.root / "half.bin").exists()
    assert uploads.book.in_flight("user:alice") == 0
    with pytest.raises(BadUpload, match="0 of the declared 10"):
        await uploads.finish(await uploads.begin(access, ("b",), 10, False), access, None)
    assert box.staged() == [] and uploads.book.in_flight("user:alice") == 0


async def test_a_body_longer_than_declared_is_refused(box):
    uploads = Uploads()
    p = await uploads.begin(box.access(), ("x",), 3, False)
    with pytest.raises(BadUpload, match="longer than the declared 3"):
        p.upload.write(b"0123")
    uploads.abort(p)
    assert box.staged() == []


async def test_upload_overwrite_rules_and_usage_delta(box):
    uploads = Uploads()
    access = box.access()
    with pytest.raises(Conflict, match="overwrite=true"):
        await uploads.begin(access, ("a", "b.txt"), 1, False)
    with pytest.raises(Conflict, match="never replaced"):
        await uploads.begin(access, ("a",), 1, True)
    with pytest.raises(NotFound):
        await uploads.begin(access, ("nope", "x"), 1, False)
    p = await uploads.begin(access, ("a", "b.txt"), 5, True)
    p.upload.write(b"12345")
    _, delta = await uploads.finish(p, access, lambda *a: None)
    assert delta == 5 - 3
    # a file appearing under the name while uploading wins over a plain upload
    p = await uploads.begin(access, ("late.txt",), 1, False)
    p.upload.write(b"x")
    (box.root / "late.txt").write_bytes(b"first")
    with pytest.raises(Conflict):
        await uploads.finish(p, access, lambda *a: None)
    assert (box.root / "late.txt").read_bytes() == b"first"
    assert box.staged() == [] and uploads.book.in_flight("user:alice") == 0


async def test_an_upload_to_a_symlink_target_path_writes_nothing_outside(box):
    uploads = Uploads()
    before = box.snapshot()
    for parts in (("link_out", "new"), ("link_etc", "x"), ("link_secret",)):
        with pytest.raises(ApiError):
            p = await uploads.begin(box.access(), parts, 1, False)
            p.upload.write(b"x")
            await uploads.finish(p, box.access(), lambda *a: None)
    # overwrite replaces the link itself
    p = await uploads.begin(box.access(), ("link_secret",), 1, True)
    p.upload.write(b"x")
    await uploads.finish(p, box.access(), lambda *a: None)
    assert (box.root / "link_secret").read_bytes() == b"x"
    assert box.snapshot() == before and box.staged() == []


# --- tus state and the sweep ----------------------------------------------------

async def test_tus_state_lives_on_disk_and_survives_a_new_process(box):
    access = box.access(size_limit=100)
    first = Uploads()
    state = await first.tus_create(access, "alice", ("t.bin",), 10, False, "now")
    up = first.tus_open(access, state, 0, 4)
    up.write(b"0123")
    first.tus_pause(up)
    # a new process: nothing in memory
    second = Uploads()
    state2 = second.tus_get(access, "alice", state.id)
    assert state2 == state and tus_offset(box.staging, state2) == 4
    with pytest.raises(NotFound):
        second.tus_get(access, "bob", state.id)
    with pytest.raises(NotFound):
        second.tus_get(Access("other", box.root, box.staging), "alice", state.id)
    await second.tus_reserve(access, state2)
    assert second.book.in_flight("user:alice") == 10
    with pytest.raises(Conflict, match="has 4 bytes"):
        second.tus_open(access, state2, 0, 6)
    with pytest.raises(BadUpload, match="passes the upload's length"):
        second.tus_open(access, state2, 4, 7)
    up = second.tus_open(access, state2, 4, 6)
    with pytest.raises(Conflict, match="another request"):
        second.tus_open(access, state2, 4, 6)
    up.write(b"456789")
    changes = []
    await second.tus_complete(access, state2, up, lambda f, d: changes.append(d))
    assert (box.root / "t.bin").read_bytes() == b"0123456789" and changes == [10]
    assert box.staged() == [] and second.book.in_flight("user:alice") == 0
    assert tus_load(box.staging, state.id) is None


async def test_tus_termination_frees_everything(box):
    uploads = Uploads()
    access = box.access(size_limit=10)
    state = await uploads.tus_create(access, "alice", ("t.bin",), 10, False, "now")
    with pytest.raises(QuotaExceeded):
        await uploads.tus_create(access, "alice", ("u.bin",), 1, False, "now")
    uploads.tus_end(access, state)
    assert box.staged() == [] and uploads.book.in_flight("user:alice") == 0


def test_tus_ids_are_checked_before_touching_the_disk(box):
    for bad in ("../../outside/secret", "x" * 32, "", "A" * 32):
        assert tus_load(box.staging, bad) is None


def test_upload_metadata_round_trip_and_refusals():
    header = encode_metadata({"path": "a/\u00e9.txt", "filename": "x"})
    assert parse_metadata(header) == {"path": "a/\u00e9.txt", "filename": "x"}
    assert parse_metadata("") == {}
    for bad in ("path !!!", "path YQ==,path YQ==", "pa th YQ==", "path //8="):
        with pytest.raises(BadUpload):
            parse_metadata(bad)


HOUR = 3600.0
T = "0123456789abcdef0123456789abcdef"
U = "fedcba9876543210fedcba9876543210"


def test_the_sweep_removes_old_leftovers_and_idle_tus_uploads_only():
    now = 1_000_000.0
    entries = [
        (f"put-{T}.part", now - 25 * HOUR),        # crash leftover: goes
        (f"put-{U}.part", now - 1 * HOUR),         # recent: maybe in flight elsewhere
        (f"tus-{T}.json", now - 100 * HOUR),       # tus, but its part was written lately
        (f"tus-{T}.part", now - 2 * HOUR),
        (f"tus-{U}.json", now - 200 * HOUR),       # idle tus upload: both go
        (f"tus-{U}.part", now - 200 * HOUR),
        ("tus-" + "1" * 32 + ".part", now - 30 * HOUR),  # part without state: goes
        ("tus-" + "2" * 32 + ".json.tmp", now - 30 * HOUR),
        ("notes.txt", now - 1000 * HOUR),          # not ours: kept
    ]
    names, ended = plan_sweep(entries, now, 24 * HOUR, 168 * HOUR)
    assert sorted(names) == sorted([f"put-{T}.part", f"tus-{U}.json", f"tus-{U}.part",
                                    "tus-" + "1" * 32 + ".part",
                                    "tus-" + "2" * 32 + ".json.tmp"])
    assert ended == [U]
    names, ended = plan_sweep(entries, now, 24 * HOUR, 168 * HOUR,
                              busy=frozenset({f"put-{T}.part", f"tus-{U}.part"}))
    assert f"put-{T}.part" not in names and ended == []


async def test_the_sweep_runs_at_the_first_use_of_a_staging_directory(box):
    old = box.staging / f"put-{T}.part"
    old.write_bytes(b"crash")
    os.utime(old, (1000.0, 1000.0))
    uploads = Uploads(clock=lambda: 1000.0 + 25 * HOUR)
    p = await uploads.begin(box.access(), ("n",), 0, False)
    assert box.staged() == [p.upload.name]
    uploads.abort(p)


def test_an_upload_writer_resumes_at_the_end_of_its_file(box):
    u = Upload.create(box.staging, 6)
    u.write(b"abc")
    u.close()
    again = Upload.resume(box.staging, u.name, 6)
    assert again.offset == 3
    again.write(b"def")
    again.sync()
    assert (box.staging / u.name).read_bytes() == b"abcdef"
    again.abort()
    assert box.staged() == []


async def test_an_idle_tus_upload_expires_at_a_later_sweep_and_frees_its_bytes(box):
    now = [1_000_000.0]
    uploads = Uploads(clock=lambda: now[0], tus_idle=168 * HOUR)
    access = box.access(size_limit=10)
    state = await uploads.tus_create(access, "alice", ("t.bin",), 10, False, "now")
    for name in (f"tus-{state.id}.json", f"tus-{state.id}.part"):
        os.utime(box.staging / name, (now[0], now[0]))
    now[0] += 30 * 60
    assert uploads.sweep(box.staging) == []  # not due yet
    now[0] += 169 * HOUR
    assert uploads.sweep(box.staging) == [state.id]
    assert box.staged() == [] and uploads.book.in_flight("user:alice") == 0
