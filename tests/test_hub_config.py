"""hub_ext.config.configure(): what it sets in a JupyterHub config."""

from traitlets.config import Config

from hub_ext.config import SERVICE_NAME, configure


def test_configure_lifts_the_concurrent_spawn_limit_for_queued_sessions(tmp_path):
    c = Config()
    configure(c, state_dir=tmp_path)
    assert c.JupyterHub.concurrent_spawn_limit == 0
    assert [s["name"] for s in c.JupyterHub.services.get_value([])] == [SERVICE_NAME]


def test_configure_keeps_a_concurrent_spawn_limit_set_before(tmp_path):
    c = Config()
    c.JupyterHub.concurrent_spawn_limit = 20
    configure(c, state_dir=tmp_path)
    assert c.JupyterHub.concurrent_spawn_limit == 20


def test_configure_passes_the_service_environment(tmp_path):
    c = Config()
    configure(c, state_dir=tmp_path, environment={"HUBGRID_DOCKER_HOSTS": "unix:///x.sock"})
    env = c.JupyterHub.services.get_value([])[0]["environment"]
    assert env["HUBGRID_DOCKER_HOSTS"] == "unix:///x.sock"
    assert env["HUBGRID_INTERNAL_TOKEN"] == (tmp_path / "hubgrid-internal-token").read_text().strip()
