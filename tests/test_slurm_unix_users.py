"""Slurm sessions as their users' Unix accounts (``unix_users``, docs/sessions.md):
through the real hub and the real single-node Slurm, with Unix accounts this
module creates (and removes), each job is its user's, its output is theirs
alone, and one user's job cannot read another's output, home or session log.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from hub_fixtures import launch_hub, require, stop_hub
from session_fixtures import (allocations, eventually, hub_log, run_in_terminal, server_of, spawn,
                              stop_server, wait_ready)
from test_slurm_sessions import PARTITION
from spawner.jobfiles import run_by_others, unreadable_part
from spawner.slurm import HubgridSlurmSpawner


def job_users(name: str) -> list[str]:
    """The Unix users of Slurm's jobs named ``name``."""
    out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%u"], capture_output=True, text=True,
                         check=True).stdout
    return out.split()


@pytest.fixture(scope="module")
def accounts():
    """Two Unix accounts, homes 0700 (as Debian's adduser makes them), removed afterwards."""
    require("root (useradd)", os.geteuid() == 0, "run the suite as root, as `make test` does")
    require("sudo", shutil.which("sudo") is not None, "scripts/start-slurm.sh installs it")
    tag = uuid.uuid4().hex[:6]
    names = [f"hgtest-a-{tag}", f"hgtest-b-{tag}", f"hgtest-c-{tag}"]
    made = []
    try:
        for name in names:
            # C: an account whose home was never made
            home = ["-m", "-K", "HOME_MODE=0700"] if "-c-" not in name else ["-M"]
            subprocess.run(["useradd", *home, "-s", "/bin/sh", name], check=True)
            made.append(name)
        yield names
    finally:
        for name in made:
            for jid in subprocess.run(["squeue", "-h", "-u", name, "-o", "%i"], capture_output=True,
                                      text=True).stdout.split():
                subprocess.run(["scancel", jid])
            subprocess.run(["userdel", "-r", "-f", name], capture_output=True)


SERVER = Path(sys.executable).parent / "jupyterhub-singleuser"  # the sessions' command


@pytest.fixture(scope="module")
def open_install():
    """The venv and its Python runnable by the accounts. On these machines
    the venv was made from a Python under /root (0700): the directories in
    the way are opened for traversal alone (o+x, not listing) while the module
    runs, and closed again after, as a site installs hubgrid where its users
    can run it (docs/sessions.md)."""
    changed = []
    try:
        for _ in range(10):
            part = run_by_others(SERVER)
            if not part or not Path(part).is_dir():
                break
            mode = stat.S_IMODE(os.stat(part).st_mode)
            changed.append((part, mode))
            os.chmod(part, mode | stat.S_IXOTH)
        assert run_by_others(SERVER) == "", run_by_others(SERVER)
        yield
    finally:
        for part, mode in reversed(changed):
            os.chmod(part, mode)


@pytest.fixture(scope="module")
def users_hub(accounts, open_install, tmp_path_factory):
    require("Slurm", bool(PARTITION) and shutil.which("sbatch") is not None,
            "run `make test` (scripts/start-slurm.sh)")
    state = tmp_path_factory.mktemp("slurm-users-hub")
    config = (f"c.HubgridSlurmSpawner.partitions = {{'default': {PARTITION!r}}}\n"
              "c.HubgridSlurmSpawner.unix_users = True\n"
              "c.HubgridSlurmSpawner.pending_poll_interval = 0.5\n"
              "c.HubgridSlurmSpawner.startup_poll_interval = 0.5\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n")
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "slurm"}, config=config)
    try:
        yield hub
    finally:
        stop_hub(hub)


def job_dir(user: str) -> Path:
    return Path(pwd.getpwnam(user).pw_dir) / ".hubgrid" / "slurm"


def owner_and_mode(path: Path) -> tuple[str, int]:
    st = os.stat(path)
    return pwd.getpwuid(st.st_uid).pw_name, stat.S_IMODE(st.st_mode)


def test_each_job_is_its_users_and_cannot_read_anothers(users_hub, accounts):
    hub, (a, b, _) = users_hub, accounts
    for user in (a, b):
        assert hub.login(user).status_code == 302
    r = spawn(hub, a, "one", cpu="1", mem="512M")
    assert r.status_code in (201, 202), r.text
    try:
        wait_ready(hub, a, "one")
        assert job_users(f"hubgrid-{a}") == [a]  # submitted as A: A's job
        [alloc_a] = allocations(hub, a, "allocated")
        log_a = job_dir(a) / f"{alloc_a['id']}.log"
        assert owner_and_mode(job_dir(a)) == (a, 0o700)
        assert owner_and_mode(log_a) == (a, 0o600)
        assert owner_and_mode(job_dir(a).parents[1]) == (a, 0o700)  # the home
        # A's own server, terminal and files: A's, with the venv's `hubgrid`
        shown = run_in_terminal(hub, a, "one", f"id -un; cat {log_a} >/dev/null && echo OWN-LOG-OK;"
                                " ls ~/.hubgrid >/dev/null && echo OWN-HOME-OK; command -v hubgrid")
        assert a in shown and "OWN-LOG-OK" in shown and "OWN-HOME-OK" in shown, shown
        assert str(Path(sys.executable).parent / "hubgrid") in shown, shown

        # B's batch job tries A's output, A's job directory and A's home
        probes = [log_a, job_dir(a), Path(pwd.getpwnam(a).pw_dir)]
        cmd = "id -un; " + "; ".join(
            f"if cat {p} >/dev/null 2>&1 || ls {p} >/dev/null 2>&1; then echo READ {p}; "
            f"else echo DENIED {p}; fi" for p in probes)
        r = spawn(hub, b, "probe", cpu="1", mem="256M", session_type="batch", command=cmd)
        assert r.status_code in (201, 202), r.text

        def ended():
            return [x for x in allocations(hub, b) if x["state"] == "released"] or None

        [done] = eventually(ended, timeout=120) or [None]
        assert done, hub_log(hub)
        assert done["exit_code"] == 0
        log_b = hub.call("GET", f"allocations/{done['id']}/logs", b)
        assert log_b.status_code == 200
        lines = log_b.text.splitlines()
        assert b in lines, log_b.text  # B's job ran as B; its log reached the service
        for p in probes:
            assert f"DENIED {p}" in lines and f"READ {p}" not in lines, log_b.text
        # B's files go once the service has its log
        assert eventually(lambda: list(job_dir(b).glob(f"{done['id']}.*")) == [], timeout=30)
        assert server_of(hub, b, "probe") is None or eventually(
            lambda: server_of(hub, b, "probe") is None, timeout=30)
    finally:
        stop_server(hub, a, "one")
    assert eventually(lambda: job_users(f"hubgrid-{a}") == [], timeout=30)  # cancelled as A
    assert [x["state"] for x in allocations(hub, a)] == ["released"]
    log = hub.call("GET", f"allocations/{alloc_a['id']}/logs", a)
    assert log.status_code == 200 and "jupyter" in log.text.lower(), log.text[-2000:]
    assert not log_a.exists()  # shipped, then removed


def test_a_hub_user_without_a_unix_account_is_refused_and_holds_nothing(users_hub):
    hub = users_hub
    user = "hgtest-none-" + uuid.uuid4().hex[:6]
    assert hub.login(user).status_code == 302
    r = spawn(hub, user, "x", cpu="1", mem="256M")
    assert r.status_code == 403 and "no Unix account" in r.text, r.text
    assert job_users(f"hubgrid-{user}") == []
    assert allocations(hub, user) == []  # refused before admission


def test_a_start_that_fails_as_the_user_is_released_and_leaves_no_job(users_hub, accounts):
    """The account exists, its home does not: the job's directory cannot be
    made as the user; the start fails with the reason, after admission, and
    the mixin releases the allocation."""
    hub, user = users_hub, accounts[2]
    assert not Path(pwd.getpwnam(user).pw_dir).exists()
    assert hub.login(user).status_code == 302
    r = spawn(hub, user, "x", cpu="1", mem="256M")
    assert r.status_code == 500 and "cannot make the job's output directory" in r.text, r.text
    assert job_users(f"hubgrid-{user}") == []
    assert eventually(lambda: [x["state"] for x in allocations(hub, user)] == ["released"],
                      timeout=30), allocations(hub, user)


def spawner(**config) -> HubgridSlurmSpawner:
    s = HubgridSlurmSpawner(**config)
    s.user = SimpleNamespace(name=pwd.getpwuid(os.geteuid()).pw_name)
    return s


@pytest.mark.parametrize("config, mapped, prefix", [
    ({}, False, ""),
    ({"unix_users": True}, True, "sudo -E -u {username}"),
    ({"exec_prefix": "sudo -E -u {username}"}, True, "sudo -E -u {username}"),
    ({"exec_prefix": "sudo -E -u {{ username }}"}, True, "sudo -E -u {{ username }}"),
    ({"exec_prefix": "env"}, False, "env"),
])
def test_jobs_run_as_their_users_when_configured_or_named_by_the_prefix(config, mapped, prefix):
    s = spawner(**config)
    assert (s.runs_as_user, s.exec_prefix) == (mapped, prefix)


@pytest.fixture
def open_dir():
    """A directory every user may enter (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="hubgrid-unix-users-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_a_session_script_closed_to_other_users_is_refused(open_dir):
    closed = open_dir / "closed"
    closed.mkdir(mode=0o700)
    script = closed / "server"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert unreadable_part(script, executable=True) == str(closed)
    closed.chmod(0o711)
    assert unreadable_part(script, executable=True) == ""
    script.chmod(0o750)
    assert unreadable_part(script, executable=True) == str(script)
    s = spawner(unix_users=True, cmd=[str(script)])
    with pytest.raises(Exception) as e:
        s.check_runs_as_user()
    assert e.value.status_code == 500 and "cannot run as another user" in str(e.value)
    script.chmod(0o755)
    s.check_runs_as_user()  # open to all: nothing to say


def test_a_server_whose_interpreter_is_closed_to_other_users_is_refused(open_dir):
    closed = open_dir / "closed"
    closed.mkdir(mode=0o700)
    python = closed / "python"
    python.write_text("")
    python.chmod(0o755)
    server = open_dir / "server"
    server.write_text(f"#!{python} -u\nimport sys\n")
    server.chmod(0o755)
    assert run_by_others(server) == str(closed)  # the #! line's interpreter, not the script
    closed.chmod(0o711)
    assert run_by_others(server) == ""


def run_sh_says(tmp_path, backend: str) -> str:
    """What ``HUBGRID_SPAWNER=<backend> make run`` prints before its backend
    starts (scripts/run.sh, stopped at the "demo GPUs" line that follows the
    warnings)."""
    from hub_fixtures import REPO, free_port

    env = {**os.environ, "HUBGRID_SPAWNER": backend, "HUBGRID_STATE_DIR": str(tmp_path / "state"),
           "HUBGRID_BIND_URL": f"http://127.0.0.1:{free_port()}"}
    lines = []
    with subprocess.Popen(["bash", "scripts/run.sh"], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          start_new_session=True) as proc:
        try:
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("demo GPUs"):
                    break
        finally:
            os.killpg(proc.pid, 9)
    return "".join(lines)


def test_make_run_with_slurm_says_its_sessions_are_not_isolated(tmp_path):
    said = run_sh_says(tmp_path, "slurm")
    assert "WARNING: Slurm sessions run as this hub's user" in said, said
    assert "NOT isolated" in said and "unix_users = True" in said, said
    assert "Slurm sessions" not in run_sh_says(tmp_path, "docker")
