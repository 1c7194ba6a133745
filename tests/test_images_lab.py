"""Where sessions run, the JupyterLab extension is installed (jupyterlab-hubgrid,
from labextension/): in the base session image on every test Docker engine
(scripts/build-images.sh builds its wheel into the image), with the `hubgrid`
command on PATH, the prebuilt Lab extension and the server extension enabled,
and no hub-side package; and in the embedded demo's environment (.venv, where
the local spawner's sessions run from)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hub_fixtures import require

REPO = Path(__file__).resolve().parent.parent
HOSTS = [h for h in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if h]
IMAGE = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE", "hubgrid/base:latest")
VERSION = json.loads((REPO / "labextension" / "package.json").read_text())["version"]
BUILT = REPO / "labextension" / "jupyterlab_hubgrid" / "labextension" / "package.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module", params=HOSTS or ["(none)"])
def engine(request):
    import docker

    require("the test Docker engines", bool(HOSTS),
            "run `make test` (scripts/start-docker.sh, scripts/build-images.sh)")
    client = docker.DockerClient(base_url=request.param, version="auto", timeout=60)
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        require(f"{IMAGE} on {request.param}", False, "run `make test` (scripts/build-images.sh)")
    try:
        yield client
    finally:
        client.close()


def run(engine, command: str) -> tuple[int, str]:
    """``sh -c command`` in a fresh session container (through the image's
    entrypoint, as the session user, without a network): exit code and output
    (colour codes removed)."""
    container = engine.containers.create(IMAGE, ["sh", "-c", command], network_mode="none")
    try:
        container.start()
        code = container.wait(timeout=120)["StatusCode"]
        return code, ANSI.sub("", container.logs(stdout=True, stderr=True).decode())
    finally:
        container.remove(force=True)


def test_the_hubgrid_command_is_on_the_session_path(engine):
    code, out = run(engine, "command -v hubgrid && hubgrid --help")
    assert code == 0, out
    assert out.splitlines()[0] == "/opt/hubgrid/venv/bin/hubgrid", out
    assert "usage: hubgrid" in out


def test_lab_shows_no_news_or_update_toasts_and_apps_are_not_notebooks(engine):
    # the toasts would sit over Chat's Send button; Files (HTTP) is no notebook
    code, out = run(engine, "cat /opt/hubgrid/venv/share/jupyter/lab/settings/overrides.json "
                    "/etc/jupyter/hubgrid-server-proxy.d/files.json")
    assert code == 0, out
    assert '"fetchNews": "false"' in out and '"checkForUpdates": false' in out, out
    assert '"category": "Other"' in out, out


def test_the_image_configs_turn_the_toasts_off_and_file_apps_under_other():
    overrides = json.loads((REPO / "images/base/lab-overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"] == {
        "checkForUpdates": False, "fetchNews": "false"}
    apps = [*REPO.glob("images/*/server-proxy/*.json")]
    assert len(apps) >= 2
    for app in apps:
        entry = json.loads(app.read_text())["launcher_entry"]
        assert entry["category"] == "Other", app


def test_lab_lists_the_extension_enabled(engine):
    code, out = run(engine, "jupyter labextension list 2>&1")
    assert code == 0, out
    assert re.search(rf"jupyterlab-hubgrid v{re.escape(VERSION)} enabled OK", out), out


def test_the_server_extension_is_enabled(engine):
    code, out = run(engine, "jupyter server extension list 2>&1")
    assert code == 0, out
    assert re.search(r"jupyterlab_hubgrid enabled", out), out
    assert re.search(rf"jupyterlab_hubgrid {re.escape(VERSION)} OK", out), out


def test_the_image_holds_the_current_build_of_the_extension(engine):
    """The prebuilt front end in the image is the one in labextension/ (a stale
    image: run scripts/build-images.sh)."""
    require("the extension's build", BUILT.is_file(), "run `bash scripts/install.sh`")
    code, out = run(engine, "cat /opt/hubgrid/venv/share/jupyter/labextensions/"
                            "jupyterlab-hubgrid/package.json")
    assert code == 0, out
    assert json.loads(out)["jupyterlab"]["_build"] == \
        json.loads(BUILT.read_text())["jupyterlab"]["_build"], \
        "the image is older than the extension's build: run scripts/build-images.sh"


def test_no_hub_side_package_is_in_the_image(engine):
    code, out = run(engine, "python3 - <<'PY'\n"
                            "import importlib.metadata as m, importlib.util as u\n"
                            "print(m.version('jupyterlab-hubgrid'))\n"
                            "for mod in ('quota_service', 'hub_ext', 'authenticator'):\n"
                            "    print(mod, u.find_spec(mod) is not None)\n"
                            "try:\n"
                            "    m.version('hubgrid')\n"
                            "    print('hubgrid True')\n"
                            "except m.PackageNotFoundError:\n"
                            "    print('hubgrid False')\n"
                            "PY")
    assert code == 0, out
    assert out.split() == [VERSION, "quota_service", "False", "hub_ext", "False",
                           "authenticator", "False", "hubgrid", "False"], out


def test_the_openai_client_is_there_at_its_pinned_version(engine):
    """Notebooks call the serving gateway with it, and an isolated session
    cannot install it (docs/serving.md)."""
    pin = re.search(r"^ARG OPENAI_VERSION=(\S+)$",
                    (REPO / "images/base/Dockerfile").read_text(), re.M).group(1)
    code, out = run(engine, "python3 -c 'import openai; print(openai.__version__)'")
    assert code == 0, out
    assert out.split() == [pin], out


#: what the session's Jupyter server imports at start (jupyterhub-singleuser
#: with every server extension the image enables)
SERVER_IMPORTS = ("jupyterhub.singleuser", "jupyter_server.serverapp", "jupyterlab.labapp",
                  "jupyter_lsp", "jupyter_server_proxy", "jupyter_server_terminals",
                  "notebook_shim", "jupyterlab_hubgrid")


def test_the_server_starts_without_compiling_iri_grammars(engine):
    """rfc3987_syntax (from jsonschema[format-nongpl]) compiles some 35 Lark
    grammars when imported: about half of the server's start-up CPU. The image
    leaves it out; jsonschema's format checks work without it (the IRI formats,
    which no Jupyter schema uses, go unchecked)."""
    code, out = run(engine, "python3 - <<'PY'\n"
                            "import importlib, sys\n"
                            f"for m in {SERVER_IMPORTS!r}:\n"
                            "    importlib.import_module(m)\n"
                            "from jsonschema import Draft7Validator\n"
                            "v = Draft7Validator({'format': 'date-time'},\n"
                            "                    format_checker=Draft7Validator.FORMAT_CHECKER)\n"
                            "print('date-time checked', not v.is_valid('yesterday'))\n"
                            "print('loaded', sorted(m for m in ('rfc3987_syntax', 'lark')\n"
                            "                       if m in sys.modules))\n"
                            "PY")
    assert code == 0, out
    assert out.splitlines()[-2:] == ["date-time checked True", "loaded []"], out


def test_everything_the_server_imports_is_precompiled(engine):
    """The venv is read-only for the session user: a module without valid
    bytecode would be compiled again at every start."""
    code, out = run(engine, "python3 - <<'PY'\n"
                            "import importlib, os, sys\n"
                            f"for m in {SERVER_IMPORTS!r}:\n"
                            "    importlib.import_module(m)\n"
                            "stale, n = [], 0\n"
                            "for name, mod in list(sys.modules.items()):\n"
                            "    spec = getattr(mod, '__spec__', None)\n"
                            "    if not (spec and spec.cached and spec.origin.endswith('.py')\n"
                            "            and spec.origin.startswith(sys.prefix)):\n"
                            "        continue\n"
                            "    n += 1\n"
                            "    st = os.stat(spec.origin)\n"
                            "    try:\n"
                            "        with open(spec.cached, 'rb') as f:\n"
                            "            head = f.read(16)\n"
                            "    except OSError:\n"
                            "        stale.append(name); continue\n"
                            "    flags = int.from_bytes(head[4:8], 'little')\n"
                            "    if flags == 0 and (int.from_bytes(head[8:12], 'little'),\n"
                            "                       int.from_bytes(head[12:16], 'little')) != \\\n"
                            "            (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF):\n"
                            "        stale.append(name)\n"
                            "print('modules', n > 300)\n"
                            "print('stale', sorted(stale))\n"
                            "PY")
    assert code == 0, out
    assert out.splitlines()[-2:] == ["modules True", "stale []"], out


def test_the_demo_environment_has_the_extension():
    """The local spawner runs sessions from this venv (jupyterhub_config.py puts
    its bin first on the session's PATH)."""
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "hubgrid").is_file()
    out = subprocess.run([str(venv_bin / "jupyter"), "labextension", "list"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    listing = ANSI.sub("", out.stdout + out.stderr)
    assert re.search(rf"jupyterlab-hubgrid v{re.escape(VERSION)} enabled OK", listing), listing
    out = subprocess.run([str(venv_bin / "jupyter"), "server", "extension", "list"],
                         capture_output=True, text=True, timeout=120)
    assert re.search(r"jupyterlab_hubgrid enabled", ANSI.sub("", out.stdout + out.stderr)), \
        out.stdout + out.stderr
