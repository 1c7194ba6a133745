"""The sessions widget: a table of my sessions (state, project, group,
image, CPU, memory, GPU, elapsed time) with a stop button per active row,
under it the scheduler's reasons for each waiting one (with their numbers)
and how each ended one ended, refreshed on demand or every few seconds, and
the launcher below it."""

from __future__ import annotations

import os
from dataclasses import dataclass

import ipywidgets as W

from ..cli.sessions import hub_scope_hint
from ..client import ClientError, HubgridClient
from .base import RefreshingBox, close_tree, error_text, label
from .launcherwidget import LauncherWidget
from .model import COLUMNS, SessionRow, session_row, visible_sessions

#: ended sessions shown with "show ended"
ENDED_LIMIT = 5


def this_session_from_env(env=None) -> tuple[str, str] | None:
    """(user, server name) of the session this kernel runs in, if any."""
    env = os.environ if env is None else env
    user = env.get("JUPYTERHUB_USER")
    return (user, env.get("JUPYTERHUB_SERVER_NAME", "")) if user else None


@dataclass
class RowWidgets:
    row: SessionRow
    cells: list[W.Label]
    #: the reasons it waits (one Label each) or how it ended, shown under the table
    info: list[W.Label]
    stop: W.Button | None


class SessionsWidget(RefreshingBox):
    """``SessionsWidget()``: my running and waiting sessions (and, with
    "show ended", the last few that ended), a stop button on each, and the
    launcher (``launcher=False`` leaves it out)."""

    def __init__(self, client: HubgridClient | None = None, *, launcher: bool = True,
                 show_ended: bool = False, refresh_every: float | None = None,
                 this_session: tuple[str, str] | None = None):
        self.show_ended = W.Checkbox(value=show_ended, description="show ended", indent=False,
                                     layout=W.Layout(width="auto", flex="0 0 auto"))
        super().__init__(client, title="hubgrid sessions", refresh_every=refresh_every,
                         extra_tools=(self.show_ended,))
        self.this_session = this_session_from_env() if this_session is None else this_session
        self.user = self.client.me()["name"]
        self.summary = label()
        self.rows: list[RowWidgets] = []
        self.table = W.GridBox(layout=W.Layout(
            grid_template_columns=f"repeat({len(COLUMNS) + 1}, auto)", grid_gap="2px 14px",
            align_items="center"))
        #: why my sessions wait, or how they ended, one line each by name
        self.notes = W.VBox(layout=W.Layout(margin="6px 0 0 0"))
        self._armed: str | None = None
        self.show_ended.observe(lambda _c: self.refresh(), names="value")
        self.launcher = None
        parts = [self.toolbar, self.status, self.summary, self.table, self.notes]
        if launcher:
            self.launcher = LauncherWidget(self.client, on_started=self.refresh,
                                           taken=self._active_names)
            self.launcher_box = W.Accordion(children=[self.launcher], titles=("New session",),
                                            selected_index=None)
            parts.append(self.launcher_box)
        self.children = tuple(parts)
        self.refresh()
        if refresh_every:
            self.start_auto_refresh()

    # --- data ----------------------------------------------------------------------------

    def load(self) -> tuple[list[dict], list[dict], int]:
        if self.show_ended.value:
            allocations = self.client.allocations(None, self.user)
        else:
            allocations = (self.client.allocations("allocated", self.user)
                           + self.client.allocations("pending", self.user))
        return visible_sessions(allocations, self.user,
                                ENDED_LIMIT if self.show_ended.value else 0)

    def _active_names(self) -> list[str]:
        active, _ended, _n = visible_sessions(
            self.client.allocations("allocated", self.user)
            + self.client.allocations("pending", self.user), self.user)
        return [a.get("server_name") or "" for a in active]

    # --- the table -----------------------------------------------------------------------

    def render(self, data: tuple[list[dict], list[dict], int]) -> None:
        active, ended, ended_total = data
        now = self.now()
        rows = [session_row(a, now, self.this_session) for a in active + ended]
        running = sum(1 for r in rows if r.state == "allocated")
        waiting = sum(1 for r in rows if r.state == "pending")
        summary = f"{running} running, {waiting} waiting"
        if self.show_ended.value:
            summary += f"; the last {len(ended)} of {ended_total} ended"
        self.summary.value = summary
        old = self.table.children
        self.rows = [self._row_widgets(r) for r in rows]
        header = [label(c, bold=True) for c in COLUMNS] + [label()]
        cells: list[W.Widget] = list(header)
        notes: list[W.Widget] = []
        for rw in self.rows:
            cells.extend(rw.cells)
            cells.append(rw.stop or label())
            if rw.info:  # under the table: reasons are longer than a column
                notes.append(W.HBox([label(rw.row.name, bold=True, min_width="90px"),
                                     W.VBox(rw.info)], layout=W.Layout(grid_gap="10px")))
        self.table.children = tuple(cells) if self.rows else ()
        old += self.notes.children
        self.notes.children = tuple(notes)
        if not self.rows:
            self.summary.value += (" (tick 'show ended' for the ended ones)"
                                   if not self.show_ended.value else "")
        for w in old:
            close_tree(w)
        if self._armed not in {rw.row.id for rw in self.rows if rw.stop}:
            self._armed = None

    def _row_widgets(self, row: SessionRow) -> RowWidgets:
        cells = [label(text) for text in row.cells]
        info = [label(text) for text in (row.reasons or ((row.ended,) if row.ended else ()))]
        stop = None
        if row.stop is not None:
            stop = W.Button(description="Stop" if row.state == "allocated" else "Cancel",
                            icon="stop", layout=W.Layout(width="auto"),
                            tooltip="stop this session" if row.state == "allocated"
                            else "take it out of the queue")
            if self._armed == row.id:
                self._arm(stop)
            stop.on_click(lambda _b, row=row: self.stop(row.id))
        return RowWidgets(row, cells, info, stop)

    @staticmethod
    def _arm(button: W.Button) -> None:
        button.description = "Really stop? (this notebook's)"
        button.button_style = "danger"

    # --- stopping ------------------------------------------------------------------------

    def row(self, allocation_id: str) -> RowWidgets:
        return next(rw for rw in self.rows if rw.row.id == allocation_id)

    def stop(self, allocation_id: str) -> bool:
        """Stop (or take out of the queue) one of the shown sessions; the
        session this notebook runs in only at the second click."""
        rw = self.row(allocation_id)
        row, plan = rw.row, rw.row.stop
        if plan is None:
            return False
        if row.this_one and self._armed != row.id:
            self._armed = row.id
            if rw.stop is not None:
                self._arm(rw.stop)
            self.status.value = (f"this notebook runs in session {row.name}: click again "
                                 "to stop it (the kernel goes with it)")
            return False
        self._armed = None
        try:
            if plan.kind == "hub":
                done = self.client.stop_server(plan.user, plan.server)
                state = "stopped" if done else "stopping"
            else:
                self.client.release(plan.allocation)
                state = "released" if row.state == "allocated" else "taken out of the queue"
        except ClientError as e:
            self.status.value = f"session {row.name} was not stopped: {error_text(hub_scope_hint(e))}"
            return False
        self.refresh()
        self.status.value = f"session {row.name}: {state}"
        return True
