"""Storage hosts as data: configuration, mount detection, XFS command lines.

Real XFS with project quotas cannot run on the test machine, so the
``xfs_quota`` command lines and the report parser are checked as data; what
runs them is checked with a recording runner (tests/test_vfolders.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quota_service.storage import hosts as storage

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:16 / /srv rw,noatime shared:2 - xfs /dev/sdb rw,attr2,inode64,prjquota
31 30 8:32 / /srv/plain rw,noatime shared:3 - xfs /dev/sdc rw,attr2,inode64,noquota
32 22 0:50 / /mnt/nfs rw - nfs4 server:/export rw,vers=4.2
33 22 8:48 / /mnt/with\\040space rw - xfs /dev/sdd rw,pquota
"""


def test_mountinfo_is_parsed_with_both_option_lists_and_escaped_points():
    mounts = storage.parse_mountinfo(MOUNTINFO + "garbage line\n")
    assert [(m.point, m.fstype) for m in mounts] == [
        ("/", "ext4"), ("/srv", "xfs"), ("/srv/plain", "xfs"), ("/mnt/nfs", "nfs4"),
        ("/mnt/with space", "xfs")]
    assert {"noatime", "prjquota", "inode64"} <= mounts[1].options


@pytest.mark.parametrize("path, point, quota", [
    ("/srv/hubgrid/vfolders", "/srv", True),
    ("/srv", "/srv", True),
    ("/srv/plain/vfolders", "/srv/plain", False),
    ("/srvx/vfolders", "/", False),
    ("/mnt/nfs/hubgrid", "/mnt/nfs", False),
    ("/mnt/with space/x", "/mnt/with space", True),
])
def test_the_mount_holding_a_path_decides_the_quota_capability(path, point, quota):
    mount = storage.mount_of(path, storage.parse_mountinfo(MOUNTINFO))
    assert mount.point == point
    assert storage.project_quota_usable(mount, has_tool=True) is quota
    assert storage.project_quota_usable(mount, has_tool=False) is False


def test_resolved_hosts_have_their_directories_staging_and_capabilities(tmp_path):
    hosts = storage.resolve_hosts({"local": {"path": str(tmp_path / "a")},
                                   "off": {"path": str(tmp_path / "b"), "quota": False}},
                                  mountinfo=f"1 0 8:1 / {tmp_path} rw - xfs /dev/x rw,prjquota\n",
                                  has_xfs_quota=True)
    assert hosts["local"].capabilities == ["usage", "quota"]
    assert hosts["off"].capabilities == ["usage"]
    assert hosts["local"].staging == tmp_path / "a" / ".staging"
    assert hosts["local"].staging.is_dir() and (tmp_path / "b" / ".staging").is_dir()
    assert storage.host_model(hosts["local"], False) == {"name": "local",
                                                         "capabilities": ["usage", "quota"]}


@pytest.mark.parametrize("config, words", [
    ({}, "at least one host"),
    ({"Bad Name": {"path": "/x"}}, "host name 'Bad Name'"),
    ({"local": {}}, "needs a 'path'"),
    ({"local": {"path": "relative"}}, "must be absolute"),
    ({"local": {"path": "/x", "colour": 1}}, "unknown key(s) colour"),
    ({"local": {"path": "/x", "quota": "yes"}}, "quota must be true or false"),
    ({"local": {"path": "/x", "xfs_project_base": 0}}, "xfs_project_base"),
])
def test_bad_host_configurations_are_refused_with_the_reason(config, words):
    with pytest.raises(storage.HostConfigError) as e:
        storage.check_host_config(config)
    assert words in str(e.value)


def test_the_service_refuses_a_bad_host_setting_at_once():
    from traitlets import TraitError

    from quota_service.app import HubgridService

    with pytest.raises(TraitError, match="must be absolute"):
        HubgridService(vfolder_hosts={"local": {"path": "rel"}})


HOST = storage.Host(name="xfs", path=Path("/srv/vf"), quota=True, mount_point="/srv",
                    xfs_project_base=5000)


def test_xfs_project_ids_are_one_per_owner_and_never_collide():
    assert storage.xfs_project_id(HOST, "user:alice", 7) == 5014
    assert storage.xfs_project_id(HOST, "project:acme/ml", 7) == 5015
    ids = {storage.xfs_project_id(HOST, f"{kind}:x", n)
           for kind in ("user", "project") for n in range(1, 200)}
    assert len(ids) == 2 * 199


def test_xfs_command_lines():
    folder = HOST.folder_dir("ab" * 16)
    assert storage.xfs_setup_commands(HOST, folder, 5014) == [
        ["xfs_quota", "-x", "-c", f"project -s -p /srv/vf/{'ab' * 16} 5014", "/srv"]]
    assert storage.xfs_limit_commands(HOST, 5014, 2**40) == [
        ["xfs_quota", "-x", "-c", "limit -p bhard=1099511627776 5014", "/srv"]]
    assert storage.xfs_limit_commands(HOST, 5014, None) == [
        ["xfs_quota", "-x", "-c", "limit -p bhard=0 5014", "/srv"]]
    assert storage.xfs_report_command(HOST) == [
        "xfs_quota", "-x", "-c", "report -p -b -N -n", "/srv"]


def test_the_xfs_report_is_read_in_bytes():
    report = """#0                 0          0          0     00 [--------]
#5014           1024          0    1048576     00 [--------]
#5015              3          0          0     00 [--------]
"""
    assert storage.parse_xfs_report(report) == {0: 0, 5014: 1024 * 1024, 5015: 3072}


def test_no_commands_run_for_hosts_without_quota():
    ran = []
    applier = storage.QuotaApplier(runner=ran.append)
    plain = storage.Host(name="p", path=Path("/x"))
    assert applier.new_folder(plain, Path("/x/f"), "user:a", 1, 10) == []
    assert ran == []


def test_remove_tree_only_deletes_a_folder_directory(tmp_path):
    host = storage.Host(name="h", path=tmp_path)
    outside = tmp_path.parent / "keep"
    outside.mkdir(exist_ok=True)
    (outside / "f").write_text("x")
    folder = tmp_path / ("ab" * 16)
    folder.mkdir()
    (folder / "escape").symlink_to(outside)
    storage.remove_tree(host, "ab" * 16)
    assert not folder.exists() and (outside / "f").exists()
    for bad in ("", "../keep", ".staging"):
        with pytest.raises(ValueError):
            storage.remove_tree(host, bad)
