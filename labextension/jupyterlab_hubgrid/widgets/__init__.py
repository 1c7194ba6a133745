"""hubgrid in a notebook: ipywidgets for my quota and my sessions.

In a notebook of a hubgrid session (nothing to set up: the session's own
token speaks for its owner; elsewhere ``HUBGRID_API_URL`` and a keypair, as
for the ``hubgrid`` command)::

    from jupyterlab_hubgrid import widgets
    widgets.quota()                      # my limits and use at every level
    widgets.sessions()                   # my sessions, stop buttons, the launcher
    widgets.sessions(refresh_every=5)    # ... refreshed every 5 s (untick to stop)
    widgets.launcher()                   # the launcher alone

Amounts are exact ("0.9 / 2" GPU shares); the bars are for the eye only. Every
name, image and reason is shown as text (ipywidgets Labels), never as HTML.
Auto-refresh runs as an asyncio task on the kernel's event loop (no thread);
untick "auto-refresh", or call ``stop_auto_refresh()``, to stop it;
``widgets.stop_all()`` stops every one in the kernel (re-running a cell
leaves the old widget, and its auto-refresh, alive).
"""

from __future__ import annotations

try:
    import ipywidgets  # noqa: F401
except ImportError as e:  # pragma: no cover - ipywidgets is a dependency
    raise ImportError("the hubgrid notebook widgets need ipywidgets 8: "
                      "pip install 'ipywidgets>=8.1,<9'") from e

from ..client import HubgridClient
from .base import stop_all
from .launcherwidget import LauncherWidget
from .quotawidget import QuotaWidget
from .sessionswidget import SessionsWidget

__all__ = ["quota", "sessions", "launcher", "stop_all", "QuotaWidget", "SessionsWidget",
           "LauncherWidget"]


def quota(client: HubgridClient | None = None, *,
          refresh_every: float | None = None) -> QuotaWidget:
    """My limits and use at every level that binds me (my resource policy,
    each project, my domain), one bar per slot; ``refresh_every``: seconds
    between automatic refreshes (default: only on Refresh)."""
    return QuotaWidget(client, refresh_every=refresh_every)


def sessions(client: HubgridClient | None = None, *, launcher: bool = True,
             show_ended: bool = False, refresh_every: float | None = None) -> SessionsWidget:
    """My sessions with a stop button each, and (``launcher``) a form that
    checks and starts a new one; ``refresh_every``: seconds between
    automatic refreshes (default: only on Refresh)."""
    return SessionsWidget(client, launcher=launcher, show_ended=show_ended,
                          refresh_every=refresh_every)


def launcher(client: HubgridClient | None = None) -> LauncherWidget:
    """The launcher alone: check whether a session would fit now, start it."""
    return LauncherWidget(client)
