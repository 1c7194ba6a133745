"""What a session is told about the serving gateway, decided without IO.

A notebook, a terminal or the ``hubgrid`` command inside a session calls
the serving gateway at the URL its environment gives, which must be the one
that works from where the session runs:

- ``HUBGRID_GATEWAY_URL``: the gateway's root (``.../services/hubgrid-gateway/``),
  read by the Lab's server extension (Chat, the Serving page) and the
  ``hubgrid`` command;
- ``OPENAI_BASE_URL``: its OpenAI-compatible API (the root + ``v1``), which
  the openai client (and the clients built on it) reads when it is given no
  ``base_url``: ``OpenAI(api_key=os.environ["JUPYTERHUB_API_TOKEN"])`` calls
  the hub's gateway.

A session on the hub's machine or network (local, Slurm, a host-networked
container) reaches the gateway where the hub's proxy serves it, beside the
hubgrid API (``HUBGRID_API_URL``). An isolated Docker session reaches it
only through its relay, at ``127.0.0.1:<relay port>`` of its own loopback
with the same path (spawner/isolation.py, spawner/relay.py): the public URL
answers "Connection refused" there.

``OPENAI_API_KEY`` is never set. The only credential a session could put
there is its hub token, and every OpenAI-compatible library sends that key,
unasked, to whatever base URL it is given (a third party's API set in code,
a library's own default): the token opens the hubgrid API as its user.
Naming it in the call (``api_key=os.environ["JUPYTERHUB_API_TOKEN"]``)
keeps that a choice made where the URL is seen.
"""

from __future__ import annotations

from urllib.parse import urlsplit

#: the gateway's root, as the session reaches it
GATEWAY_URL = "HUBGRID_GATEWAY_URL"
#: the gateway's OpenAI-compatible API, for clients given no base URL
OPENAI_BASE_URL = "OPENAI_BASE_URL"
#: the variables this module sets (a replica gets neither: inference.py)
VARIABLES = (GATEWAY_URL, OPENAI_BASE_URL)


def openai_base(gateway: str) -> str:
    """The OpenAI-compatible base URL of the gateway whose root is ``gateway``."""
    return gateway.rstrip("/") + "/v1"


def gateway_environment(env: dict[str, str], gateway: str) -> dict[str, str]:
    """``env`` with the gateway at ``gateway`` (its root URL; "" when it is
    not known: nothing is added). A variable ``env`` has already (an admin's
    ``c.Spawner.environment``) is kept."""
    if not gateway:
        return dict(env)
    root = gateway.rstrip("/") + "/"
    return {GATEWAY_URL: root, OPENAI_BASE_URL: openai_base(root), **env}


def relayed_gateway(env: dict[str, str], local: str) -> dict[str, str]:
    """``env`` for a session that reaches the hub only through its relay at
    ``local`` (``http://127.0.0.1:<port>``): the gateway's variables with the
    same path on that origin (the path the relay carries). An
    ``OPENAI_BASE_URL`` that is not this gateway's (an admin's) is kept."""
    out = dict(env)
    root = out.pop(GATEWAY_URL, "")
    if not root:
        return out
    mine = out.get(OPENAI_BASE_URL) == openai_base(root)
    here = local.rstrip("/") + urlsplit(root).path
    out[GATEWAY_URL] = here
    if mine:
        out[OPENAI_BASE_URL] = openai_base(here)
    return out
