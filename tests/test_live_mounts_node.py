"""Live mounts on the node (spawner/livemounts.py, spawner/dockerlive.py):
the pure plan and mountinfo reading as data, the container's bind, and the
real mounts on this machine (root) against a hostile folder: a planted
link, a folder swapped for a link, a name that leaves the directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from spawner import builders
from spawner.dockerlive import container_mount
from spawner.livemounts import Node, Step, check_name, is_shared_mount, mounted, plan


def m(name, mode="rw", path=None):
    return {"name": name, "mode": mode, "path": path or f"/vf/{name}"}


@pytest.mark.parametrize("wanted, present, steps", [
    ([], {}, []),
    ([m("a")], {}, [Step("mount", "a", "/vf/a", False)]),
    ([m("a", "ro")], {}, [Step("mount", "a", "/vf/a", True)]),
    ([m("a")], {"a": False}, []),
    ([], {"a": False, "b": True}, [Step("unmount", "a"), Step("unmount", "b")]),
    # a downgrade: unmounted, then mounted read-only
    ([m("a", "ro")], {"a": False}, [Step("unmount", "a"), Step("mount", "a", "/vf/a", True)]),
    # names that cannot be a mount point are never mounted
    ([m(".."), m("x/y"), m(""), m("."), m("ok")], {}, [Step("mount", "ok", "/vf/ok", False)]),
])
def test_the_plan_makes_the_live_directory_hold_what_the_service_lists(wanted, present, steps):
    assert plan(wanted, present) == steps


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\0b", "x" * 256])
def test_a_name_that_could_leave_the_directory_is_refused(name):
    with pytest.raises(ValueError):
        check_name(name)


INFO = (
    "30 25 0:26 / /run/hubgrid/live rw,relatime shared:12 - tmpfs tmpfs rw\n"
    "31 30 8:1 /vf/a /run/hubgrid/live/al-1/data rw,nosuid,nodev shared:13 - ext4 /dev/sda1 rw\n"
    "32 30 8:1 /vf/b /run/hubgrid/live/al-1/my\\040notes ro,nosuid,nodev shared:13 - ext4 x rw\n"
    "33 30 8:1 /vf/c /run/hubgrid/live/al-2/data ro shared:13 - ext4 x rw\n"
    "34 25 0:27 / /srv private - tmpfs tmpfs rw\n")


def test_what_is_mounted_is_read_from_mountinfo():
    assert mounted(INFO, "/run/hubgrid/live/al-1") == {"data": False, "my notes": True}
    assert is_shared_mount(INFO, "/run/hubgrid/live")
    assert not is_shared_mount(INFO, "/srv")
    assert not is_shared_mount(INFO, "/nowhere")


def test_the_live_directory_is_a_read_only_rslave_bind_in_the_container():
    spec = builders.SessionSpec(
        allocation="a1", user="alice", domain="acme", project="ml", image="img",
        cpu=builders.Decimal(1), mem=0,
        mounts=(container_mount("/run/hubgrid/live/a1", "/home/jovyan/mounted-folders"),))
    assert builders.host_config(spec)["Mounts"] == [
        {"Type": "bind", "Source": "/run/hubgrid/live/a1",
         "Target": "/home/jovyan/mounted-folders", "ReadOnly": True,
         "BindOptions": {"Propagation": "rslave"}}]
    with pytest.raises(ValueError):
        container_mount("/run/hubgrid/live/a1", "mounted-folders")


# --- real mounts on this machine (root, no engine) ------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")


@pytest.fixture
def node(tmp_path):
    root = tmp_path / "live"
    n = Node(str(root))
    yield n
    for alloc in os.listdir(root) if root.exists() else []:
        n.discard(alloc)
    while True:  # the live root's own binds (made shared: one per prepare at most)
        with open("/proc/self/mountinfo") as f:
            if str(root) not in {line.split(" ")[4] for line in f}:
                break
        subprocess.run(["umount", "-l", str(root)], check=True)


@needs_root
def test_a_folder_is_bound_read_only_or_writable_and_goes_again(node, tmp_path):
    folder = tmp_path / "vf" / "f1"
    folder.mkdir(parents=True)
    (folder / "hello").write_text("hi")
    d = node.prepare("al-1")
    with open("/proc/self/mountinfo") as f:
        assert is_shared_mount(f.read(), node.root)
    assert oct(os.stat(d).st_mode & 0o777) == "0o755" and os.stat(d).st_uid == 0
    assert node.apply("al-1", [Step("mount", "ro", str(folder), True),
                               Step("mount", "rw", str(folder), False)]) == []
    assert node.present("al-1") == {"ro": True, "rw": False}
    assert Path(f"{d}/ro/hello").read_text() == "hi"
    with pytest.raises(OSError):
        Path(f"{d}/ro/new").write_text("x")
    Path(f"{d}/rw/new").write_text("x")
    assert (folder / "new").read_text() == "x"
    node.prepare("al-1")  # again: nothing changes
    assert node.apply("al-1", plan([], node.present("al-1"))) == []
    assert node.present("al-1") == {} and os.listdir(d) == []
    node.discard("al-1")
    assert not os.path.exists(d)


@needs_root
def test_links_in_the_folders_path_are_never_followed(node, tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("nope")
    vf = tmp_path / "vf"
    vf.mkdir()
    (vf / "swapped").symlink_to(secret)  # a folder replaced by a link
    real = vf / "real"
    real.mkdir()
    (real / "planted").symlink_to(secret)  # a link planted in a folder
    node.prepare("al-2")
    errors = node.apply("al-2", [Step("mount", "a", str(vf / "swapped"), False),
                                 Step("mount", "b", str(real / "planted"), False),
                                 Step("mount", "c", str(vf / ".." / "secret"), False)])
    assert len(errors) == 3, errors
    assert node.present("al-2") == {}
    # a link planted inside a mounted folder stays a link, to the session's own view
    assert node.apply("al-2", [Step("mount", "r", str(real), False)]) == []
    assert os.path.islink(f"{node.directory('al-2')}/r/planted")


@needs_root
def test_the_live_directory_must_be_roots_alone(node, tmp_path):
    d = node.prepare("al-3")
    os.chmod(d, 0o777)  # as if someone else could write it: nothing is mounted there
    folder = tmp_path / "f"
    folder.mkdir()
    assert node.apply("al-3", [Step("mount", "x", str(folder), False)]) != []
    assert node.present("al-3") == {}
    os.chmod(d, 0o755)
    with pytest.raises(ValueError):
        node.directory("../etc")
