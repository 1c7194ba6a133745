/**
 * The resource groups a domain may use, on its page, and the way to one:
 * a domain whose users may use no group starts no session (as Backend.AI's
 * domains have their allowed scaling groups). A superadmin grants an
 * existing group to the domain right here (`PUT resource-groups/{g}/grants`,
 * the call the Resource Groups and Nodes page makes, where grants are also
 * removed); a domain admin is told who grants one and where.
 */

import * as React from 'react';

import { ErrorBar, IAdminPageProps } from '../frame';
import { adminCall } from '../http';
import { grantable, groupsFor, IGroup } from './model';

/** Where grants are made and removed: the admin menu's page. */
export const GROUPS_PAGE = 'Resource Groups and Nodes';

export function DomainGroups(
  props: IAdminPageProps & { domain: string; groups: IGroup[]; onGranted: () => Promise<void> | void }
): JSX.Element {
  const superadmin = props.caller.role === 'superadmin';
  const granted = groupsFor(props.groups, props.domain);
  const choices = grantable(props.groups, props.domain);
  const [chosen, setChosen] = React.useState('');
  const [error, setError] = React.useState<unknown>(null);
  const group = choices.includes(chosen) ? chosen : choices[0] || '';
  return (
    <div className="jp-hubgrid-admin-domain-groups">
      <p data-field="resource-groups">
        {`Resource groups: ${granted.map(g => `${g.group} (${g.via})`).join(', ') || 'none granted'}`}
      </p>
      {granted.length === 0 && (
        <p data-field="no-group" role="note">
          {`No resource group is granted to ${props.domain}: its users can start no session until one is. ` +
            (superadmin
              ? choices.length
                ? `Grant one here, or on the ${GROUPS_PAGE} page (hubgrid Admin menu), where grants are removed too.`
                : `No resource group exists to grant: make one on the ${GROUPS_PAGE} page (hubgrid Admin menu).`
              : `A superadmin grants one, on the ${GROUPS_PAGE} page.`)}
        </p>
      )}
      {superadmin && choices.length > 0 && (
        <form
          className="jp-hubgrid-admin-inline"
          data-form="grant-group"
          onSubmit={async e => {
            e.preventDefault();
            try {
              await adminCall(props.settings, `resource-groups/${encodeURIComponent(group)}/grants`, 'PUT', {
                domain: props.domain
              });
              setError(null);
              await props.onGranted();
            } catch (err) {
              setError(err);
            }
          }}
        >
          <select className="jp-mod-styled" aria-label="Resource group to grant" value={group}
            onChange={e => setChosen(e.target.value)}>
            {choices.map(name => (
              <option key={name} value={name}>{name}</option>
            ))}
          </select>{' '}
          <button type="submit" className="jp-mod-styled jp-mod-accept">{`Grant to ${props.domain}`}</button>
        </form>
      )}
      {error ? <ErrorBar error={error} /> : null}
    </div>
  );
}
