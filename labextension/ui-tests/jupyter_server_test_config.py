"""Server configuration for integration tests.

!! Never use this configuration in production because it
opens the server to the world and provide access to JupyterLab
JavaScript objects through the global window variable.
"""

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821

# no hubgrid service here: the panel shows the server extension's 503 message
c.HubgridLab.api_url = ""  # noqa: F821
c.HubgridLab.owner = ""  # noqa: F821
# the project's machines run everything as root
c.ServerApp.allow_root = True  # noqa: F821
