"""hubgrid in JupyterLab: the Lab extension and its Jupyter server extension.

The front end (the prebuilt extension in ``labextension/``) talks only to this
server; the server extension (``routes.py``) forwards its calls to the hubgrid
API on behalf of the server's owner, with the server's own token, so the
browser never holds a hubgrid credential.
"""

try:
    from ._version import __version__
except ImportError:  # a source tree that was never installed
    import warnings

    warnings.warn("Importing 'jupyterlab_hubgrid' outside a proper installation.")
    __version__ = "dev"

from .activity import start_reporter
from .downloads import setup_download_handlers
from .gatewayroutes import setup_gateway_handlers
from .hubroutes import setup_hub_route_handlers
from .reclaimwatch import setup_reclaim_handlers
from .routes import setup_route_handlers
from .sessioninfo import setup_session_info_handler


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyterlab-hubgrid"}]


def _jupyter_server_extension_points():
    return [{"module": "jupyterlab_hubgrid"}]


def _load_jupyter_server_extension(server_app):
    """Register the API forwarder (``<base_url>hubgrid/api/...``).

    Parameters
    ----------
    server_app: jupyter_server.serverapp.ServerApp
        the Jupyter server this extension runs in
    """
    config = setup_route_handlers(server_app.web_app, parent=server_app)
    setup_hub_route_handlers(server_app.web_app, parent=server_app)  # hubgrid/hub/: start, stop
    setup_reclaim_handlers(server_app.web_app, config)  # hubgrid/input, hubgrid/reclaim
    setup_download_handlers(server_app.web_app, config)  # hubgrid/download-tickets, download/
    setup_gateway_handlers(server_app.web_app, config)  # hubgrid/gateway/: the Chat page
    setup_session_info_handler(server_app.web_app, config)  # hubgrid/this-session
    start_reporter(server_app, config)  # inside a hubgrid session: kernel activity to hubgrid
    if config.api_url:
        server_app.log.info("jupyterlab_hubgrid: forwarding hubgrid/api/ to %s", config.api_url)
    else:
        server_app.log.warning(
            "jupyterlab_hubgrid: HUBGRID_API_URL is not set; hubgrid/api/ answers 503 "
            "(set it, or c.HubgridLab.api_url, outside a hubgrid session)"
        )
