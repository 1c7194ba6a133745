/**
 * A user's keypairs on the Users page: list (without secrets), create one
 * (its secret shown once), deactivate, change its resource policy.
 */

import * as React from 'react';

import { ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { adminCall } from '../http';
import { IKeypair, keypairBody } from './model';

export function Keypairs(props: IAdminPageProps & { user: string }): JSX.Element {
  const kps = useAdminLoad(
    () => adminCall<IKeypair[]>(props.settings, `keypairs?user=${encodeURIComponent(props.user)}`),
    [props.user]
  );
  const [policy, setPolicy] = React.useState('');
  const [expires, setExpires] = React.useState('');
  const [made, setMade] = React.useState<IKeypair | null>(null);
  const [error, setError] = React.useState<unknown>(null);
  const act = async (f: () => Promise<unknown>) => {
    try {
      await f();
      setError(null);
      void kps.reload();
    } catch (e) {
      setError(e);
    }
  };
  const path = (k: IKeypair) => `keypairs/${encodeURIComponent(k.access_key)}`;
  return (
    <div className="jp-hubgrid-admin-keypairs" data-user={props.user}>
      <h4>Keypairs</h4>
      {kps.error ? <ErrorBar error={kps.error} /> : null}
      {error ? <ErrorBar error={error} /> : null}
      <table className="jp-hubgrid-admin-table" data-table="keypairs">
        <thead>
          <tr>
            <th>Access key</th>
            <th>Policy</th>
            <th>Active</th>
            <th>Expires</th>
            <th>Last used</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(kps.data || []).map(k => (
            <tr key={k.access_key} data-key={k.access_key}>
              <td><code>{k.access_key}</code></td>
              <td>
                <input
                  className="jp-mod-styled"
                  name="keypair-policy"
                  defaultValue={k.resource_policy || ''}
                  onKeyDown={e => {
                    if (e.key === 'Enter') {
                      const v = (e.target as HTMLInputElement).value.trim();
                      if (v) {
                        void act(() => adminCall(props.settings, path(k), 'PATCH', { resource_policy: v }));
                      }
                    }
                  }}
                />
              </td>
              <td>{k.active ? 'yes' : 'no'}</td>
              <td>{k.expires_at || '—'}</td>
              <td>{k.last_used_at || '—'}</td>
              <td>
                {k.active && (
                  <button
                    className="jp-mod-styled jp-mod-warn"
                    onClick={() => void act(() => adminCall(props.settings, path(k), 'PATCH', { active: false }))}
                  >
                    Deactivate
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        className="jp-hubgrid-admin-inline"
        data-form="create-keypair"
        onSubmit={e => {
          e.preventDefault();
          void act(async () => {
            setMade(await adminCall<IKeypair>(props.settings, 'keypairs', 'POST', keypairBody(props.user, policy, expires)));
          });
        }}
      >
        <input className="jp-mod-styled" name="policy" placeholder="policy (optional)" value={policy} onChange={e => setPolicy(e.target.value)} />
        <input className="jp-mod-styled" name="expires_at" placeholder="expires (ISO time, optional)" value={expires} onChange={e => setExpires(e.target.value)} />
        <button type="submit" className="jp-mod-styled">New keypair</button>
      </form>
      {made && (
        <div className="jp-hubgrid-admin-secret" role="status">
          New keypair <code>{made.access_key}</code>, secret (shown once): <code>{made.secret_key}</code>
        </div>
      )}
    </div>
  );
}
