/**
 * Resource groups and nodes (hubgrid:admin-groups): pick a group; its
 * grants (superadmins add and remove them), scheduler policy and pending
 * timeout, and each of its nodes (NodeCard: bars, drain switch, GPU map,
 * sessions), read from GET node-sessions (50 nodes a read) once its card
 * is drawn.
 * Live: read again every LIVE_GROUPS ms while shown (../live.ts); a node's
 * details are read again when its figures in GET nodes change (Refresh:
 * all), kept until then; the settings form keeps what the admin is editing.
 */

import { Button } from '@jupyterlab/ui-components';
import * as React from 'react';

import { AdminFrame, ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { useLivePoll } from '../live';
import { OpsApi } from './api';
import { grantBody, GrantKind, grantLabel, groupChange, groupForm, IGroupForm } from './grants';
import { inChunks, keepDetails, keepForm, nodesToRead, NODES_PER_READ } from './keep';
import { NodeCard } from './NodeCard';
import { IAdminGroup, IAdminNode } from './types';

/** How often the page reads again while shown (ms). */
export const LIVE_GROUPS = 10_000;

interface IGroupState {
  groups: IAdminGroup[];
  nodes: IAdminNode[];
}

function GroupSettings(props: {
  group: IAdminGroup;
  editable: boolean;
  onSave: (change: object) => Promise<void>;
}): JSX.Element {
  const [form, setForm] = React.useState<IGroupForm>(groupForm(props.group));
  const [error, setError] = React.useState<unknown>(null);
  // what the form was filled from: a field the admin changed is kept on a new read
  const filled = React.useRef<IGroupForm>(groupForm(props.group));
  React.useEffect(() => {
    const after = groupForm(props.group);
    setForm(current => keepForm(current, filled.current, after));
    filled.current = after;
  }, [props.group]);
  const save = async () => {
    try {
      await props.onSave(groupChange(props.group, form));
      setError(null);
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div className="jp-hubgrid-ops-group-settings">
      <label>
        Scheduler policy{' '}
        <select value={form.queueOrder} disabled={!props.editable} name="queue_order"
          onChange={e => setForm({ ...form, queueOrder: e.target.value })}>
          {['fifo', 'priority', 'drf'].map(o => (
            <option key={o} value={o}>{o}</option>
          ))}
        </select>
      </label>{' '}
      <label>
        Pending timeout (s){' '}
        <input className="jp-mod-styled" name="pending_timeout" value={form.pendingTimeout}
          placeholder="none" disabled={!props.editable} size={8}
          onChange={e => setForm({ ...form, pendingTimeout: e.target.value })} />
      </label>{' '}
      {props.editable && (
        <Button className="jp-hubgrid-ops-save" onClick={() => void save()}>Save</Button>
      )}
      {error ? <ErrorBar error={error} /> : null}
    </div>
  );
}

function Grants(props: {
  group: IAdminGroup;
  editable: boolean;
  api: OpsApi;
  onChanged: () => Promise<void>;
}): JSX.Element {
  const [kind, setKind] = React.useState<GrantKind>('domain');
  const [name, setName] = React.useState('');
  const [error, setError] = React.useState<unknown>(null);
  const run = async (f: () => Promise<unknown>) => {
    try {
      await f();
      setError(null);
      await props.onChanged();
    } catch (e) {
      setError(e);
    }
  };
  const grants = props.group.grants;
  return (
    <div className="jp-hubgrid-ops-grants">
      <h4>Grants</h4>
      {grants === undefined ? (
        <div>only superadmins read a group's grants</div>
      ) : (
        <ul>
          {grants.map(g => (
            <li key={grantLabel(g)} data-grant={grantLabel(g)}>
              {grantLabel(g)}{' '}
              {props.editable && (
                <Button minimal small onClick={() => void run(() => props.api.revoke(props.group.name, g))}>
                  Remove
                </Button>
              )}
            </li>
          ))}
          {grants.length === 0 && <li>no grants: nobody may use it</li>}
        </ul>
      )}
      {props.editable && (
        <div className="jp-hubgrid-ops-grant-form">
          <select value={kind} aria-label="grant kind" onChange={e => setKind(e.target.value as GrantKind)}>
            <option value="domain">domain</option>
            <option value="project">project (domain/project)</option>
            <option value="user">user</option>
          </select>{' '}
          <input className="jp-mod-styled" aria-label="grant name" value={name}
            onChange={e => setName(e.target.value)} />{' '}
          <Button onClick={() => void run(() => props.api.grant(props.group.name, grantBody(kind, name)))}>
            Grant
          </Button>
        </div>
      )}
      {error ? <ErrorBar error={error} /> : null}
    </div>
  );
}

export function GroupsPage(props: IAdminPageProps): JSX.Element {
  const api = React.useMemo(() => new OpsApi(props.settings), [props.settings]);
  const superadmin = props.caller.role === 'superadmin';
  const [chosen, setChosen] = React.useState('');
  // each node's GPU holders and sessions, read after its card is drawn from
  // GET nodes (a group of 200 nodes shows at once, its maps fill in), kept
  // until read again
  const [details, setDetails] = React.useState<Record<string, IAdminNode>>({});
  const detailsNow = React.useRef(details);
  detailsNow.current = details;
  const listedBefore = React.useRef<IAdminNode[]>([]);
  const readAll = React.useRef(true);
  const generation = React.useRef(0);
  const frame = React.useRef<HTMLDivElement>(null);
  const load = async (): Promise<IGroupState> => {
    const all = readAll.current;
    readAll.current = false;
    const [groups, listed] = await Promise.all([api.groups(), api.nodes()]);
    const group = groups.find(g => g.name === chosen) ?? groups[0];
    const nodes = listed.filter(n => group && n.resource_group === group.name);
    const stale = nodesToRead(listedBefore.current, nodes, detailsNow.current, all);
    listedBefore.current = nodes;
    const mine = ++generation.current;
    setDetails(prev => keepDetails(prev, nodes));
    for (const names of inChunks(stale, NODES_PER_READ)) {
      api.nodesSessions(names).then(
        read => {
          if (generation.current === mine) {
            setDetails(prev => {
              const next = { ...prev };
              read.forEach(d => (next[d.name] = d));
              return next;
            });
          }
        },
        () => undefined // the cards keep what they showed; the next read tries again
      );
    }
    return { groups, nodes };
  };
  const { data, error, busy, reload, refresh } = useAdminLoad(load, [api, chosen]);
  useLivePoll('hubgrid:admin-groups', frame, refresh, LIVE_GROUPS);
  const group = data?.groups.find(g => g.name === chosen) ?? data?.groups[0];
  const setSchedulable = async (node: string, schedulable: boolean) => {
    await api.setSchedulable(node, schedulable);
    // its card shows GET nodes' figures until its details are read again
    setDetails(prev => keepDetails(prev, (data?.nodes ?? []).filter(n => n.name !== node)));
    await reload();
  };
  return (
    <AdminFrame page="groups" title="Resource groups and nodes" frameRef={frame} busy={busy} error={error}
      onRefresh={() => {
        readAll.current = true;
        void reload();
      }}>
      <label className="jp-hubgrid-ops-pick">
        Resource group{' '}
        <select value={group?.name ?? ''} aria-label="resource group"
          onChange={e => setChosen(e.target.value)}>
          {(data?.groups ?? []).map(g => (
            <option key={g.name} value={g.name}>{`${g.name} (${g.nodes.length} node(s))`}</option>
          ))}
        </select>
      </label>
      {group && (
        <div className="jp-hubgrid-ops-group" data-group={group.name}>
          <div className="jp-hubgrid-ops-group-facts">
            {`${group.active ? 'active' : 'inactive'}; session types: ${group.session_types.join(', ')}`}
            {group.description ? ` — ${group.description}` : ''}
          </div>
          <GroupSettings group={group} editable={superadmin}
            onSave={async change => {
              await api.patchGroup(group.name, change);
              await reload();
            }} />
          <Grants group={group} editable={superadmin} api={api} onChanged={reload} />
          <h4>Nodes</h4>
          {(data?.nodes ?? []).map(n => (
            <NodeCard key={n.name} node={details[n.name] ?? n} canDrain={superadmin}
              onSchedulable={setSchedulable} />
          ))}
          {data && data.nodes.length === 0 && <div>no nodes in this group</div>}
        </div>
      )}
    </AdminFrame>
  );
}
