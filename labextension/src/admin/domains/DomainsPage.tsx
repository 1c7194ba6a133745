/**
 * The Domains and projects page: the domains the caller administers; for
 * the chosen one its totals per slot (exact bars), users, storage hosts,
 * the resource groups it may use (and a grant of one: DomainGroups), and
 * each project (bars, members, folder limits); create a domain (superadmins), create a project, add and remove
 * members; edit the domain (superadmins) and each project (EditForm).
 */

import * as React from 'react';

import { formatBytes } from '../../amounts';
import { counted } from '../../words';
import { AdminFrame, ErrorBar, Field, IAdminPageProps, useAdminLoad } from '../frame';
import { fieldErrors } from '../errors';
import { adminCall } from '../http';
import { Bars } from './Bars';
import { EditForm } from './EditForm';
import { Members } from './Members';
import { DomainGroups } from './DomainGroups';
import { EMPTY_PROJECT, IDomainTotals, IGroup, IProjectDraft, projectBody } from './model';

function CreateDomain(props: IAdminPageProps & { onCreated: (name: string) => void }): JSX.Element {
  const [name, setName] = React.useState('');
  const [errors, setErrors] = React.useState<{ [f: string]: string }>({});
  const [error, setError] = React.useState<unknown>(null);
  return (
    <form
      className="jp-hubgrid-admin-inline"
      data-form="create-domain"
      onSubmit={async e => {
        e.preventDefault();
        try {
          await adminCall(props.settings, 'domains', 'POST', { name: name.trim() });
          setErrors({});
          setError(null);
          props.onCreated(name.trim());
          setName('');
        } catch (err) {
          setErrors(fieldErrors(err));
          setError(err);
        }
      }}
    >
      <Field label="New domain" field="name" errors={errors}>
        <input className="jp-mod-styled" name="domain-name" value={name} onChange={e => setName(e.target.value)} />
      </Field>
      <button type="submit" className="jp-mod-styled jp-mod-accept">Create domain</button>
      {error && !Object.keys(errors).length ? <ErrorBar error={error} /> : null}
    </form>
  );
}

function CreateProject(props: IAdminPageProps & { domain: string; onCreated: () => void }): JSX.Element {
  const [draft, setDraft] = React.useState<IProjectDraft>(EMPTY_PROJECT);
  const [errors, setErrors] = React.useState<{ [f: string]: string }>({});
  const [error, setError] = React.useState<unknown>(null);
  const input = (k: keyof IProjectDraft, label: string, hint?: string) => (
    <Field label={label} field={k} errors={errors} hint={hint}>
      <input className="jp-mod-styled" name={`project-${k}`} value={draft[k]} onChange={e => setDraft({ ...draft, [k]: e.target.value })} />
    </Field>
  );
  return (
    <form
      className="jp-hubgrid-admin-form"
      data-form="create-project"
      onSubmit={async e => {
        e.preventDefault();
        const { body, errors: mine } = projectBody(draft);
        if (Object.keys(mine).length) {
          setErrors(mine);
          return;
        }
        try {
          await adminCall(props.settings, `domains/${encodeURIComponent(props.domain)}/projects`, 'POST', body);
          setDraft(EMPTY_PROJECT);
          setErrors({});
          setError(null);
          props.onCreated();
        } catch (err) {
          setErrors(fieldErrors(err));
          setError(err);
        }
      }}
    >
      <h3>{`New project in ${props.domain}`}</h3>
      {input('name', 'Name')}
      {input('description', 'Description')}
      {input('total_resource_slots', 'Total resource slots', 'cpu=8, gpu.shares=2')}
      {input('max_concurrent_sessions', 'Max concurrent sessions')}
      {input('max_vfolder_count', 'Max folders')}
      {input('allowed_vfolder_hosts', 'Allowed storage hosts', 'names separated by commas')}
      <button type="submit" className="jp-mod-styled jp-mod-accept">Create project</button>
      {error && !Object.keys(errors).length ? <ErrorBar error={error} /> : null}
    </form>
  );
}

function DomainDetail(
  props: IAdminPageProps & { domain: string; groups: IGroup[]; onDomainSaved: () => void; onGroupsChanged: () => Promise<void> }
): JSX.Element {
  const path = `domains/${encodeURIComponent(props.domain)}/totals`;
  const totals = useAdminLoad(() => adminCall<IDomainTotals>(props.settings, path), [path]);
  const [open, setOpen] = React.useState<string | null>(null);
  // the edit form shown: '' the domain's, a project's name, null none
  const [editing, setEditing] = React.useState<string | null>(null);
  const superadmin = props.caller.role === 'superadmin';
  const t = totals.data;
  const { onDomainSaved, onGroupsChanged, ...page } = props;
  return (
    <div className="jp-hubgrid-admin-domain" data-domain={props.domain}>
      {totals.error ? <ErrorBar error={totals.error} /> : null}
      {t && (
        <>
          <h3>
            {`${t.domain}${t.active ? '' : ' (inactive)'}`}{' '}
            {superadmin && (
              <button className="jp-mod-styled" data-edit="domain" onClick={() => setEditing(editing === '' ? null : '')}>
                Edit
              </button>
            )}
          </h3>
          {superadmin && editing === '' && (
            <EditForm
              {...page}
              target={{ domain: props.domain }}
              onSaved={() => {
                void totals.reload();
                onDomainSaved();
              }}
              onClose={() => setEditing(null)}
            />
          )}
          <p>{`${counted(t.users, 'user')}; storage hosts: ${t.allowed_vfolder_hosts.join(', ') || 'any allowed by policy'}`}</p>
          <DomainGroups {...page} domain={props.domain} groups={props.groups} onGranted={onGroupsChanged} />
          <Bars figures={t} level="domain" name={t.domain} />
          <table className="jp-hubgrid-admin-table" data-table="projects">
            <thead>
              <tr>
                <th>Project</th>
                <th>Members</th>
                <th>Use per slot</th>
                <th>Max sessions</th>
                <th>Folders</th>
                <th>Storage hosts</th>
              </tr>
            </thead>
            <tbody>
              {t.projects.map(p => (
                <React.Fragment key={p.name}>
                  <tr data-project={p.name}>
                    <td>
                      <button className="jp-hubgrid-admin-link" onClick={() => setOpen(open === p.name ? null : p.name)}>
                        {p.name}
                      </button>
                      {p.active ? '' : ' (inactive)'}{' '}
                      <button className="jp-mod-styled" data-edit="project" onClick={() => setEditing(editing === p.name ? null : p.name)}>
                        Edit
                      </button>
                    </td>
                    <td>{p.members}</td>
                    <td>
                      <Bars figures={p} level="project" name={p.name} />
                    </td>
                    <td>{p.max_concurrent_sessions ?? '—'}</td>
                    <td>{`${p.max_vfolder_count ?? '—'} / ${p.max_vfolder_size == null ? '—' : formatBytes(String(p.max_vfolder_size))}`}</td>
                    <td>{p.allowed_vfolder_hosts.join(', ') || '—'}</td>
                  </tr>
                  {editing === p.name && (
                    <tr data-edit-of={p.name}>
                      <td colSpan={6}>
                        <EditForm
                          {...page}
                          target={{ domain: props.domain, project: p.name }}
                          onSaved={() => void totals.reload()}
                          onClose={() => setEditing(null)}
                        />
                      </td>
                    </tr>
                  )}
                  {open === p.name && (
                    <tr data-members-of={p.name}>
                      <td colSpan={6}>
                        <Members {...page} project={p.name} onChanged={() => void totals.reload()} />
                      </td>
                    </tr>
                  )}
                </React.Fragment>
              ))}
            </tbody>
          </table>
          <CreateProject {...page} onCreated={() => void totals.reload()} />
        </>
      )}
    </div>
  );
}

export function DomainsPage(props: IAdminPageProps): JSX.Element {
  const superadmin = props.caller.role === 'superadmin';
  const domains = useAdminLoad(() => adminCall<Array<{ name: string; active: boolean }>>(props.settings, 'domains'));
  const groups = useAdminLoad(() => adminCall<IGroup[]>(props.settings, 'resource-groups'));
  const [chosen, setChosen] = React.useState<string>(superadmin ? '' : props.caller.domain);
  const [epoch, setEpoch] = React.useState(0);
  const visible = (domains.data || []).filter(d => superadmin || d.name === props.caller.domain);
  const current = chosen || visible[0]?.name || '';
  return (
    <AdminFrame
      page="domains"
      title="Domains and projects"
      busy={domains.busy}
      error={domains.error || groups.error}
      onRefresh={() => {
        void domains.reload();
        void groups.reload();
        setEpoch(epoch + 1);
      }}
    >
      <div className="jp-hubgrid-admin-columns">
        <div className="jp-hubgrid-admin-nav">
          <ul data-list="domains">
            {visible.map(d => (
              <li key={d.name} data-domain={d.name} className={d.name === current ? 'jp-mod-selected' : ''}>
                <button className="jp-hubgrid-admin-link" onClick={() => setChosen(d.name)}>
                  {d.name}
                  {d.active ? '' : ' (inactive)'}
                </button>
              </li>
            ))}
          </ul>
          {superadmin && (
            <CreateDomain {...props} onCreated={name => {
              setChosen(name);
              void domains.reload();
            }} />
          )}
        </div>
        <div className="jp-hubgrid-admin-main">
          {current && (
            <DomainDetail key={`${current}/${epoch}`} {...props} domain={current} groups={groups.data || []}
              onDomainSaved={() => void domains.reload()} onGroupsChanged={async () => {
                await groups.reload();
              }} />
          )}
        </div>
      </div>
    </AdminFrame>
  );
}
