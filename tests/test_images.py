"""The image registry as rules: names, labels, who may use an image, the
minimum a session must ask for, the manager and the scan of Docker hosts.

The pure parts are tested with plain data; the manager on SQLite and
PostgreSQL over the ``tenancy`` world (acme: root, ada, alice, bob; globex:
gus, gina); the scan against ``FakeDockerImages`` (a stand-in for
docker-py's low-level client that lists the images it was given) and, when
this machine's test run started Docker engines, against the real ones.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
from decimal import Decimal

import pytest
import sqlalchemy as sa

from quota_service.sessions import dockerscan, registry
from quota_service.core import images
from quota_service.scheduling.admission import Group, ImageFacts, Request, Snapshot, decide
from quota_service.core.errors import Conflict, Denied, Hidden, Invalid, NotFound
from quota_service.core.images import LabelError, ServicePort, parse_labels
from quota_service.core.models import Domain, Image
from quota_service.core.schemas import ImageCreate, ImageUpdate, parse

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
MiB = 2**20
MARK = {"ai.hubgrid.session-image": "1"}


# ---------------------------------------------------------------- names

@pytest.mark.parametrize("name", [
    "hubgrid/base:latest", "base:1", "cr.example.org/hubgrid/base:1.0", "a/b-c/d_e:v1.2-rc_3",
    "a__b:x", "a--b:x", "x:" + "t" * 128, "r" * 255 + ":t",
])
def test_a_valid_image_name_is_accepted_as_is(name):
    assert images.check_name(name) == name


@pytest.mark.parametrize("name, words", [
    ("hubgrid/base", "needs a tag"),
    ("localhost:5000/base", "needs a tag"),
    ("", "needs a tag"),
    ("Hubgrid/base:1", "the repository must be"),
    ("hubgrid//base:1", "the repository must be"),
    ("/base:1", "the repository must be"),
    ("base/:1", "the repository must be"),
    ("-base:1", "the repository must be"),
    ("ba..se:1", "the repository must be"),
    ("base:", "the tag must be"),
    ("base:.hidden", "the tag must be"),
    ("base:-x", "the tag must be"),
    ("base:a b", "the tag must be"),
    ("base:" + "t" * 129, "the tag must be"),
    ("r" * 256 + ":t", "the repository must be"),
    ("base@sha256:abc", "the repository must be"),
    ("ba\u00dfe:1", "the repository must be"),
])
def test_a_bad_image_name_is_refused_with_the_reason(name, words):
    with pytest.raises(ValueError, match=words):
        images.check_name(name)


# ---------------------------------------------------------------- labels as data

LABELS = [
    ("no labels of ours: nothing required",
     {"maintainer": "me"}, {}, []),
    ("the documented example",
     {**MARK, "ai.hubgrid.resource.min.cpu": "0.5", "ai.hubgrid.resource.min.mem": "256M",
      "ai.hubgrid.service-ports": "jupyterlab:http:lab,terminal:http:lab/terminals/1,files:http:files/"},
     {"cpu": "0.5", "mem": str(256 * MiB)},
     [("jupyterlab", "http", "lab"), ("terminal", "http", "lab/terminals/1"),
      ("files", "http", "files/")]),
    ("memory in bytes, and spaces around values",
     {"ai.hubgrid.resource.min.mem": " 1073741824 ", "ai.hubgrid.service-ports": " lab:http:lab "},
     {"mem": "1073741824"}, [("lab", "http", "lab")]),
    ("a GPU minimum and an empty path (the server's root)",
     {"ai.hubgrid.resource.min.gpu.shares": "0.25", "ai.hubgrid.service-ports": "root:http:"},
     {"gpu.shares": "0.25"}, [("root", "http", "")]),
    ("a zero minimum asks for nothing",
     {"ai.hubgrid.resource.min.cpu": "0"}, {}, []),
    ("an empty service-ports label declares none",
     {"ai.hubgrid.service-ports": ""}, {}, []),
]


@pytest.mark.parametrize("labels, min_slots, ports", [c[1:] for c in LABELS],
                         ids=[c[0] for c in LABELS])
def test_labels_declare_the_minimum_and_the_service_ports(labels, min_slots, ports):
    spec = parse_labels(labels)
    assert dict(spec.min_slots) == min_slots
    assert spec.service_ports == tuple(ServicePort(*p) for p in ports)
    assert dict(spec.labels) == {k: v for k, v in labels.items() if k.startswith("ai.hubgrid.")}


BAD_LABELS = [
    ("a minimum of an unknown slot",
     {"ai.hubgrid.resource.min.tpu": "1"},
     "label ai.hubgrid.resource.min.tpu: unknown slot 'tpu'"),
    ("a minimum that is not a number",
     {"ai.hubgrid.resource.min.cpu": "lots"},
     "label ai.hubgrid.resource.min.cpu: slot 'cpu': amount 'lots' is not a number"),
    ("a negative minimum",
     {"ai.hubgrid.resource.min.cpu": "-1"}, "label ai.hubgrid.resource.min.cpu:"),
    ("a minimum finer than the slot's quantum",
     {"ai.hubgrid.resource.min.cpu": "0.0001"}, "is not a multiple of 0.001"),
    ("a memory size with an unknown suffix",
     {"ai.hubgrid.resource.min.mem": "256X"}, "label ai.hubgrid.resource.min.mem:"),
    ("whole GPUs and a share together",
     {"ai.hubgrid.resource.min.gpu": "1", "ai.hubgrid.resource.min.gpu.shares": "0.5"},
     "labels ai.hubgrid.resource.min.*: ask for whole devices ('gpu') or a share"),
    ("a port item without a path",
     {"ai.hubgrid.service-ports": "lab:http"},
     "label ai.hubgrid.service-ports: 'lab:http' is not name:protocol:path"),
    ("a protocol other than http",
     {"ai.hubgrid.service-ports": "lab:tcp:lab"}, "protocol 'tcp' is not supported"),
    ("a port name with capitals",
     {"ai.hubgrid.service-ports": "Lab:http:lab"}, "service port name 'Lab'"),
    ("a port name too long",
     {"ai.hubgrid.service-ports": f"{'a' * 33}:http:lab"}, "service port name"),
    ("an absolute path",
     {"ai.hubgrid.service-ports": "lab:http:/lab"}, "must be relative"),
    ("a path that climbs out",
     {"ai.hubgrid.service-ports": "lab:http:lab/../../hub/admin"}, "must not contain '..'"),
    ("a path with a scheme",
     {"ai.hubgrid.service-ports": "evil:http:http://evil.example/"}, "no scheme"),
    ("a path with an encoded climb",
     {"ai.hubgrid.service-ports": "lab:http:%2e%2e/hub"}, "no scheme, query or '%'"),
    ("a path with a query",
     {"ai.hubgrid.service-ports": "lab:http:lab?x=1"}, "no scheme, query or '%'"),
    ("two ports of one name",
     {"ai.hubgrid.service-ports": "lab:http:lab,lab:http:tree"},
     "service port names must be unique: lab"),
    ("a value longer than a label may be",
     {"ai.hubgrid.note": "x" * 4097}, "label ai.hubgrid.note: longer than 4096"),
    ("too many labels of ours",
     {f"ai.hubgrid.x{i}": "" for i in range(65)}, "at most 64 ai.hubgrid.* labels"),
]


@pytest.mark.parametrize("labels, message", [c[1:] for c in BAD_LABELS],
                         ids=[c[0] for c in BAD_LABELS])
def test_a_malformed_label_is_reported_by_name(labels, message):
    with pytest.raises(LabelError, match=re.escape(message)):
        parse_labels(labels)


def test_other_labels_are_not_ours_and_never_refused():
    spec = parse_labels({"org.opencontainers.image.source": "x" * 10000, **MARK})
    assert dict(spec.labels) == MARK


# ---------------------------------------------------------------- who may use an image

@pytest.mark.parametrize("image_domains, allowed, domain, usable", [
    ([], [], "acme", True),
    (["acme"], [], "acme", True),
    (["globex"], [], "acme", False),
    (["acme", "globex"], [], "globex", True),
    ([], ["hubgrid/base:1"], "acme", True),
    ([], ["other:1"], "acme", False),
    (["acme"], ["other:1"], "acme", False),
    (["globex"], ["hubgrid/base:1"], "acme", False),
])
def test_an_image_is_usable_when_both_its_domains_and_the_domains_allow_list_allow_it(
        image_domains, allowed, domain, usable):
    assert images.usable_by("hubgrid/base:1", image_domains, domain, allowed) is usable


# ---------------------------------------------------------------- the apps of a session

PORTS = [{"name": "jupyterlab", "protocol": "http", "path": "lab"},
         {"name": "files", "protocol": "http", "path": "files/"}]


@pytest.mark.parametrize("base, user, server, urls", [
    ("/", "alice", "", ["/user/alice/lab", "/user/alice/files/"]),
    ("/", "alice", "gpu-1", ["/user/alice/gpu-1/lab", "/user/alice/gpu-1/files/"]),
    ("/jhub/", "alice", "", ["/jhub/user/alice/lab", "/jhub/user/alice/files/"]),
    ("/jhub", "a.b@x+y", "s", ["/jhub/user/a.b@x%2By/s/lab", "/jhub/user/a.b@x%2By/s/files/"]),
])
def test_apps_are_served_under_the_users_server(base, user, server, urls):
    apps = images.session_apps(base, user, server, PORTS)
    assert apps == [{"name": "jupyterlab", "url": urls[0]}, {"name": "files", "url": urls[1]}]


# ---------------------------------------------------------------- admission rules

GROUP = Group(name="gpu", accessible=True, session_types=frozenset({"interactive", "batch"}),
              largest_node={"cpu": Decimal(32), "mem": Decimal(2**40), "gpu": Decimal(4)},
              capacity={})
BASE = ImageFacts("hubgrid/base:1", {"cpu": Decimal("0.5"), "mem": Decimal(256 * MiB)}, True)


def judge(slots: dict, image: str | None = "hubgrid/base:1",
          facts: ImageFacts | None = BASE) -> tuple[str, list[str]]:
    req = Request(user="alice", keypair=None, project="ml", domain="acme", resource_group="gpu",
                  slots={k: Decimal(v) for k, v in slots.items()}, image=image)
    d = decide(req, Snapshot(now=NOW, levels=(), group=GROUP, image=facts))
    return d.verdict, [r.text for r in d.reasons]


IMAGE_RULES = [
    ("without an image nothing is checked (local processes have none)",
     {"cpu": "0.1"}, None, None, "admit", []),
    ("exactly the minimum is admitted",
     {"cpu": "0.5", "mem": str(256 * MiB)}, "hubgrid/base:1", BASE, "admit", []),
    ("more than the minimum is admitted",
     {"cpu": "8", "mem": "1073741824"}, "hubgrid/base:1", BASE, "admit", []),
    ("below the cpu minimum is refused with both numbers",
     {"cpu": "0.25", "mem": str(256 * MiB)}, "hubgrid/base:1", BASE, "refuse",
     ["image hubgrid/base:1 needs at least cpu 0.5 (requested 0.25)"]),
    ("a slot not asked for at all counts as zero",
     {"cpu": "1"}, "hubgrid/base:1", BASE, "refuse",
     ["image hubgrid/base:1 needs at least mem 256 MiB (requested 0 B)"]),
    ("every slot below the minimum is named",
     {"cpu": "0.1", "mem": "1"}, "hubgrid/base:1", BASE, "refuse",
     ["image hubgrid/base:1 needs at least cpu 0.5 (requested 0.1)",
      "image hubgrid/base:1 needs at least mem 256 MiB (requested 1 B)"]),
    ("an image not in the registry is unknown",
     {"cpu": "1"}, "nosuch/image:1", None, "refuse", ["unknown image 'nosuch/image:1'"]),
    ("an image the domain may not use is refused exactly like an unknown one",
     {"cpu": "1", "mem": "1073741824"}, "hubgrid/base:1", ImageFacts("hubgrid/base:1", {}, False),
     "refuse", ["unknown image 'hubgrid/base:1'"]),
    ("facts of another image never stand in for the one asked for",
     {"cpu": "1", "mem": "1073741824"}, "hubgrid/other:1", BASE, "refuse",
     ["unknown image 'hubgrid/other:1'"]),
    ("a GPU share minimum is met by a whole GPU",
     {"gpu": "1"}, "cuda:1", ImageFacts("cuda:1", {"gpu.shares": Decimal("0.25")}, True),
     "admit", []),
    ("a whole-GPU minimum is not met by a share",
     {"gpu.shares": "0.5"}, "cuda:1", ImageFacts("cuda:1", {"gpu": Decimal(1)}, True),
     "refuse", ["image cuda:1 needs at least gpu 1 (requested 0.5)"]),
]


@pytest.mark.parametrize("slots, image, facts, verdict, texts", [c[1:] for c in IMAGE_RULES],
                         ids=[c[0] for c in IMAGE_RULES])
def test_admission_checks_the_image_and_its_minimum(slots, image, facts, verdict, texts):
    assert judge(slots, image, facts) == (verdict, texts)


def test_an_image_refusal_is_a_record_with_its_numbers():
    req = Request(user="alice", keypair=None, project="ml", domain="acme", resource_group="gpu",
                  slots={"cpu": Decimal("0.25")}, image="hubgrid/base:1")
    reason = decide(req, Snapshot(now=NOW, levels=(), group=GROUP, image=BASE)).reasons[0]
    assert reason.as_dict() == {
        "code": "image", "kind": "refuse", "level": "image", "name": "hubgrid/base:1",
        "slot": "cpu", "requested": "0.25", "limit": "0.5",
        "text": "image hubgrid/base:1 needs at least cpu 0.5 (requested 0.25)",
    }


def test_an_inaccessible_group_is_refused_before_the_image_is_looked_at():
    closed = Group(**{**GROUP.__dict__, "accessible": False})
    req = Request(user="alice", keypair=None, project="ml", domain="acme", resource_group="gpu",
                  slots={"cpu": Decimal(1)}, image="nosuch:1")
    d = decide(req, Snapshot(now=NOW, levels=(), group=closed))
    assert [r.code for r in d.reasons] == ["access"]


# ---------------------------------------------------------------- the registry manager

def create(world, name="hubgrid/base:1", caller="root", **fields):
    body = parse(ImageCreate, {"name": name, **fields})
    with world.tx() as s:
        return registry.create_image(s, world.principal(caller), body, NOW)


def listed(world, caller) -> list[str]:
    with world.tx() as s:
        return [i["name"] for i in registry.list_images(s, world.principal(caller))]


def test_an_image_added_by_api_takes_its_minimum_and_ports_from_its_labels(tenancy):
    model = create(tenancy, labels={"ai.hubgrid.resource.min.cpu": "0.5",
                                    "ai.hubgrid.service-ports": "lab:http:lab"})
    assert model == {
        "name": "hubgrid/base:1",
        "labels": {"ai.hubgrid.resource.min.cpu": "0.5", "ai.hubgrid.service-ports": "lab:http:lab"},
        "min_slots": {"cpu": "0.5"},
        "service_ports": [{"name": "lab", "protocol": "http", "path": "lab"}],
        "session_types": ["batch", "interactive"], "domains": [], "source": "api",
        "created_at": NOW.isoformat(), "updated_at": NOW.isoformat(),
    }


def test_a_minimum_and_ports_given_directly_win_over_the_labels(tenancy):
    model = create(tenancy, labels={"ai.hubgrid.resource.min.cpu": "0.5"},
                   min_slots={"cpu": "2", "mem": "1G"},
                   service_ports=[{"name": "files", "path": "files/"}])
    assert model["min_slots"] == {"cpu": "2", "mem": str(2**30)}
    assert model["service_ports"] == [{"name": "files", "protocol": "http", "path": "files/"}]


@pytest.mark.parametrize("labels, words", [
    ({"ai.hubgrid.service-ports": "lab:http:/abs"}, "must be relative"),
    ({"ai.hubgrid.resource.min.tpu": "1"}, "unknown slot 'tpu'"),
    ({"maintainer": "me"}, "only ai.hubgrid.* labels are kept"),
])
def test_an_api_image_with_a_malformed_label_is_a_400_and_nothing_is_written(tenancy, labels, words):
    with pytest.raises(registry.BadLabel, match=re.escape(words)) as e:
        create(tenancy, labels=labels)
    assert e.value.status == 400
    assert tenancy.count(Image) == 0


def test_an_image_for_a_domain_that_does_not_exist_is_refused(tenancy):
    with pytest.raises(Invalid, match="no domain named 'nosuch'"):
        create(tenancy, domains=["acme", "nosuch"])
    assert tenancy.count(Image) == 0


def test_the_same_image_twice_is_a_conflict(tenancy):
    create(tenancy)
    with pytest.raises(Conflict):
        create(tenancy)
    assert tenancy.count(Image) == 1


@pytest.mark.parametrize("caller", ["ada", "alice", "gus"])
def test_only_a_superadmin_adds_images(tenancy, caller):
    with pytest.raises(Denied):
        create(tenancy, caller=caller)
    assert tenancy.count(Image) == 0


def test_each_domain_lists_only_the_images_it_may_use(tenancy):
    create(tenancy, "every/one:1")
    create(tenancy, "acme/only:1", domains=["acme"])
    create(tenancy, "globex/only:1", domains=["globex"])
    assert listed(tenancy, "alice") == listed(tenancy, "ada") == ["acme/only:1", "every/one:1"]
    assert listed(tenancy, "gina") == listed(tenancy, "gus") == ["every/one:1", "globex/only:1"]
    assert listed(tenancy, "root") == ["acme/only:1", "every/one:1", "globex/only:1"]


def test_a_domains_allow_list_narrows_what_it_sees(tenancy):
    create(tenancy, "every/one:1")
    create(tenancy, "every/two:1")
    with tenancy.tx() as s:
        s.scalar(sa.select(Domain).where(Domain.name == "acme")).allowed_images = ["every/two:1"]
    assert listed(tenancy, "alice") == ["every/two:1"]
    assert listed(tenancy, "gina") == ["every/one:1", "every/two:1"]


@pytest.mark.parametrize("caller, error", [("gina", Hidden), ("gus", Hidden), ("alice", None),
                                           ("ada", None), ("root", None)])
def test_an_image_the_callers_domain_may_not_use_is_not_found(tenancy, caller, error):
    create(tenancy, "acme/only:1", domains=["acme"])
    with tenancy.tx() as s:
        if error is None:
            assert registry.get_image(s, tenancy.principal(caller), "acme/only:1")["name"]
        else:
            with pytest.raises(error, match="image 'acme/only:1' not found"):
                registry.get_image(s, tenancy.principal(caller), "acme/only:1")


def test_a_missing_image_is_not_found_for_everybody(tenancy):
    for caller, error in (("root", NotFound), ("alice", Hidden)):
        with tenancy.tx() as s, pytest.raises(error):
            registry.get_image(s, tenancy.principal(caller), "nosuch:1")


def test_a_superadmin_changes_domains_minimum_and_ports(tenancy):
    create(tenancy, domains=["acme"])
    later = NOW + dt.timedelta(hours=1)
    body = parse(ImageUpdate, {"domains": ["globex", "acme", "globex"], "min_slots": {"mem": "1G"},
                               "service_ports": []})
    with tenancy.tx() as s:
        model = registry.update_image(s, tenancy.principal("root"), "hubgrid/base:1", body, later)
    assert model["domains"] == ["acme", "globex"]
    assert model["min_slots"] == {"mem": str(2**30)} and model["service_ports"] == []
    assert model["updated_at"] == later.isoformat() and model["created_at"] == NOW.isoformat()


@pytest.mark.parametrize("caller, error", [("ada", Denied), ("alice", Denied), ("gus", Hidden)])
def test_others_may_not_change_or_remove_an_image(tenancy, caller, error):
    create(tenancy, domains=["acme"])
    p = tenancy.principal(caller)
    with tenancy.tx() as s, pytest.raises(error):
        registry.update_image(s, p, "hubgrid/base:1", parse(ImageUpdate, {"domains": []}), NOW)
    with tenancy.tx() as s, pytest.raises(error):
        registry.delete_image(s, p, "hubgrid/base:1")
    with tenancy.tx() as s:
        assert registry.get_image(s, tenancy.principal("root"), "hubgrid/base:1")["domains"] == ["acme"]


def test_a_superadmin_removes_an_image(tenancy):
    create(tenancy)
    with tenancy.tx() as s:
        registry.delete_image(s, tenancy.principal("root"), "hubgrid/base:1")
    assert tenancy.count(Image) == 0


# ---------------------------------------------------------------- recording a scan

BASE_LABELS = {**MARK, "ai.hubgrid.resource.min.cpu": "0.5",
               "ai.hubgrid.service-ports": "lab:http:lab"}


def scanned(world, found, errors=None, now=NOW) -> dict:
    with world.tx() as s:
        return registry.apply_scan(s, found, errors or {}, now).as_dict()


def image_row(world, name) -> dict:
    with world.tx() as s:
        return registry.get_image(s, world.principal("root"), name)


def test_a_scan_adds_new_images_for_every_domain(tenancy):
    report = scanned(tenancy, {"unix:///a": [{"name": "hubgrid/base:1", "labels": BASE_LABELS}]})
    assert report == {"hosts": [{"url": "unix:///a", "ok": True, "images": 1}],
                      "added": ["hubgrid/base:1"], "updated": [], "unchanged": [], "skipped": []}
    row = image_row(tenancy, "hubgrid/base:1")
    assert (row["source"], row["domains"], row["min_slots"]) == ("scan", [], {"cpu": "0.5"})
    assert row["labels"] == BASE_LABELS


def test_a_rescan_changes_only_images_whose_labels_changed_and_keeps_their_domains(tenancy):
    scanned(tenancy, {"unix:///a": [{"name": "hubgrid/base:1", "labels": BASE_LABELS},
                                    {"name": "hubgrid/same:1", "labels": MARK}]})
    with tenancy.tx() as s:
        registry.update_image(s, tenancy.principal("root"), "hubgrid/base:1",
                              parse(ImageUpdate, {"domains": ["acme"]}), NOW)
    later = NOW + dt.timedelta(days=1)
    newer = {**BASE_LABELS, "ai.hubgrid.resource.min.cpu": "2"}
    report = scanned(tenancy, {"unix:///a": [{"name": "hubgrid/base:1", "labels": newer},
                                             {"name": "hubgrid/same:1", "labels": MARK}]}, now=later)
    assert (report["added"], report["updated"], report["unchanged"]) == (
        [], ["hubgrid/base:1"], ["hubgrid/same:1"])
    row = image_row(tenancy, "hubgrid/base:1")
    assert row["min_slots"] == {"cpu": "2"} and row["domains"] == ["acme"]
    assert row["updated_at"] == later.isoformat()
    assert image_row(tenancy, "hubgrid/same:1")["updated_at"] == NOW.isoformat()


def test_a_scan_never_changes_an_image_added_through_the_api(tenancy):
    create(tenancy, "hubgrid/base:1", min_slots={"cpu": "4"})
    report = scanned(tenancy, {"unix:///a": [{"name": "hubgrid/base:1", "labels": BASE_LABELS}]})
    assert report["skipped"] == [{"name": "hubgrid/base:1",
                                  "reason": "added through the API; scans do not change it"}]
    assert image_row(tenancy, "hubgrid/base:1")["min_slots"] == {"cpu": "4"}


def test_a_scan_skips_bad_images_with_the_reason_and_records_nothing_for_them(tenancy):
    found = {
        "unix:///a": [
            {"name": "good/one:1", "labels": MARK},
            {"name": "bad/ports:1", "labels": {**MARK, "ai.hubgrid.service-ports": "x:ftp:y"}},
            {"name": "localhost:5000/no-tag", "labels": MARK},
            {"name": "differs:1", "labels": {**MARK, "ai.hubgrid.resource.min.cpu": "1"}},
        ],
        "tcp://127.0.0.1:2375": [
            {"name": "differs:1", "labels": {**MARK, "ai.hubgrid.resource.min.cpu": "2"}},
        ],
    }
    report = scanned(tenancy, found)
    assert report["added"] == ["good/one:1"]
    reasons = {s["name"]: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"bad/ports:1", "localhost:5000/no-tag", "differs:1"}
    assert "protocol 'ftp' is not supported" in reasons["bad/ports:1"]
    assert "needs a tag" in reasons["localhost:5000/no-tag"]
    assert reasons["differs:1"] == ("its labels differ between hosts tcp://127.0.0.1:2375, "
                                    "unix:///a")
    assert listed(tenancy, "root") == ["good/one:1"]


def test_an_image_on_two_hosts_with_the_same_labels_is_one_entry(tenancy):
    item = {"name": "hubgrid/base:1", "labels": {**BASE_LABELS, "other.label": "differs"}}
    report = scanned(tenancy, {"unix:///a": [item],
                               "unix:///b": [{**item, "labels": {**BASE_LABELS, "other.label": "x"}}]})
    assert report["added"] == ["hubgrid/base:1"] and report["skipped"] == []


def test_a_host_that_does_not_answer_is_reported_and_the_others_are_recorded(tenancy):
    report = scanned(tenancy, {"unix:///a": [{"name": "hubgrid/base:1", "labels": MARK}]},
                     {"tcp://127.0.0.1:1": "ConnectionError: refused"})
    assert report["hosts"] == [
        {"url": "tcp://127.0.0.1:1", "ok": False, "error": "ConnectionError: refused"},
        {"url": "unix:///a", "ok": True, "images": 1},
    ]
    assert report["added"] == ["hubgrid/base:1"]


# ---------------------------------------------------------------- asking Docker

class FakeDockerImages:
    """docker-py's low-level client as far as a scan uses it: ``images()``
    lists the images given (filtered by label like the engine), ``close()``."""

    def __init__(self, listing: list[dict]):
        self.listing = listing
        self.closed = False
        self.filters = []

    def images(self, filters=None):
        self.filters.append(filters)
        label = (filters or {}).get("label")
        return [i for i in self.listing if label is None or label in (i.get("Labels") or {})]

    def close(self):
        self.closed = True


class UnreachableDocker:
    """A client factory for an engine that is not there (as docker-py fails
    when it asks for the API version)."""

    def __call__(self, url, timeout):
        raise ConnectionError(f"cannot connect to {url}")


def test_docker_hosts_are_the_nodes_and_the_configured_ones_each_once():
    nodes = ["unix:///var/run/docker.sock", "", "slurm://cluster", "tcp://127.0.0.1:2375 "]
    configured = ["tcp://127.0.0.1:2375", "ssh://gpu-02", "unix:///var/run/docker.sock", "x"]
    assert dockerscan.docker_hosts(nodes, configured) == [
        "unix:///var/run/docker.sock", "tcp://127.0.0.1:2375", "ssh://gpu-02"]


def test_every_tag_of_a_marked_image_is_listed_with_its_labels():
    client = FakeDockerImages([
        {"RepoTags": ["hubgrid/base:1", "hubgrid/base:latest"], "Labels": BASE_LABELS},
        {"RepoTags": ["<none>:<none>"], "Labels": MARK},
        {"RepoTags": None, "Labels": MARK},
        {"RepoTags": ["debian:12"], "Labels": None},
        {"RepoTags": ["other:1"], "Labels": {"maintainer": "me"}},
    ])
    assert dockerscan.session_images(client) == [
        {"name": "hubgrid/base:1", "labels": BASE_LABELS},
        {"name": "hubgrid/base:latest", "labels": BASE_LABELS},
    ]
    assert client.filters == [{"label": "ai.hubgrid.session-image"},
                              {"label": "ai.hubgrid.inference-image"}]


def test_the_scan_asks_each_host_reports_failures_and_closes_its_clients():
    clients = {"unix:///a": FakeDockerImages([{"RepoTags": ["a:1"], "Labels": MARK}]),
               "unix:///b": FakeDockerImages([])}

    def factory(url, timeout):
        if url not in clients:
            return UnreachableDocker()(url, timeout)
        assert timeout == 3.0
        return clients[url]

    found, errors = asyncio.run(dockerscan.scan(
        ["unix:///a", "tcp://127.0.0.1:1", "unix:///b"], factory, 3.0))
    assert found == {"unix:///a": [{"name": "a:1", "labels": MARK}], "unix:///b": []}
    assert errors == {"tcp://127.0.0.1:1": "ConnectionError: cannot connect to tcp://127.0.0.1:1"}
    assert all(c.closed for c in clients.values())


def test_a_host_failing_while_listing_is_reported_too():
    class Broken(FakeDockerImages):
        def images(self, filters=None):
            raise TimeoutError("read timed out")

    broken = Broken([])
    found, errors = asyncio.run(dockerscan.scan(["unix:///a"], lambda u, t: broken))
    assert found == {} and errors == {"unix:///a": "TimeoutError: read timed out"}
    assert broken.closed


# ---------------------------------------------------------------- the real engine

def real_docker_hosts() -> list[str]:
    from hub_fixtures import require

    urls = [u for u in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if u.strip()]
    require("a Docker engine", bool(urls),
            "run the suite with `make test` (it starts the engines and sets "
            "$HUBGRID_TEST_DOCKER_HOSTS)")
    return urls


def test_a_real_engine_answers_a_scan(tenancy):
    """Each engine answers; whatever carries the marker label is recorded or
    skipped with a reason; the session image the test run built is recorded
    with what its labels say."""
    urls = real_docker_hosts()
    found, errors = asyncio.run(dockerscan.scan(urls, timeout=30))
    assert errors == {}
    report = scanned(tenancy, found, errors)
    assert [h["ok"] for h in report["hosts"]] == [True] * len(set(urls))
    names = {i["name"] for items in found.values() for i in items}
    assert set(report["added"]) | {s["name"] for s in report["skipped"]} == names
    built = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE")
    if built:
        assert built in report["added"]
        labels = next(i["labels"] for items in found.values() for i in items if i["name"] == built)
        spec = parse_labels(labels)
        row = image_row(tenancy, built)
        assert (row["min_slots"], row["service_ports"]) == (dict(spec.min_slots), spec.ports)
