/**
 * The Resource policies page: every policy with its main limits; a form to
 * create one or edit the chosen one with every field the service has
 * (form.ts); the service's 422 problems shown next to their fields.
 */

import * as React from 'react';

import { AdminFrame, ErrorBar, Field, IAdminPageProps, useAdminLoad } from '../frame';
import { fieldErrors } from '../errors';
import { adminCall } from '../http';
import { IPolicy, POLICY_FIELDS, PolicyDraft, policyCell, policyDraft, policyRequest } from './form';
import { FormFields } from './FormFields';
import { PresetsTable } from './PresetsTable';

const COLUMNS = ['total_resource_slots', 'max_concurrent_sessions', 'max_session_lifetime', 'idle_timeout', 'max_gpus_per_session', 'allowed_resource_groups'];

function PolicyForm(props: IAdminPageProps & { policy: IPolicy | null; onSaved: (name: string) => void }): JSX.Element {
  const [draft, setDraft] = React.useState<PolicyDraft>(policyDraft(props.policy));
  const [errors, setErrors] = React.useState<{ [f: string]: string }>({});
  const [error, setError] = React.useState<unknown>(null);
  const [saved, setSaved] = React.useState('');
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setSaved('');
    const req = policyRequest(props.policy, draft);
    if (Object.keys(req.errors).length) {
      setErrors(req.errors);
      setError(null);
      return;
    }
    try {
      const p = await adminCall<IPolicy>(props.settings, req.path, req.method, req.body);
      setErrors({});
      setError(null);
      setSaved('saved');
      props.onSaved(p.name);
    } catch (err) {
      setErrors(fieldErrors(err));
      setError(err);
    }
  };
  return (
    <form className="jp-hubgrid-admin-form jp-hubgrid-admin-policy" data-form={props.policy ? 'edit-policy' : 'create-policy'} onSubmit={submit}>
      <h3>{props.policy ? `Policy ${props.policy.name}` : 'New policy'}</h3>
      {!props.policy && (
        <Field label="Name" field="name" errors={errors}>
          <input className="jp-mod-styled" name="name" value={String(draft.name)} onChange={e => setDraft({ ...draft, name: e.target.value })} />
        </Field>
      )}
      <FormFields fields={POLICY_FIELDS} draft={draft} onChange={setDraft} errors={errors} />
      <div className="jp-hubgrid-admin-buttons">
        <button type="submit" className="jp-mod-styled jp-mod-accept">{props.policy ? 'Save' : 'Create policy'}</button>
        {saved && <span className="jp-hubgrid-admin-ok">{saved}</span>}
      </div>
      {error && !Object.keys(errors).length ? <ErrorBar error={error} /> : null}
    </form>
  );
}

export function PoliciesPage(props: IAdminPageProps): JSX.Element {
  const policies = useAdminLoad(() => adminCall<IPolicy[]>(props.settings, 'resource-policies'));
  const [chosen, setChosen] = React.useState<string | null>(null);
  const list = policies.data || [];
  const current = list.find(p => p.name === chosen) || null;
  const fields = COLUMNS.map(k => POLICY_FIELDS.find(f => f.key === k)!);
  return (
    <AdminFrame page="policies" title="Resource policies" onRefresh={() => void policies.reload()} busy={policies.busy} error={policies.error}>
      <div className="jp-hubgrid-admin-columns">
        <div className="jp-hubgrid-admin-main">
          <table className="jp-hubgrid-admin-table" data-table="policies">
            <thead>
              <tr>
                <th>Name</th>
                {fields.map(f => (
                  <th key={f.key}>{f.label}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {list.map(p => (
                <tr key={p.name} data-policy={p.name} className={p.name === chosen ? 'jp-mod-selected' : ''}>
                  <td>
                    <button className="jp-hubgrid-admin-link" onClick={() => setChosen(p.name)}>{p.name}</button>
                  </td>
                  {fields.map(f => (
                    <td key={f.key} data-column={f.key}>{policyCell(p, f)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
          {chosen && (
            <button className="jp-mod-styled" onClick={() => setChosen(null)}>New policy…</button>
          )}
          <PresetsTable {...props} />
        </div>
        <div className="jp-hubgrid-admin-side">
          <PolicyForm
            key={current ? current.name + JSON.stringify(current) : 'new'}
            {...props}
            policy={current}
            onSaved={name => {
              setChosen(name);
              void policies.reload();
            }}
          />
        </div>
      </div>
    </AdminFrame>
  );
}
