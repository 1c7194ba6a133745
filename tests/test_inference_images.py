"""Images for the replicas of model-serving endpoints: the label
``ai.hubgrid.inference-image`` makes an image registrable, as serving the
session type ``inference`` only, so that no Jupyter session starts on it
and the spawn form does not offer it.

The rules with plain data; the registry, the ledger and the spawn form's
choices on SQLite and PostgreSQL over the ``cluster`` world
(tests/ledger_world.py); the scan against ``FakeDockerImages`` and, when
this machine's test run started Docker engines, against the real ones with
the image scripts/build-images.sh built (``hubgrid/inference:latest``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest

from quota_service.core import images
from quota_service.core.errors import Invalid
from quota_service.core.schemas import ImageCreate, parse
from quota_service.scheduling import ledger
from quota_service.scheduling.admission import Group, ImageFacts, Request, Snapshot, decide
from quota_service.sessions import dockerscan, registry
from test_images import FakeDockerImages, real_docker_hosts

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
SESSION = {"ai.hubgrid.session-image": "1"}
INFERENCE = {"ai.hubgrid.inference-image": "1"}
BUILT = "hubgrid/inference:latest"


@pytest.mark.parametrize("labels, types", [
    (SESSION, ("batch", "interactive")),
    (INFERENCE, ("inference",)),
    ({**SESSION, **INFERENCE}, ("batch", "inference", "interactive")),
    ({}, ("batch", "interactive")),
    ({"ai.hubgrid.resource.min.cpu": "1"}, ("batch", "interactive")),
], ids=["session-image", "inference-image", "both", "unlabelled", "unmarked"])
def test_the_marker_labels_say_which_session_types_an_image_runs(labels, types):
    assert images.session_types(labels) == types
    assert images.parse_labels(labels).session_types == types


# ---------------------------------------------------------------- admission

GROUP = Group(name="g", accessible=True,
              session_types=frozenset({"interactive", "batch", "inference"}),
              largest_node={"cpu": Decimal(8)}, capacity={"cpu": Decimal(8)})
SERVER = ImageFacts("hubgrid/inference:1", {"cpu": Decimal(1)}, True, frozenset({"inference"}))
LAB = ImageFacts("hubgrid/base:1", {}, True)


@pytest.mark.parametrize("facts, session_type, verdict, texts", [
    (SERVER, "inference", "admit", []),
    (SERVER, "interactive", "refuse",
     ["image hubgrid/inference:1 does not run interactive sessions (it runs: inference)"]),
    (SERVER, "batch", "refuse",
     ["image hubgrid/inference:1 does not run batch sessions (it runs: inference)"]),
    (LAB, "inference", "refuse",
     ["image hubgrid/base:1 does not run inference sessions (it runs: batch, interactive)"]),
    (LAB, "interactive", "admit", []),
], ids=["replica-on-inference-image", "jupyter-on-inference-image", "batch-on-inference-image",
        "replica-on-session-image", "jupyter-on-session-image"])
def test_admission_runs_a_session_only_on_an_image_of_its_type(facts, session_type, verdict,
                                                                texts):
    req = Request(user="alice", keypair=None, project="ml", domain="acme", resource_group="g",
                  slots={"cpu": Decimal(2)}, image=facts.name, session_type=session_type)
    d = decide(req, Snapshot(now=NOW, levels=(), group=GROUP, image=facts))
    assert (d.verdict, [r.text for r in d.reasons]) == (verdict, texts)


def test_the_session_type_is_checked_before_the_images_minimum():
    req = Request(user="alice", keypair=None, project="ml", domain="acme", resource_group="g",
                  slots={"cpu": Decimal("0.5")}, image=SERVER.name)
    d = decide(req, Snapshot(now=NOW, levels=(), group=GROUP, image=SERVER))
    assert [(r.code, r.slot) for r in d.reasons] == [("session-type", None)]


# ---------------------------------------------------------------- scans

def test_a_scan_lists_images_with_either_marker_each_tag_once():
    both = {**SESSION, **INFERENCE}
    client = FakeDockerImages([
        {"RepoTags": ["hubgrid/base:latest"], "Labels": SESSION},
        {"RepoTags": ["hubgrid/inference:latest", "hubgrid/inference:1"], "Labels": INFERENCE},
        {"RepoTags": ["hubgrid/both:1"], "Labels": both},
        {"RepoTags": ["debian:12"], "Labels": {"maintainer": "me"}},
    ])
    assert dockerscan.session_images(client) == [
        {"name": "hubgrid/base:latest", "labels": SESSION},
        {"name": "hubgrid/both:1", "labels": both},
        {"name": "hubgrid/inference:latest", "labels": INFERENCE},
        {"name": "hubgrid/inference:1", "labels": INFERENCE},
    ]


def test_a_scanned_inference_image_is_registered_as_running_inference_only(tenancy):
    with tenancy.tx() as s:
        report = registry.apply_scan(s, {"unix:///a": [
            {"name": "hubgrid/inference:1", "labels": INFERENCE},
            {"name": "hubgrid/base:1", "labels": SESSION}]}, {}, NOW)
    assert sorted(report.added) == ["hubgrid/base:1", "hubgrid/inference:1"]
    with tenancy.tx() as s:
        rows = {i["name"]: i for i in registry.list_images(s, tenancy.principal("alice"))}
        acme = registry._caller_domain(s, tenancy.principal("alice"))
        facts = registry.facts(s, "hubgrid/inference:1", acme)
    assert rows["hubgrid/inference:1"]["session_types"] == ["inference"]
    assert rows["hubgrid/base:1"]["session_types"] == ["batch", "interactive"]
    assert facts.session_types == frozenset({"inference"})


def add_image(world, name: str, labels: dict) -> None:
    with world.tx() as s:
        registry.create_image(s, world.principal("root"),
                              parse(ImageCreate, {"name": name, "labels": labels}), NOW)


def test_no_jupyter_session_starts_on_an_inference_image_and_the_form_does_not_offer_it(
        cluster):
    cluster.add_group("cpu", {"n1": ()})
    add_image(cluster.world, "hubgrid/inference:1", INFERENCE)
    add_image(cluster.world, "hubgrid/base:1", SESSION)
    with pytest.raises(Invalid) as refused:
        cluster.submit("alice", "ml", "cpu", slots={"cpu": "1"}, image="hubgrid/inference:1")
    assert "image hubgrid/inference:1 does not run interactive sessions (it runs: inference)" \
        in refused.value.message
    ok = cluster.submit("alice", "ml", "cpu", slots={"cpu": "1"}, image="hubgrid/base:1")
    assert ok["state"] == "allocated"
    with cluster.world.tx() as s:
        offered = [i["name"] for i in ledger.spawn_choices(s, "alice")["images"]]
    assert offered == ["hubgrid/base:1"]


# ---------------------------------------------------------------- the real engine

def test_the_built_inference_image_is_registered_by_a_real_scan_as_inference(tenancy):
    """scripts/build-images.sh builds hubgrid/inference:latest with the
    session image on every engine; a scan of the real engines registers it
    as running inference sessions only."""
    urls = real_docker_hosts()
    found, errors = asyncio.run(dockerscan.scan(urls, timeout=30))
    assert errors == {}
    assert all(BUILT in {i["name"] for i in items} for items in found.values()), \
        f"{BUILT} is missing on an engine: run scripts/build-images.sh"
    with tenancy.tx() as s:
        report = registry.apply_scan(s, found, errors, NOW)
    assert BUILT in report.added
    with tenancy.tx() as s:
        row = registry.get_image(s, tenancy.principal("root"), BUILT)
    assert row["session_types"] == ["inference"] and row["source"] == "scan"
