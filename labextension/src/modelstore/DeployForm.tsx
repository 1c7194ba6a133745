/**
 * A model's Deploy form: project, resource group, replicas and an optional
 * endpoint name. One click runs the check (`POST model-store/{id}/check`)
 * and, when it finds no problem, the deploy; each problem is shown at its
 * field (the replicas' size at Replicas), the rest above the button.
 */

import * as React from 'react';

import { StoreApi } from './api';
import { byField, deployBody, DeployField, IDeployForm } from './model';
import { useSending } from './sending';
import { IEndpointMade, IProblem, IStoreModel } from './types';

export interface IDeployChoices {
  projects: string[];
  groups: string[];
}

interface IProps {
  api: StoreApi;
  model: IStoreModel;
  choices: IDeployChoices;
  onDeployed: (e: IEndpointMade, warnings: IProblem[]) => void;
}

export function Notes(props: { items?: IProblem[]; kind: 'problem' | 'warning' }): JSX.Element | null {
  if (!props.items?.length) {
    return null;
  }
  return (
    <ul className={`jp-hubgrid-store-${props.kind}s`}>
      {props.items.map((p, i) => (
        <li key={i} className={`jp-hubgrid-store-${props.kind}`} data-field={p.field}>
          {p.field}: {p.message}
        </li>
      ))}
    </ul>
  );
}

export function DeployForm(props: IProps): JSX.Element {
  const { choices, model } = props;
  const [form, setForm] = React.useState<IDeployForm>({
    project: choices.projects[0] ?? '',
    resource_group: choices.groups[0] ?? '',
    replicas: '1',
    name: ''
  });
  const { problems, setProblems, error, busy, send } = useSending();
  const [warnings, setWarnings] = React.useState<IProblem[]>([]);

  const set = (field: keyof IDeployForm) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setForm({ ...form, [field]: e.target.value });
  const problemsAt = byField(problems);
  const warningsAt = byField(warnings);
  const at = (field: DeployField): JSX.Element => (
    <>
      <Notes items={problemsAt.get(field)} kind="problem" />
      <Notes items={warningsAt.get(field)} kind="warning" />
    </>
  );

  const deploy = async (): Promise<void> => {
    const body = deployBody(form);
    if ('problems' in body) {
      setWarnings([]);
    }
    await send(body, async checked => {
      const check = await props.api.check(model.id, checked);
      setProblems(check.problems);
      setWarnings(check.warnings);
      if (check.ok) {
        const made = await props.api.deploy(model.id, checked);
        props.onDeployed(made, check.warnings);
      }
    });
  };

  return (
    <form className="jp-hubgrid-store-deploy" onSubmit={e => { e.preventDefault(); void deploy(); }}>
      <h4>Deploy</h4>
      <label>
        Project
        <select className="jp-mod-styled" name="project" value={form.project} onChange={set('project')}>
          {choices.projects.map(p => <option key={p} value={p}>{p}</option>)}
        </select>
      </label>
      {at('project')}
      <label>
        Resource group
        <select className="jp-mod-styled" name="resource_group" value={form.resource_group} onChange={set('resource_group')}>
          {choices.groups.map(g => <option key={g} value={g}>{g}</option>)}
        </select>
      </label>
      {at('resource_group')}
      <label>
        Replicas
        <input className="jp-mod-styled" name="replicas" inputMode="numeric" value={form.replicas} onChange={set('replicas')} />
      </label>
      {at('replicas')}
      <label>
        Endpoint name
        <input className="jp-mod-styled" name="name" placeholder={model.name} value={form.name} onChange={set('name')} />
      </label>
      {at('name')}
      {at('other')}
      {error && <div className="jp-hubgrid-store-error" role="alert">{error}</div>}
      <button type="submit" className="jp-mod-styled jp-mod-accept" disabled={busy || !model.folder.available}
        title="Check that it fits your quota and the group, then deploy">
        {busy ? 'Checking…' : 'Deploy'}
      </button>
    </form>
  );
}
