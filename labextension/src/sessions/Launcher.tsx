/**
 * The launcher dialog: project, resource group, image, sizes, GPU, folders
 * to mount, interactive or batch with a command; it asks the service's dry
 * run as the form changes and shows, before anything is sent, whether the
 * session would start now and, if not, why.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { formatSlot } from '../summary/exact';
import { IGroupModel, IMeModel } from '../summary/types';
import { HubgridApi } from './api';
import { checkForm, dryRunBody, ILaunchForm, IPreset, IVerdict, presetOf, presetSize, verdictOf } from './launch';

export interface ILaunchChoices {
  me: IMeModel;
  groups: IGroupModel[];
  images: string[];
  folders: string[];
  /** my server names in use */
  taken: string[];
  /** the service's resource presets (the same the hub's spawn form offers) */
  presets: IPreset[];
}

type Check = { kind: 'idle' } | { kind: 'asking' } | { kind: 'verdict'; verdict: IVerdict } | { kind: 'error'; message: string };

function Field(props: { label: string; error?: string; children: React.ReactNode; hint?: string }): JSX.Element {
  return (
    <label className="jp-hubgrid-field">
      <span className="jp-hubgrid-field-label">{props.label}</span>
      {props.children}
      {props.hint && !props.error && <span className="jp-hubgrid-note">{props.hint}</span>}
      {props.error && <span className="jp-hubgrid-error">{props.error}</span>}
    </label>
  );
}

function VerdictView(props: { check: Check; invalid: boolean }): JSX.Element {
  const { check } = props;
  if (props.invalid) {
    return <p className="jp-hubgrid-verdict jp-mod-idle">Fill in the form to see whether it fits.</p>;
  }
  if (check.kind === 'asking' || check.kind === 'idle') {
    return <p className="jp-hubgrid-verdict jp-mod-idle">Asking the scheduler…</p>;
  }
  if (check.kind === 'error') {
    return <p className="jp-hubgrid-verdict jp-mod-refused" role="alert">{check.message}</p>;
  }
  const { verdict } = check;
  return (
    <div className={`jp-hubgrid-verdict jp-mod-${verdict.kind}`} role="status" data-verdict={verdict.kind}>
      <b>{verdict.headline}</b>
      {verdict.reasons.length > 0 && (
        <ul>
          {verdict.reasons.map((r, i) => (
            <li key={i}>{r}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** "0.5 CPU, 1 GiB, 0.5 of a GPU": a preset's size in words, exactly. */
function presetLabel(preset: IPreset): string {
  const parts = [`${preset.slots['cpu']} CPU`, formatSlot('mem', preset.slots['mem'])];
  if (preset.slots['gpu']) {
    parts.push(`${preset.slots['gpu']} GPU`);
  }
  if (preset.slots['gpu.shares']) {
    parts.push(`${preset.slots['gpu.shares']} of a GPU`);
  }
  return parts.join(', ');
}

function LaunchForm(props: {
  api: HubgridApi;
  choices: ILaunchChoices;
  form: ILaunchForm;
  onChange: (form: ILaunchForm) => void;
}): JSX.Element {
  const { choices, api } = props;
  const [form, setForm] = React.useState<ILaunchForm>(props.form);
  const [check, setCheck] = React.useState<Check>({ kind: 'idle' });
  const errors = checkForm(form, choices.taken);
  const { name: _name, ...requestErrors } = errors;
  const requestValid = Object.keys(requestErrors).length === 0;
  const body = JSON.stringify(dryRunBody(form));

  const set = (patch: Partial<ILaunchForm>) => {
    const next = { ...form, ...patch };
    setForm(next);
    props.onChange(next);
  };

  React.useEffect(() => {
    if (!requestValid) {
      return;
    }
    let live = true;
    setCheck({ kind: 'asking' });
    const timer = setTimeout(() => {
      api
        .dryRun(JSON.parse(body))
        .then(result => live && setCheck({ kind: 'verdict', verdict: verdictOf(result) }))
        .catch((e: Error) => live && setCheck({ kind: 'error', message: e.message }));
    }, 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [body, requestValid]);

  const groups = choices.groups.filter(g => g.session_types.includes(form.type));
  return (
    <div className="jp-hubgrid-launcher">
      <Field label="Name" error={errors.name}>
        <input name="name" value={form.name} onChange={e => set({ name: e.target.value })} />
      </Field>
      <div className="jp-hubgrid-field-row">
        <Field label="Project" error={errors.project}>
          <select name="project" value={form.project} onChange={e => set({ project: e.target.value })}>
            {choices.me.projects.map(p => (
              <option key={p.name} value={p.name}>{p.name}</option>
            ))}
          </select>
        </Field>
        <Field label="Resource group" error={errors.group}>
          <select name="group" value={form.group} onChange={e => set({ group: e.target.value })}>
            {!groups.some(g => g.name === form.group) && <option value={form.group}>{form.group || '(none)'}</option>}
            {groups.map(g => (
              <option key={g.name} value={g.name}>{g.name}</option>
            ))}
          </select>
        </Field>
      </div>
      <div className="jp-hubgrid-field-row">
        <Field label="Session type">
          <select name="type" value={form.type} onChange={e => set({ type: e.target.value as ILaunchForm['type'] })}>
            <option value="interactive">interactive (JupyterLab)</option>
            <option value="batch">batch (runs a command, then ends)</option>
          </select>
        </Field>
        <Field label="Image" hint={choices.images.length ? undefined : 'this cluster runs sessions without images'}>
          <select name="image" value={form.image} onChange={e => set({ image: e.target.value })}>
            <option value="">(default)</option>
            {choices.images.map(i => (
              <option key={i} value={i}>{i}</option>
            ))}
          </select>
        </Field>
      </div>
      {form.type === 'batch' && (
        <Field label="Command" error={errors.command}>
          <input name="command" value={form.command} placeholder="python train.py"
            onChange={e => set({ command: e.target.value })} />
        </Field>
      )}
      {choices.presets.length > 0 && (
        <Field label="Size" hint="your admins' presets; or set cores and memory below">
          <select name="preset" value={presetOf(form, choices.presets)}
            onChange={e => {
              const preset = choices.presets.find(p => p.name === e.target.value);
              if (preset) {
                set(presetSize(preset));
              }
            }}>
            {choices.presets.map(p => (
              <option key={p.name} value={p.name}>
                {`${p.name}: ${presetLabel(p)}${p.default ? ' (default)' : ''}`}
              </option>
            ))}
            <option value="">custom</option>
          </select>
        </Field>
      )}
      <div className="jp-hubgrid-field-row">
        <Field label="CPU cores" error={errors.cpu}>
          <input name="cpu" value={form.cpu} onChange={e => set({ cpu: e.target.value })} size={6} />
        </Field>
        <Field label="Memory" error={errors.mem}>
          <input name="mem" value={form.mem} onChange={e => set({ mem: e.target.value })} size={8} />
        </Field>
        <Field label="GPU">
          <select name="gpuMode" value={form.gpuMode}
            onChange={e => set({ gpuMode: e.target.value as ILaunchForm['gpuMode'] })}>
            <option value="none">none</option>
            <option value="shares">a share of one GPU</option>
            <option value="whole">whole GPUs</option>
          </select>
        </Field>
        {form.gpuMode !== 'none' && (
          <Field label={form.gpuMode === 'shares' ? 'Share (0–1)' : 'GPUs'} error={errors.gpu}>
            <input name="gpu" value={form.gpu} size={6} placeholder={form.gpuMode === 'shares' ? '0.5' : '1'}
              onChange={e => set({ gpu: e.target.value })} />
          </Field>
        )}
      </div>
      {choices.folders.length > 0 && (
        <fieldset className="jp-hubgrid-folders">
          <legend>Folders to mount</legend>
          {choices.folders.map(f => (
            <label key={f}>
              <input type="checkbox" checked={form.folders.includes(f)}
                onChange={e => set({ folders: e.target.checked ? [...form.folders, f] : form.folders.filter(x => x !== f) })} />
              {f}
            </label>
          ))}
        </fieldset>
      )}
      <VerdictView check={check} invalid={!requestValid} />
    </div>
  );
}

class LaunchBody extends ReactWidget implements Dialog.IBodyWidget<ILaunchForm> {
  constructor(
    private readonly api: HubgridApi,
    private readonly choices: ILaunchChoices,
    private form: ILaunchForm
  ) {
    super();
    this.addClass('jp-hubgrid-launch-body');
  }

  getValue(): ILaunchForm {
    return this.form;
  }

  protected render(): JSX.Element {
    return (
      <LaunchForm api={this.api} choices={this.choices} form={this.form}
        onChange={form => (this.form = form)} />
    );
  }
}

/**
 * Ask for a session; resolves to the form to start, or null (cancelled).
 * A form with mistakes opens again, with them shown.
 */
export async function askForSession(
  api: HubgridApi,
  choices: ILaunchChoices,
  form: ILaunchForm
): Promise<ILaunchForm | null> {
  for (;;) {
    const result = await showDialog({
      title: 'Start a session',
      body: new LaunchBody(api, choices, form),
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Start' })],
      focusNodeSelector: 'input[name="name"]'
    });
    if (!result.button.accept || !result.value) {
      return null;
    }
    form = result.value;
    if (Object.keys(checkForm(form, choices.taken)).length === 0) {
      return form;
    }
  }
}
