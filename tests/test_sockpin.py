"""Pinning a session's socket (spawner/sockpin.py), on real sockets and links:
nothing outside a session connects by a name the session can replace."""

from __future__ import annotations

import os
import socket

import pytest

from spawner.sockpin import PinError, current, pin, private_dir

UID, GID = 1000, 100


_OPEN: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _closed():
    yield
    while _OPEN:
        _OPEN.pop().close()


@pytest.fixture
def session(tmp_path):
    """A session's directory (its uid's, 0700), a root-only directory for
    the pin, and a socket of the node's that no session may reach."""
    own = tmp_path / "session"
    own.mkdir(mode=0o700)
    os.chown(own, UID, GID)
    pins = tmp_path / "pins"
    pins.mkdir(mode=0o700)
    node_api = socket.socket(socket.AF_UNIX)
    node_api.bind(str(tmp_path / "node-api.sock"))
    node_api.listen()
    yield own, str(pins / "s.sock"), node_api
    node_api.close()


def _serve(path, uid=UID) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    os.chown(path, uid, GID)
    s.listen()
    _OPEN.append(s)
    return s


def _reaches(path: str, server: socket.socket) -> bool:
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect(path)
    except OSError:
        return False
    server.settimeout(1)
    try:
        server.accept()[0].close()
        return True
    except OSError:
        return False
    finally:
        c.close()


def test_nothing_is_pinned_before_the_session_made_its_socket(session):
    own, target, _ = session
    assert pin(str(own), "jupyter.sock", target) is False
    assert current(str(own), "jupyter.sock", target) is None
    assert not os.path.exists(target)


def test_the_pin_reaches_the_sessions_own_socket_whatever_it_does_to_its_name(session):
    own, target, node_api = session
    server = _serve(own / "jupyter.sock")
    assert pin(str(own), "jupyter.sock", target) is True
    assert current(str(own), "jupyter.sock", target) is True
    assert _reaches(target, server)
    # the session swaps its name for a link to the node's API, as `ln -s; mv -T` does
    os.symlink(node_api.getsockname(), own / "x")
    os.rename(own / "x", own / "jupyter.sock")
    assert current(str(own), "jupyter.sock", target) is False
    assert _reaches(target, server) and not _reaches(target, node_api)
    with pytest.raises(PinError, match="a link"):  # pinned again: refused, the pin kept
        pin(str(own), "jupyter.sock", target)
    assert _reaches(target, server) and not _reaches(target, node_api)
    server.close()


@pytest.mark.parametrize("plant", ["symlink", "file", "other owner", "hard link", "fifo"])
def test_what_is_not_the_sessions_own_fresh_socket_is_refused_and_not_pinned(session, plant):
    own, target, node_api = session
    name = own / "jupyter.sock"
    if plant == "symlink":
        os.symlink(node_api.getsockname(), name)
    elif plant == "file":
        name.write_text("x")
        os.chown(name, UID, GID)
    elif plant == "other owner":  # root's socket in the session's directory
        _serve(name, uid=0)
    elif plant == "hard link":  # another socket of the same uid, linked in
        elsewhere = own.parent / "other.sock"
        _serve(elsewhere)
        os.link(elsewhere, name)
    else:
        os.mkfifo(name)
        os.chown(name, UID, GID)
    with pytest.raises(PinError):
        pin(str(own), "jupyter.sock", target)
    assert not os.path.lexists(target)


def test_a_session_directory_others_may_write_is_refused(session):
    own, target, _ = session
    _serve(own / "jupyter.sock")
    os.chmod(own, 0o777)
    with pytest.raises(PinError, match="written by others"):
        pin(str(own), "jupyter.sock", target)


def test_a_removed_name_or_a_rebound_socket_is_not_current(session):
    own, target, _ = session
    first = _serve(own / "jupyter.sock")
    pin(str(own), "jupyter.sock", target)
    os.unlink(own / "jupyter.sock")
    assert current(str(own), "jupyter.sock", target) is False
    _serve(own / "jupyter.sock")  # another socket under the same name
    assert current(str(own), "jupyter.sock", target) is False
    first.close()


def test_a_private_directory_is_made_and_one_others_may_write_is_refused(tmp_path):
    old = os.umask(0o077)  # as make run's hub runs
    try:
        private_dir(str(tmp_path / "pins"), 0o711, make=True)
    finally:
        os.umask(old)
    assert oct(os.stat(tmp_path / "pins").st_mode & 0o777) == "0o711"
    private_dir(str(tmp_path / "pins"), make=True)  # again: kept
    os.chmod(tmp_path / "pins", 0o1777)
    with pytest.raises(OSError, match="only uid"):
        private_dir(str(tmp_path / "pins"))
    os.symlink(tmp_path / "pins", tmp_path / "link")
    with pytest.raises(OSError):
        private_dir(str(tmp_path / "link"))
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, UID, GID)
    with pytest.raises(OSError):
        private_dir(str(theirs))
