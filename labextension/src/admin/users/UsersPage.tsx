/**
 * The Users page: search (name, role, domain, active), create, edit a user
 * (UserEditor), their keypairs, bulk add from a CSV file (BulkAdd). Every
 * name is rendered as text; the service's refusals are shown as they come.
 */

import * as React from 'react';

import { AdminFrame, Field, IAdminPageProps, useAdminLoad } from '../frame';
import { fieldErrors } from '../errors';
import { adminCall } from '../http';
import { IUser, IUserFilters, NO_FILTERS, ROLES, userCreateBody, usersPath } from './model';
import { UserEditor } from './UserEditor';
import { BulkAdd } from './BulkAdd';
import { counted } from '../../words';



function Filters(props: { value: IUserFilters; onChange: (f: IUserFilters) => void; superadmin: boolean }): JSX.Element {
  const f = props.value;
  const set = (k: keyof IUserFilters) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    props.onChange({ ...f, [k]: e.target.value });
  return (
    <div className="jp-hubgrid-admin-filters">
      <input className="jp-mod-styled" name="q" placeholder="name contains" value={f.q} onChange={set('q')} />
      <select className="jp-mod-styled" name="role" value={f.role} onChange={set('role')}>
        <option value="">any role</option>
        {ROLES.map(r => (
          <option key={r} value={r}>{r}</option>
        ))}
      </select>
      {props.superadmin && (
        <input className="jp-mod-styled" name="domain" placeholder="domain" value={f.domain} onChange={set('domain')} />
      )}
      <select className="jp-mod-styled" name="active" value={f.active} onChange={set('active')}>
        <option value="">active or not</option>
        <option value="true">active</option>
        <option value="false">inactive</option>
      </select>
    </div>
  );
}

function CreateUser(props: IAdminPageProps & { onCreated: (u: IUser) => void }): JSX.Element {
  const superadmin = props.caller.role === 'superadmin';
  const [name, setName] = React.useState('');
  const [domain, setDomain] = React.useState(props.caller.domain);
  const [role, setRole] = React.useState('user');
  const [errors, setErrors] = React.useState<{ [f: string]: string }>({});
  const [error, setError] = React.useState<unknown>(null);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    try {
      const u = await adminCall<IUser>(props.settings, 'users', 'POST', userCreateBody(name, domain, role));
      setErrors({});
      setError(null);
      setName('');
      props.onCreated(u);
    } catch (err) {
      setErrors(fieldErrors(err));
      setError(err);
    }
  };
  return (
    <form className="jp-hubgrid-admin-form" data-form="create-user" onSubmit={submit}>
      <h3>New user</h3>
      <Field label="Name" field="name" errors={errors}>
        <input className="jp-mod-styled" name="name" value={name} onChange={e => setName(e.target.value)} />
      </Field>
      <Field label="Domain" field="domain" errors={errors}>
        <input className="jp-mod-styled" name="domain" value={domain} disabled={!superadmin} onChange={e => setDomain(e.target.value)} />
      </Field>
      <Field label="Role" field="role" errors={errors}>
        <select className="jp-mod-styled" name="role" value={role} onChange={e => setRole(e.target.value)}>
          {ROLES.filter(r => superadmin || r !== 'superadmin').map(r => (
            <option key={r} value={r}>{r}</option>
          ))}
        </select>
      </Field>
      <button type="submit" className="jp-mod-styled jp-mod-accept">Create user</button>
      {error && !Object.keys(errors).length ? <span className="jp-hubgrid-admin-field-error" role="alert">{String((error as Error).message)}</span> : null}
    </form>
  );
}

export function UsersPage(props: IAdminPageProps): JSX.Element {
  const [filters, setFilters] = React.useState<IUserFilters>(NO_FILTERS);
  const [applied, setApplied] = React.useState<IUserFilters>(NO_FILTERS);
  const [selected, setSelected] = React.useState<string | null>(null);
  const users = useAdminLoad(() => adminCall<IUser[]>(props.settings, usersPath(applied)), [applied]);
  const superadmin = props.caller.role === 'superadmin';
  const list = users.data || [];
  const current = list.find(u => u.name === selected) || null;
  return (
    <AdminFrame page="users" title="Users" onRefresh={() => void users.reload()} busy={users.busy} error={users.error}>
      <form
        className="jp-hubgrid-admin-search"
        onSubmit={e => {
          e.preventDefault();
          setApplied(filters);
        }}
      >
        <Filters value={filters} onChange={setFilters} superadmin={superadmin} />
        <button type="submit" className="jp-mod-styled jp-mod-accept">Search</button>
      </form>
      <div className="jp-hubgrid-admin-columns">
        <div className="jp-hubgrid-admin-main">
          <table className="jp-hubgrid-admin-table" data-table="users">
            <thead>
              <tr>
                <th>Name</th>
                <th>Domain</th>
                <th>Role</th>
                <th>Active</th>
                <th>Policy</th>
                <th>Projects</th>
              </tr>
            </thead>
            <tbody>
              {list.map(u => (
                <tr
                  key={u.name}
                  data-user={u.name}
                  className={u.name === selected ? 'jp-mod-selected' : ''}
                  onClick={() => setSelected(u.name)}
                >
                  <td>
                    <button className="jp-hubgrid-admin-link" onClick={() => setSelected(u.name)}>{u.name}</button>
                  </td>
                  <td>{u.domain}</td>
                  <td>{u.role}</td>
                  <td>{u.active ? 'yes' : 'no'}</td>
                  <td>{u.resource_policy || '—'}</td>
                  <td>{u.projects.join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="jp-hubgrid-admin-count">{users.data ? counted(list.length, 'user') : ''}</p>
        </div>
        <div className="jp-hubgrid-admin-side">
          {current ? (
            <UserEditor
              key={current.name + JSON.stringify(current)}
              {...props}
              user={current}
              onChanged={() => void users.reload()}
            />
          ) : (
            <CreateUser {...props} onCreated={u => {
              setSelected(u.name);
              void users.reload();
            }} />
          )}
          {current && (
            <button className="jp-mod-styled" onClick={() => setSelected(null)}>New user…</button>
          )}
          <BulkAdd {...props} onDone={() => void users.reload()} />
        </div>
      </div>
    </AdminFrame>
  );
}
