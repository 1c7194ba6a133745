/**
 * Who a folder of mine is shared with, and the invitations to it still
 * waiting for an answer: revoke either; invite from the dialog's button.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import * as actions from './actions';
import * as api from './api';
import { IFolderRow } from './folders';
import { formatTime } from './format';
import { DataModel } from './model';
import { IShare } from './types';

function SharesList(props: { model: DataModel; row: IFolderRow }): JSX.Element {
  const { model, row } = props;
  const [shares, setShares] = React.useState<IShare[] | null>(null);
  const [error, setError] = React.useState('');
  const [, redraw] = React.useState(0);
  const load = React.useCallback(() => {
    api
      .listShares(model.settings, row.id)
      .then(setShares)
      .catch((e: Error) => setError(e.message));
  }, [model, row.id]);
  React.useEffect(() => {
    load();
    return model.subscribe(() => redraw(n => n + 1));
  }, [load, model]);
  const pending = model.state.sent.filter(
    i => i.folder === row.id && i.state === 'pending'
  );
  return (
    <div className="jp-hubgrid-data-shares">
      <h3>Shared with</h3>
      {error && <p className="jp-hubgrid-error" role="alert">{error}</p>}
      {shares === null && !error && <p>Loading…</p>}
      {shares !== null && shares.length === 0 && <p>Nobody yet.</p>}
      <ul>
        {(shares ?? []).map(s => (
          <li key={s.user}>
            <span className="jp-hubgrid-data-who">{s.user}</span>{' '}
            <span>{s.permission}</span>{' '}
            <button
              className="jp-Button jp-mod-styled jp-mod-warn"
              onClick={async () => {
                if (await actions.revokeShare(model, row.id, row.name, s.user, false)) {
                  load();
                }
              }}
            >
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <h3>Invited, no answer yet</h3>
      {pending.length === 0 && <p>None.</p>}
      <ul>
        {pending.map(i => (
          <li key={i.id}>
            <span className="jp-hubgrid-data-who">{i.invitee}</span>{' '}
            <span>{i.permission}</span>{' '}
            <span className="jp-hubgrid-data-sub">{formatTime(i.created_at)}</span>{' '}
            <button
              className="jp-Button jp-mod-styled jp-mod-warn"
              onClick={() => actions.revokeInvitation(model, i)}
            >
              Revoke
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The Share button of a folder row. */
export async function shareFolder(model: DataModel, row: IFolderRow): Promise<void> {
  const me = model.state.me;
  if (row.kind === 'shared') {
    if (me) {
      await actions.revokeShare(model, row.id, row.name, me.name, true);
    }
    return;
  }
  const body = ReactWidget.create(<SharesList model={model} row={row} />);
  const result = await showDialog({
    title: `Sharing ${row.name}`,
    body,
    buttons: [
      Dialog.cancelButton({ label: 'Close' }),
      Dialog.okButton({ label: 'Invite…' })
    ]
  });
  if (result.button.accept) {
    await actions.inviteTo(model, row);
  }
}
