/**
 * The resource presets (`GET resource-presets`), read-only: the sizes every
 * user is offered by the hub's spawn form and the Lab launcher, the default
 * one marked. They are set in the service's configuration
 * (`c.HubgridService.resource_presets`, docs/admin.md "Resource presets").
 */

import * as React from 'react';

import { formatSlot } from '../../summary/exact';
import { IPreset } from '../../sessions/launch';
import { ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { adminCall } from '../http';

const SLOTS = ['cpu', 'mem', 'gpu', 'gpu.shares'];

export function PresetsTable(props: IAdminPageProps): JSX.Element {
  const presets = useAdminLoad(() => adminCall<IPreset[]>(props.settings, 'resource-presets'));
  return (
    <section className="jp-hubgrid-admin-presets">
      <h3>Resource presets</h3>
      <p className="jp-hubgrid-note">
        The sizes the spawn form and the launcher offer; a session that names no size gets the
        default one. Set in the service's configuration (c.HubgridService.resource_presets).
      </p>
      {presets.error ? <ErrorBar error={presets.error} /> : null}
      <table className="jp-hubgrid-admin-table" data-table="presets">
        <thead>
          <tr>
            <th>Name</th>
            <th>CPU</th>
            <th>Memory</th>
            <th>GPUs</th>
            <th>GPU shares</th>
            <th>Description</th>
          </tr>
        </thead>
        <tbody>
          {(presets.data || []).map(p => (
            <tr key={p.name} data-preset={p.name}>
              <td>{p.default ? `${p.name} (default)` : p.name}</td>
              {SLOTS.map(slot => (
                <td key={slot} data-column={slot}>{p.slots[slot] ? formatSlot(slot, p.slots[slot]) : '—'}</td>
              ))}
              <td>{p.description ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
