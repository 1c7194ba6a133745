"""Spawn options: one schema for the form and the REST API (no hub needed)."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from spawner.options import OptionsError, options_from_form, parse_options


def test_defaults_are_one_interactive_session_of_one_cpu():
    opts, slots = parse_options({})
    assert (opts.session_type, opts.image, opts.command) == ("interactive", None, None)
    assert slots == {"cpu": D(1), "mem": D(2 * 2**30)}


@pytest.mark.parametrize("options, problem", [
    ({"session_type": "batch"}, "a batch session needs a command"),
    ({"session_type": "batch", "command": "   "}, "a batch session needs a command"),
    ({"command": "ls"}, "only batch sessions take a command"),
    ({"image": "Not An Image!"}, "image"),
    ({"image": "../etc:1"}, "image"),
    ({"gpu": 1, "gpu_shares": "0.5"}, "gpu"),
    ({"session_type": "cron"}, "session_type"),
    ({"colour": "red"}, "unknown option"),
])
def test_bad_options_name_the_problem(options, problem):
    with pytest.raises(OptionsError, match=problem):
        parse_options(options)


def test_a_batch_session_carries_its_command_and_image():
    opts, _ = parse_options({"session_type": "batch", "command": "python train.py",
                             "image": "hubgrid/base:latest"})
    assert (opts.command, opts.image) == ("python train.py", "hubgrid/base:latest")


def test_the_form_drops_the_command_of_an_interactive_session():
    form = {"project": ["ml"], "image": ["hubgrid/base:latest"], "session_type": ["interactive"],
            "command": ["rm -rf /"], "gpu": ["0"], "gpu_shares": ["0.5"], "gpu_models": ["A100", ""]}
    assert options_from_form(form) == {
        "project": "ml", "image": "hubgrid/base:latest", "session_type": "interactive",
        "gpu": 0, "gpu_shares": "0.5", "gpu_models": ["A100"]}
    batch = options_from_form({"session_type": ["batch"], "command": ["make"]})
    assert batch == {"session_type": "batch", "command": "make"}


# ---------------------------------------------------------------- the spawn form

from bs4 import BeautifulSoup  # noqa: E402

from spawner.options import show_amount, spawn_form  # noqa: E402

CHOICES = {
    "user": "alice", "domain": "acme",
    "projects": [
        {"name": "ml", "resource_groups": [
            {"name": "default", "session_types": ["batch", "interactive"]},
            {"name": "gpu", "session_types": ["interactive"]}],
         "remaining": {"cpu": "3", "mem": str(3 * 2**29), "gpu": None, "gpu.shares": "0.75"},
         "sessions_left": 2},
        {"name": "web", "resource_groups": [
            {"name": "default", "session_types": ["batch", "interactive"]}],
         "remaining": {"cpu": None, "mem": None, "gpu": None, "gpu.shares": None},
         "sessions_left": None},
    ],
    "images": [{"name": "hubgrid/base:latest", "min_slots": {"cpu": "0.5", "mem": "268435456"}},
               {"name": "hubgrid/datascience:latest", "min_slots": {}}],
}


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def options(page, name):
    return [(o["value"], o.get("data-projects")) for o in page.select(f"select[name={name}] option")]


def test_the_form_offers_the_users_projects_groups_and_images():
    page = soup(spawn_form(CHOICES, "hubgrid/datascience:latest"))
    assert options(page, "project") == [("ml", None), ("web", None)]
    assert options(page, "resource_group") == [("default", "ml web"), ("gpu", "ml")]
    assert page.select_one("select[name=resource_group] option[selected]")["value"] == "default"
    assert [o["value"] for o in page.select("select[name=image] option")] == [
        "hubgrid/base:latest", "hubgrid/datascience:latest"]
    assert page.select_one("select[name=image] option[selected]")["value"] == \
        "hubgrid/datascience:latest"
    assert "(at least cpu 0.5, mem 256 MiB)" in page.select_one("select[name=image]").text
    names = {e["name"] for e in page.select("[name]")}
    assert names == {"project", "resource_group", "image", "cpu", "mem", "gpu", "gpu_shares",
                     "gpu_models", "vfolders", "session_type", "command"}


def test_the_form_shows_what_quota_remains_per_project():
    rows = {tr["data-project"]: [td.text for td in tr.select("td")]
            for tr in soup(spawn_form(CHOICES)).select("#hg-quota tbody tr")}
    assert rows == {"ml": ["3", "1.5 GiB", "no limit", "0.75", "2"],
                    "web": ["no limit"] * 5}


def test_a_backend_without_images_offers_none():
    page = soup(spawn_form(CHOICES, None, images=False))
    assert page.select("select[name=image]") == []


def test_a_user_in_no_project_is_told_whom_to_ask():
    page = soup(spawn_form({**CHOICES, "projects": []}))
    assert "Ask an admin of your domain (acme)" in page.select_one("#hg-no-project").text
    assert page.select("#hg-console-projects") == []
    assert page.select("select") == []


def test_a_domain_admin_in_no_project_is_told_to_make_one_in_the_console():
    page = soup(spawn_form({**CHOICES, "projects": [], "domain_admin": True},
                           console_url="/base/services/hubgrid/console/"))
    note = " ".join(page.select_one("#hg-no-project").text.split())
    assert "You administer acme: create a project and add yourself" in note
    assert "Ask an admin" not in note
    assert page.select_one("#hg-console-projects")["href"] == \
        "/base/services/hubgrid/console/#domains"
    # the page's Start button is disabled by the form's own script
    assert "start.disabled = true" in page.select_one("script").text


def test_names_from_the_service_are_escaped():
    evil = '"><script>alert(1)</script>'
    choices = {**CHOICES, "domain": evil, "projects": [], "images": []}
    html = spawn_form(choices)
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html
    choices = {**CHOICES, "images": [{"name": evil, "min_slots": {evil: evil}}]}
    html = spawn_form(choices)
    assert html.count("<script>") == 1  # the form's own, not the image's
    assert soup(html).select("select[name=image] option")[0]["value"] == evil


@pytest.mark.parametrize("slot, amount, shown", [
    ("mem", None, "no limit"), ("mem", str(2**30), "1 GiB"), ("mem", "1000000", "0 GiB"),
    ("mem", str(5 * 2**29), "2.5 GiB"), ("cpu", "2.5", "2.5"), ("gpu.shares", "0", "0"),
])
def test_show_amount(slot, amount, shown):
    assert show_amount(slot, amount) == shown


def test_the_form_posts_gpu_models_and_vfolders_as_comma_lists():
    out = options_from_form({"gpu_models": [" A100, H100 ,,"], "vfolders": ["data, .dotfiles"]})
    assert (out["gpu_models"], out["vfolders"]) == (["A100", "H100"], ["data", ".dotfiles"])
    assert "vfolders" not in options_from_form({"vfolders": [" , "]})
