/**
 * One user's form on the Users page: role, domain, projects, resource
 * policy, active (deactivate), then their keypairs. Saves with PATCH
 * users/{name} (only what changed) and a PUT / DELETE per membership.
 */

import * as React from 'react';

import { ErrorBar, Field } from '../frame';
import { fieldErrors } from '../errors';
import { adminCall } from '../http';
import { IAdminPageProps } from '../frame';
import { IUser, IUserDraft, membershipChanges, ROLES, userDraft, userPatch } from './model';
import { Keypairs } from './Keypairs';


export function UserEditor(props: IAdminPageProps & { user: IUser; onChanged: () => void }): JSX.Element {
  const u = props.user;
  const superadmin = props.caller.role === 'superadmin';
  const [draft, setDraft] = React.useState<IUserDraft>(userDraft(u));
  const [errors, setErrors] = React.useState<{ [f: string]: string }>({});
  const [error, setError] = React.useState<unknown>(null);
  const [saved, setSaved] = React.useState('');
  const set = (k: keyof IUserDraft) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setDraft({ ...draft, [k]: e.target.type === 'checkbox' ? (e.target as HTMLInputElement).checked : e.target.value });

  const save = async (d: IUserDraft) => {
    setSaved('');
    try {
      const body = userPatch(u, d);
      const domain = (body?.domain as string) || u.domain;
      if (body) {
        await adminCall(props.settings, `users/${encodeURIComponent(u.name)}`, 'PATCH', body);
      }
      const { add, remove } = membershipChanges(domain === u.domain ? u : { ...u, projects: [] }, d);
      const member = (p: string) =>
        `domains/${encodeURIComponent(domain)}/projects/${encodeURIComponent(p)}/members/${encodeURIComponent(u.name)}`;
      for (const p of add) {
        try {
          await adminCall(props.settings, member(p), 'PUT');
        } catch (e) {
          setErrors({ projects: `project ${p}: ${(e as Error).message}` });
          throw e;
        }
      }
      for (const p of remove) {
        await adminCall(props.settings, member(p), 'DELETE');
      }
      setErrors({});
      setError(null);
      setSaved('saved');
      props.onChanged();
    } catch (e) {
      setErrors(prev => ({ ...prev, ...fieldErrors(e) }));
      setError(e);
    }
  };

  return (
    <div className="jp-hubgrid-admin-editor" data-user={u.name}>
      <form
        className="jp-hubgrid-admin-form"
        data-form="edit-user"
        onSubmit={e => {
          e.preventDefault();
          void save(draft);
        }}
      >
        <h3>{u.name}</h3>
        <Field label="Role" field="role" errors={errors}>
          <select className="jp-mod-styled" name="role" value={draft.role} onChange={set('role')}>
            {ROLES.filter(r => superadmin || r !== 'superadmin' || u.role === 'superadmin').map(r => (
              <option key={r} value={r}>{r}</option>
            ))}
          </select>
        </Field>
        <Field label="Domain" field="domain" errors={errors}>
          <input className="jp-mod-styled" name="domain" value={draft.domain} disabled={!superadmin} onChange={set('domain')} />
        </Field>
        <Field label="Projects" field="projects" errors={errors} hint="names separated by ;">
          <input className="jp-mod-styled" name="projects" value={draft.projects} onChange={set('projects')} />
        </Field>
        <Field label="Resource policy" field="resource_policy" errors={errors}>
          <input className="jp-mod-styled" name="resource_policy" value={draft.resource_policy} onChange={set('resource_policy')} />
        </Field>
        <Field label="Active" field="active" errors={errors}>
          <input type="checkbox" name="active" checked={draft.active} onChange={set('active')} />
        </Field>
        <div className="jp-hubgrid-admin-buttons">
          <button type="submit" className="jp-mod-styled jp-mod-accept">Save</button>
          {u.active && (
            <button
              type="button"
              className="jp-mod-styled jp-mod-warn"
              onClick={() => void save({ ...userDraft(u), active: false })}
            >
              Deactivate
            </button>
          )}
          {saved && <span className="jp-hubgrid-admin-ok">{saved}</span>}
        </div>
        {error && !Object.keys(errors).length ? <ErrorBar error={error} /> : null}
      </form>
      <Keypairs settings={props.settings} caller={props.caller} user={u.name} />
    </div>
  );
}
