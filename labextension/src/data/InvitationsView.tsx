/** Invitations: answer those waiting for me, revoke those I sent. */

import * as React from 'react';

import * as actions from './actions';
import { formatTime } from './format';
import { groupInvitations } from './invitations';
import { DataModel } from './model';
import { IInvitation } from './types';

function Button(props: {
  label: string;
  warn?: boolean;
  onClick: () => void;
}): JSX.Element {
  return (
    <button
      className={`jp-Button jp-mod-styled ${props.warn ? 'jp-mod-warn' : 'jp-mod-accept'}`}
      onClick={props.onClick}
    >
      {props.label}
    </button>
  );
}

function Line(props: { invitation: IInvitation; children?: React.ReactNode; who: string }): JSX.Element {
  const i = props.invitation;
  return (
    <li className="jp-hubgrid-data-invitation" data-invitation={i.id}>
      <div>
        <span className="jp-hubgrid-data-folder">{i.folder_name}</span>{' '}
        <span className="jp-hubgrid-data-sub">
          {props.who} · {i.permission} · {formatTime(i.created_at)}
        </span>
      </div>
      {props.children && <div className="jp-hubgrid-data-buttons">{props.children}</div>}
    </li>
  );
}

export function InvitationsView(props: { model: DataModel }): JSX.Element {
  const { model } = props;
  const { me, received, sent } = model.state;
  if (!me) {
    return <p>Loading…</p>;
  }
  const groups = groupInvitations(received, sent, me.name);
  return (
    <div className="jp-hubgrid-data-invitations">
      <h3>Waiting for you</h3>
      {groups.received.length === 0 && <p className="jp-hubgrid-data-empty">No invitations.</p>}
      <ul>
        {groups.received.map(i => (
          <Line key={i.id} invitation={i} who={`from ${i.inviter}`}>
            <Button label="Accept" onClick={() => actions.answer(model, i, true)} />
            <Button label="Decline" warn onClick={() => actions.answer(model, i, false)} />
          </Line>
        ))}
      </ul>
      <h3>Sent, no answer yet</h3>
      {groups.sent.length === 0 && <p className="jp-hubgrid-data-empty">None.</p>}
      <ul>
        {groups.sent.map(i => (
          <Line key={i.id} invitation={i} who={`to ${i.invitee}`}>
            <Button label="Revoke" warn onClick={() => actions.revokeInvitation(model, i)} />
          </Line>
        ))}
      </ul>
      {groups.history.length > 0 && (
        <details>
          <summary>Answered ({groups.history.length})</summary>
          <ul>
            {groups.history.map(i => (
              <Line
                key={i.id}
                invitation={i}
                who={`${i.inviter} → ${i.invitee} · ${i.state}`}
              />
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
