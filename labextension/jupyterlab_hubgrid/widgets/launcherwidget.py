"""The launcher form: project, resource group, image, CPU, memory, GPUs
(whole or a share of one), interactive or batch with a command. "Check"
asks the scheduler whether it would fit now (the dry run: nothing is
written) and shows why not; "Start" starts it through JupyterHub as the
hubgrid command does."""

from __future__ import annotations

import uuid
from typing import Callable, Iterable

import ipywidgets as W

from ..cli.output import safe
from ..cli.sessions import hub_scope_hint
from ..client import ClientError, HubgridClient
from .base import error_text, label, make_client
from .model import (ACTIVE, LaunchForm, Verdict, check_form, default_group, dry_run_body,
                    suggest_name, user_options, verdict)

FIELD_NAMES = {"name": "Name", "project": "Project", "group": "Resource group",
               "cpu": "CPU", "mem": "Memory", "gpu": "GPUs", "type": "Type",
               "command": "Command"}
GPU_CHOICES = (("no GPU", "none"), ("whole GPUs", "whole"), ("a share of one GPU", "shares"))
STYLE = {"description_width": "110px"}


def _field(widget_class, description: str, **kw) -> W.Widget:
    return widget_class(description=description, style=STYLE,
                        layout=W.Layout(width="420px"), **kw)


class LauncherWidget(W.VBox):
    """``LauncherWidget()``: a form that checks and starts a session.

    ``on_started()`` is called after a start was accepted (the sessions
    widget refreshes its table)."""

    def __init__(self, client: HubgridClient | None = None, *,
                 on_started: Callable[[], object] | None = None,
                 taken: Callable[[], Iterable[str]] | None = None):
        self.client = make_client(client)
        self.on_started = on_started
        self._taken = taken
        me = self.client.me()
        self.user = me["name"]
        projects = [p["name"] for p in me.get("projects") or []]
        groups = [g["name"] for g in self.client.resource_groups() if g.get("active", True)]
        try:
            images = [i["name"] for i in self.client.images()]
        except ClientError:
            images = []
        form = LaunchForm(project=projects[0] if projects else "", group=default_group(groups))

        self.name = _field(W.Text, "Name", value=self._new_name())
        self.project = _field(W.Dropdown, "Project", options=projects,
                              value=form.project or None)
        self.group = _field(W.Dropdown, "Resource group", options=groups,
                            value=form.group or None)
        image_choices = [("(none)" if images else "(this cluster runs no images)", "")]
        self.image = _field(W.Dropdown, "Image", options=image_choices + [(i, i) for i in images],
                            value="")
        self.cpu = _field(W.Text, "CPU", value=form.cpu)
        self.mem = _field(W.Text, "Memory", value=form.mem, placeholder="512M, 2G")
        self.gpu_mode = _field(W.Dropdown, "GPUs", options=GPU_CHOICES, value="none")
        self.gpu = _field(W.Text, "GPU amount", value="", placeholder="2 GPUs, or a share: 0.5")
        self.type = _field(W.Dropdown, "Type", options=(("interactive", "interactive"),
                                                        ("batch: runs a command", "batch")),
                           value="interactive")
        self.command = _field(W.Text, "Command", value="",
                              placeholder="a batch session runs this and ends")
        self.check_button = W.Button(description="Check", icon="question",
                                     tooltip="would it fit now? (nothing is started)")
        self.start_button = W.Button(description="Start", icon="play", button_style="primary")
        self.check_button.on_click(lambda _b: self.check())
        self.start_button.on_click(lambda _b: self.start())
        self.errors = W.VBox()
        self.verdict = label()
        self.reasons = W.VBox()
        self.status = label()
        super().__init__([
            self.name, self.project, self.group, self.image, self.cpu, self.mem, self.gpu_mode,
            self.gpu, self.type, self.command,
            W.HBox([self.check_button, self.start_button]),
            self.errors, self.verdict, self.reasons, self.status,
        ])

    # --- the form ----------------------------------------------------------------------

    def form(self) -> LaunchForm:
        return LaunchForm(name=self.name.value.strip(), project=self.project.value or "",
                          group=self.group.value or "", image=self.image.value or "",
                          cpu=self.cpu.value, mem=self.mem.value, gpu_mode=self.gpu_mode.value,
                          gpu=self.gpu.value, type=self.type.value, command=self.command.value)

    def taken(self) -> list[str]:
        """My active sessions' names (a new one must not reuse them)."""
        if self._taken is not None:
            return list(self._taken())
        return [a.get("server_name") or "" for state in ACTIVE
                for a in self.client.allocations(state, self.user)]

    def _new_name(self, taken: Iterable[str] = ()) -> str:
        return suggest_name(uuid.uuid4().hex, taken)

    def _show_errors(self, errors: dict[str, str]) -> None:
        old = self.errors.children
        self.errors.children = tuple(label(f"{FIELD_NAMES.get(k, k)}: {v}")
                                     for k, v in errors.items())
        for w in old:
            w.close()

    def _show_verdict(self, v: Verdict | None) -> None:
        self.verdict.value = v.headline if v else ""
        old = self.reasons.children
        self.reasons.children = tuple(label(r, margin="0 0 0 12px")
                                      for r in (v.reasons if v else ()))
        for w in old:
            w.close()

    def _valid(self) -> LaunchForm | None:
        """The form when it passes its checks (else the errors are shown)."""
        self.status.value = ""
        self._show_verdict(None)
        form = self.form()
        try:
            errors = check_form(form, self.taken())
        except ClientError as e:
            self.status.value = f"could not list your sessions: {error_text(e)}"
            return None
        self._show_errors(errors)
        return None if errors else form

    # --- the buttons ---------------------------------------------------------------------

    def check(self) -> Verdict | None:
        """The dry run: would this session fit now, and if not, why?"""
        form = self._valid()
        if form is None:
            return None
        try:
            result = self.client.dry_run(dry_run_body(form))
        except ClientError as e:
            self.status.value = f"the check was refused: {error_text(e)}"
            return None
        v = verdict(result)
        self._show_verdict(v)
        return v

    def start(self) -> bool:
        """Start the session through the hub; True when the hub took it."""
        form = self._valid()
        if form is None:
            return False
        try:
            up = self.client.start_server(self.user, form.name, user_options(form))
        except ClientError as e:
            e = hub_scope_hint(e)
            self.status.value = f"session {form.name} did not start: {error_text(e)}"
            return False
        state = "running" if up else "starting"
        try:
            waiting = [a for a in self.client.allocations("pending", self.user)
                       if a.get("server_name") == form.name]
        except ClientError:
            waiting = []
        if waiting:
            reasons = [r.get("text", "") for r in waiting[-1].get("reasons") or []]
            state = "waiting in the queue" + (f": {safe(reasons[0])}" if reasons else "")
        self.status.value = f"session {form.name}: {state}"
        self.name.value = self._new_name([form.name])
        if self.on_started is not None:
            self.on_started()
        return True
