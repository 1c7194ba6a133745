"""What the notebook widgets share: a box with a toolbar (refresh, optional
auto-refresh, a status line), the client made from the session's
environment, and helpers that keep every user string plain text (Label
values are shown as text by ipywidgets, never as HTML)."""

from __future__ import annotations

import datetime as dt
import weakref
from typing import Any

import ipywidgets as W

from ..client import ClientError, HubgridClient
from .refresh import AutoRefresh

#: seconds between two refreshes when auto-refresh is on and no interval was given
DEFAULT_INTERVAL = 10.0
#: every widget built in this kernel (re-running a cell leaves the old one alive)
_BUILT: weakref.WeakSet = weakref.WeakSet()


def stop_all() -> int:
    """Stop the auto-refresh of every hubgrid widget of this kernel (also of
    those whose cell was re-run or cleared); how many were running."""
    running = [w for w in list(_BUILT) if w.poller.running]
    for w in running:
        w.stop_auto_refresh()
    return len(running)


def make_client(client: HubgridClient | None) -> HubgridClient:
    """The given client, or one from the environment (inside a hubgrid
    session: the session's owner; NotConfigured says what is missing)."""
    return client if client is not None else HubgridClient.from_env()


def error_text(e: ClientError) -> str:
    return f"{e.message} (HTTP {e.status})" if e.status else e.message


def label(value: str = "", *, bold: bool = False, **layout: Any) -> W.Label:
    """A Label (its value is shown as text), as wide as its text unless a
    width is given."""
    style = {"font_weight": "bold"} if bold else {}
    layout = {"width": "auto", "flex": "0 0 auto", **layout}
    return W.Label(value=value, style=style, layout=W.Layout(**layout))


def close_tree(widget: W.Widget) -> None:
    """Close ``widget`` and everything inside it (a rebuilt table's old
    cells would otherwise stay registered in the kernel)."""
    for child in getattr(widget, "children", ()) or ():
        close_tree(child)
    widget.close()


class RefreshingBox(W.VBox):
    """A VBox with a toolbar: Refresh, an auto-refresh checkbox and a status
    line. Subclasses implement :meth:`load` (IO: the client's calls) and
    :meth:`render` (widgets only); a refusal of the service keeps what is
    shown and says why on the status line."""

    def __init__(self, client: HubgridClient | None, *, title: str,
                 refresh_every: float | None = None, extra_tools: tuple = ()):
        self.client = make_client(client)
        self.title = label(title, bold=True)
        self.refresh_button = W.Button(description="Refresh", icon="refresh",
                                       tooltip="ask the hubgrid service again",
                                       layout=W.Layout(width="auto", flex="0 0 auto"))
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.auto = W.Checkbox(value=False, description="auto-refresh", indent=False,
                               layout=W.Layout(width="auto", flex="0 0 auto"))
        self.status = label()
        self.poller = AutoRefresh(self.refresh, refresh_every or DEFAULT_INTERVAL,
                                  on_error=self._auto_failed)
        self.auto.observe(self._auto_changed, names="value")
        self.toolbar = W.HBox([self.title, self.refresh_button, self.auto, *extra_tools],
                              layout=W.Layout(align_items="center", grid_gap="12px"))
        super().__init__([self.toolbar, self.status])
        _BUILT.add(self)

    # --- the refresh ---------------------------------------------------------------

    def load(self) -> Any:
        raise NotImplementedError

    def render(self, data: Any) -> None:
        raise NotImplementedError

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.timezone.utc)

    def refresh(self) -> bool:
        """Ask the service and show the answer; False (and the reason on the
        status line) when it refused or could not be reached."""
        try:
            data = self.load()
        except ClientError as e:
            self.status.value = f"could not refresh: {error_text(e)}"
            return False
        self.render(data)
        self.status.value = f"updated at {dt.datetime.now().strftime('%H:%M:%S')}" + (
            f", every {self.poller.interval:g} s" if self.poller.running else "")
        return True

    # --- auto-refresh --------------------------------------------------------------

    def start_auto_refresh(self, every: float | None = None) -> None:
        """Refresh every ``every`` seconds (default: as built) on the kernel's
        event loop, until :meth:`stop_auto_refresh` or the checkbox is unticked."""
        if every is not None:
            self.poller.stop()
            self.poller.interval = every
        self.auto.value = True
        if not self.poller.running:  # already ticked: started by the observer
            self._auto_changed({"new": True})

    def stop_auto_refresh(self) -> None:
        self.auto.value = False
        self.poller.stop()

    def _auto_changed(self, change) -> None:
        if not change["new"]:
            self.poller.stop()
            self.status.value = "auto-refresh off"
            return
        try:
            self.poller.start()
        except RuntimeError as e:
            self.auto.value = False
            self.status.value = str(e)
            return
        self.status.value = f"auto-refresh every {self.poller.interval:g} s"

    def _auto_failed(self, e: BaseException) -> None:
        self.auto.value = False
        self.status.value = f"auto-refresh stopped: {type(e).__name__}: {e}"

    def close(self) -> None:
        self.poller.stop()
        super().close()
