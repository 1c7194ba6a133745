"""Where a spawn's CPU goes, read from the kernel: the session container's
cgroup (until it is ready), the hub's process group (hub, proxy, hubgrid
service, hub-side relays) and the Docker engines' daemons over a run.

Only for engines on this machine (their cgroups and processes are local);
anything not found reads as None and is left out of the medians.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
#: cgroup v1 (cgroupfs driver) and v2 (systemd driver) places of a container's CPU counter
CGROUP_FILES = ("/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage",
                "/sys/fs/cgroup/system.slice/docker-{id}.scope/cpu.stat",
                "/sys/fs/cgroup/docker/{id}/cpu.stat")
DAEMONS = ("dockerd", "containerd")


def container_id(docker_url: str, name_suffix: str) -> str | None:
    """The full id of the one running container whose name ends ``name_suffix``."""
    out = subprocess.run(["docker", "-H", docker_url, "ps", "-q", "--no-trunc",
                          "--filter", f"name={name_suffix}$"],
                         capture_output=True, text=True, timeout=30).stdout.split()
    return out[0] if len(out) == 1 else None


def container_seconds(container: str) -> float | None:
    """CPU seconds the container's cgroup used so far."""
    for pattern in CGROUP_FILES:
        path = Path(pattern.format(id=container))
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.name == "cpuacct.usage":
            return int(text) / 1e9
        fields = dict(line.split() for line in text.splitlines())
        return int(fields["usage_usec"]) / 1e6
    return None


def _stat(pid: str) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm is in parentheses and may hold spaces: split after its closing one
    head, _, rest = raw.rpartition(")")
    return [head.split("(", 1)[1]] + rest.split()


def processes_seconds(match) -> float:
    """CPU seconds (user + system) of every live process for which
    ``match(comm, fields)`` holds; ``fields`` as /proc/PID/stat after comm."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        st = _stat(pid)
        if st is None:
            continue
        comm, fields = st[0], st[1:]
        if match(comm, fields):
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK


def group_seconds(pgid: int) -> float:
    """The process group ``pgid``'s CPU seconds (its live members)."""
    return processes_seconds(lambda _comm, f: int(f[2]) == pgid)


def daemons_seconds() -> float:
    """The Docker engines' daemons' CPU seconds (dockerd, containerd)."""
    return processes_seconds(lambda comm, _f: comm in DAEMONS)
