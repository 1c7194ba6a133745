"""The quota widget: my limits and use at every level that binds me (my
resource policy, each project, my domain), a progress bar per slot with the
exact amount beside it ("0.9 / 2", as the Summary panel), sessions, folders and storage."""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as W

from ..client import HubgridClient
from .base import RefreshingBox, close_tree, label
from .model import Bar, LevelView, quota_view


@dataclass
class BarWidgets:
    """One bar's widgets: the name, the bar (display only) and the exact text."""

    bar: Bar
    name: W.Label
    progress: W.FloatProgress
    text: W.Label
    row: W.HBox

    def show(self, bar: Bar) -> None:
        self.bar = bar
        self.name.value = bar.name
        self.progress.value = bar.fraction
        self.progress.bar_style = bar.style
        self.text.value = bar.text

    @classmethod
    def build(cls, bar: Bar) -> BarWidgets:
        name = label(width="110px")
        progress = W.FloatProgress(min=0.0, max=1.0, layout=W.Layout(width="240px"))
        text = label()
        made = cls(bar, name, progress, text,
                   W.HBox([name, progress, text], layout=W.Layout(align_items="center",
                                                                   grid_gap="8px")))
        made.show(bar)
        return made


@dataclass
class LevelWidgets:
    view: LevelView
    title: W.Label
    notes: list[W.Label]
    bars: dict[str, BarWidgets]
    box: W.VBox

    @property
    def key(self) -> tuple:
        return (self.view.level, self.view.name, len(self.notes), tuple(self.bars))


def build_level(view: LevelView) -> LevelWidgets:
    title = label(view.title, bold=True)
    notes = [label(n, margin="0 0 0 12px") for n in view.notes]
    bars = {b.key: BarWidgets.build(b) for b in view.bars}
    box = W.VBox([title, *notes, *(b.row for b in bars.values())],
                 layout=W.Layout(margin="6px 0 0 0"))
    return LevelWidgets(view, title, notes, bars, box)


def _shape(views: list[LevelView]) -> list[tuple]:
    return [(v.level, v.name, len(v.notes), tuple(b.key for b in v.bars)) for v in views]


class QuotaWidget(RefreshingBox):
    """``QuotaWidget()``: my quota, refreshed on demand (Refresh) or every
    ``refresh_every`` seconds (auto-refresh)."""

    def __init__(self, client: HubgridClient | None = None, *,
                 refresh_every: float | None = None):
        super().__init__(client, title="hubgrid quota", refresh_every=refresh_every)
        self.who = label()
        self.levels: list[LevelWidgets] = []
        self.body = W.VBox()
        self.children = (self.toolbar, self.status, self.who, self.body)
        self.refresh()
        if refresh_every:
            self.start_auto_refresh()

    def load(self) -> dict:
        return self.client.quota()

    def render(self, quota: dict) -> None:
        self.who.value = (f"{quota.get('user')} in domain {quota.get('domain')} "
                          f"({quota.get('role')})")
        views = quota_view(quota)
        if _shape(views) == [lw.key for lw in self.levels]:
            for lw, view in zip(self.levels, views):  # same bars: new values in place
                lw.view = view
                lw.title.value = view.title
                for note, text in zip(lw.notes, view.notes):
                    note.value = text
                for bar in view.bars:
                    lw.bars[bar.key].show(bar)
            return
        old = self.body.children
        self.levels = [build_level(v) for v in views]
        self.body.children = tuple(lw.box for lw in self.levels)
        for box in old:
            close_tree(box)

    def bar(self, level: str, name: str, key: str) -> BarWidgets:
        """The widgets of one bar, e.g. ``bar("project", "ml", "gpu.shares")``."""
        for lw in self.levels:
            if (lw.view.level, lw.view.name) == (level, name):
                return lw.bars[key]
        raise KeyError(f"no level {level} {name}")
