/** A project's members: list, add (PUT), remove (DELETE). */

import * as React from 'react';

import { ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { adminCall } from '../http';

/** A member as GET .../members lists them. */
interface IMember {
  user: string;
  role: string;
  active: boolean;
}

export function Members(props: IAdminPageProps & { domain: string; project: string; onChanged: () => void }): JSX.Element {
  const base = `domains/${encodeURIComponent(props.domain)}/projects/${encodeURIComponent(props.project)}/members`;
  const members = useAdminLoad(() => adminCall<IMember[]>(props.settings, base), [base]);
  const [name, setName] = React.useState('');
  const [error, setError] = React.useState<unknown>(null);
  const act = async (method: string, user: string) => {
    try {
      await adminCall(props.settings, `${base}/${encodeURIComponent(user)}`, method);
      setError(null);
      setName('');
      void members.reload();
      props.onChanged();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div className="jp-hubgrid-admin-members" data-project={props.project}>
      {members.error ? <ErrorBar error={members.error} /> : null}
      <ul>
        {(members.data || []).map(m => (
          <li key={m.user} data-member={m.user}>
            {`${m.user} (${m.role}${m.active ? '' : ', inactive'})`}{' '}
            <button className="jp-mod-styled jp-mod-warn" onClick={() => void act('DELETE', m.user)}>
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form
        className="jp-hubgrid-admin-inline"
        onSubmit={e => {
          e.preventDefault();
          void act('PUT', name.trim());
        }}
      >
        <input className="jp-mod-styled" name="member" placeholder="user name" value={name} onChange={e => setName(e.target.value)} />
        <button type="submit" className="jp-mod-styled">Add member</button>
      </form>
      {error ? <ErrorBar error={error} /> : null}
    </div>
  );
}
