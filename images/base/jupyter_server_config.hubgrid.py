

# --- hubgrid (appended by images/base/Dockerfile) ---------------------------
# Web apps behind jupyter-server-proxy, reached at <server-url>/<name>/: one
# JSON file per app in /etc/jupyter/hubgrid-server-proxy.d/, named <name>.json,
# holding that app's jupyter-server-proxy settings ({"command": [...], ...}).
# Images built on hubgrid/base add an app by adding a file.
def _hubgrid_server_proxy_apps(directory="/etc/jupyter/hubgrid-server-proxy.d"):
    import glob
    import json
    import os

    apps = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path, encoding="utf-8") as f:
            apps[os.path.splitext(os.path.basename(path))[0]] = json.load(f)
    return apps


c.ServerProxy.servers.update(_hubgrid_server_proxy_apps())  # noqa: F821 (c: Jupyter's config object)
