/**
 * The create form of the Serving page: a model folder, an inference image,
 * project, resource group, one replica's slots (exact strings) and the
 * replicas; Validate asks the service (`POST endpoints/validate`) and shows
 * each problem and warning at its field; Create is enabled only for the
 * form as it was validated without a problem. Every text is rendered as text.
 */

import * as React from 'react';

import { ServingApi, ServingError } from './api';
import { byField, createBody, EMPTY_FORM, formKey, IForm } from './model';
import { IEndpoint, IProblem } from './types';

export interface IChoices {
  projects: string[];
  groups: string[];
  images: string[];
  folders: Array<{ id: string; name: string }>;
}

interface IProps {
  api: ServingApi;
  choices: IChoices;
  onCreated: (e: IEndpoint) => void;
  onCancel: () => void;
}

function Notes(props: { items?: IProblem[]; kind: 'problem' | 'warning' }): JSX.Element | null {
  if (!props.items?.length) {
    return null;
  }
  return (
    <ul className={`jp-hubgrid-serving-${props.kind}s`}>
      {props.items.map((p, i) => (
        <li key={i} className={`jp-hubgrid-serving-${props.kind}`} data-field={p.field}>
          {p.field}: {p.message}
        </li>
      ))}
    </ul>
  );
}

export function CreateForm(props: IProps): JSX.Element {
  const { choices } = props;
  const [form, setForm] = React.useState<IForm>(() => ({
    ...EMPTY_FORM,
    project: choices.projects[0] ?? '',
    resource_group: choices.groups[0] ?? '',
    image: choices.images[0] ?? '',
    model_folder: choices.folders[0]?.id ?? ''
  }));
  const [problems, setProblems] = React.useState<IProblem[]>([]);
  const [warnings, setWarnings] = React.useState<IProblem[]>([]);
  const [validated, setValidated] = React.useState<string | null>(null);
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState('');

  const set = (field: keyof IForm) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setForm({ ...form, [field]: e.target.value });
  const problemsAt = byField(problems);
  const warningsAt = byField(warnings);
  const at = (field: keyof IForm | 'other'): JSX.Element => (
    <>
      <Notes items={problemsAt.get(field)} kind="problem" />
      <Notes items={warningsAt.get(field)} kind="warning" />
    </>
  );
  const mayCreate = validated === formKey(form) && !busy;

  const validate = async (): Promise<void> => {
    setError('');
    setValidated(null);
    const made = createBody(form);
    if ('problems' in made) {
      setProblems(made.problems);
      setWarnings([]);
      return;
    }
    setBusy(true);
    const key = formKey(form);
    try {
      const answer = await props.api.validate(made.body);
      setProblems(answer.problems);
      setWarnings(answer.warnings);
      setValidated(answer.ok ? key : null);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const create = async (): Promise<void> => {
    const made = createBody(form);
    if ('problems' in made) {
      return;
    }
    setBusy(true);
    setError('');
    try {
      props.onCreated(await props.api.create(made.body));
    } catch (e) {
      setError((e as Error).message);
      if (e instanceof ServingError && e.problems.length) {
        setProblems(e.problems);
      }
      setValidated(null);
    } finally {
      setBusy(false);
    }
  };

  const input = (field: keyof IForm, label: string, hint = ''): JSX.Element => (
    <div className="jp-hubgrid-serving-field" data-field={field}>
      <label>
        <span>{label}</span>
        <input className="jp-mod-styled" aria-label={label} value={form[field]} placeholder={hint}
          onChange={set(field)} />
      </label>
      {at(field)}
    </div>
  );
  const select = (field: keyof IForm, label: string, options: Array<{ value: string; text: string }>): JSX.Element => (
    <div className="jp-hubgrid-serving-field" data-field={field}>
      <label>
        <span>{label}</span>
        <select className="jp-mod-styled" aria-label={label} value={form[field]} onChange={set(field)}>
          {options.map(o => (
            <option key={o.value} value={o.value}>{o.text}</option>
          ))}
        </select>
      </label>
      {at(field)}
    </div>
  );
  const plain = (names: string[]) => names.map(n => ({ value: n, text: n }));

  return (
    <form className="jp-hubgrid-serving-create" aria-label="New endpoint"
      onSubmit={e => { e.preventDefault(); void validate(); }}>
      <h3>New endpoint</h3>
      {input('name', 'Name', 'e.g. chat')}
      {select('model_folder', 'Model folder', choices.folders.map(f => ({ value: f.id, text: f.name })))}
      {select('image', 'Image', plain(choices.images))}
      {select('project', 'Project', plain(choices.projects))}
      {select('resource_group', 'Resource group', plain(choices.groups))}
      <fieldset>
        <legend>One replica</legend>
        {input('cpu', 'CPU cores', 'e.g. 1 or 0.5')}
        {input('mem', 'Memory', 'e.g. 512M, 4G')}
        {input('gpu', 'Whole GPUs', '0')}
        {input('gpu_shares', 'GPU share', 'e.g. 0.25')}
        {at('other')}
      </fieldset>
      {input('replicas', 'Replicas')}
      {error && <p className="jp-hubgrid-error" role="alert">{error}</p>}
      {validated !== null && validated === formKey(form) && (
        <p className="jp-hubgrid-note" data-field="validated">The checks pass: it can be created.</p>
      )}
      <div className="jp-hubgrid-serving-actions">
        <button type="submit" className="jp-mod-styled" disabled={busy}>Validate</button>
        <button type="button" className="jp-mod-styled jp-mod-accept" disabled={!mayCreate}
          title={mayCreate ? '' : 'Validate the form as it is first'} onClick={() => void create()}>
          Create
        </button>
        <button type="button" className="jp-mod-styled" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}
