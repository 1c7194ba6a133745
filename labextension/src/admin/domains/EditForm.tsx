/**
 * Edit a domain (superadmins) or a project (its domain's admins): the form
 * prefilled from GET, Save sends only what changed (PATCH, ./edit.ts), the
 * service's 422 problems shown next to their fields, then `onSaved` (the
 * page reads its totals again).
 */

import * as React from 'react';

import { ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { fieldErrors } from '../errors';
import { adminCall } from '../http';
import { PolicyDraft } from '../policies/form';
import { FormFields } from '../policies/FormFields';
import { editDraft, editFields, editPath, editRequest, IEditTarget } from './edit';

type Thing = { [key: string]: unknown };

export function EditForm(props: IAdminPageProps & { target: IEditTarget; onSaved: () => void; onClose: () => void }): JSX.Element {
  const { target } = props;
  const path = editPath(target);
  const current = useAdminLoad(() => adminCall<Thing>(props.settings, path), [path]);
  const [draft, setDraft] = React.useState<PolicyDraft | null>(null);
  const [errors, setErrors] = React.useState<{ [f: string]: string }>({});
  const [error, setError] = React.useState<unknown>(null);
  const [note, setNote] = React.useState('');
  // prefill from each answer of GET (first read, and after a save)
  React.useEffect(() => {
    if (current.data) {
      setDraft(editDraft(target, current.data));
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [current.data]);
  const what = target.project === undefined ? `domain ${target.domain}` : `project ${target.domain}/${target.project}`;
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (!current.data || !draft) {
      return;
    }
    setNote('');
    const req = editRequest(target, current.data, draft);
    if (Object.keys(req.errors).length) {
      setErrors(req.errors);
      setError(null);
      return;
    }
    if (!Object.keys(req.body).length) {
      setErrors({});
      setError(null);
      setNote('nothing changed');
      return;
    }
    try {
      await adminCall<Thing>(props.settings, req.path, 'PATCH', req.body);
      setErrors({});
      setError(null);
      setNote('saved');
      await current.reload();
      props.onSaved();
    } catch (err) {
      setErrors(fieldErrors(err));
      setError(err);
    }
  };
  return (
    <form
      className="jp-hubgrid-admin-form jp-hubgrid-admin-edit"
      data-form={target.project === undefined ? 'edit-domain' : 'edit-project'}
      data-domain={target.domain}
      data-project={target.project ?? ''}
      onSubmit={submit}
    >
      <h3>{`Edit ${what}`}</h3>
      {current.error ? <ErrorBar error={current.error} /> : null}
      {draft && <FormFields fields={editFields(target)} draft={draft} onChange={setDraft} errors={errors} />}
      <div className="jp-hubgrid-admin-buttons">
        <button type="submit" className="jp-mod-styled jp-mod-accept" disabled={!draft}>Save</button>
        <button type="button" className="jp-mod-styled" onClick={props.onClose}>Close</button>
        {note && <span className="jp-hubgrid-admin-ok">{note}</span>}
      </div>
      {error && !Object.keys(errors).length ? <ErrorBar error={error} /> : null}
    </form>
  );
}
