import { ServerConnection } from '@jupyterlab/services';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { getMe, IMe } from './api';
import { hubgridIcon } from './icons';

/** What the identity view shows: still loading, the caller, or why not. */
type IdentityState =
  | { kind: 'loading' }
  | { kind: 'ready'; me: IMe }
  | { kind: 'error'; message: string };

/**
 * Who this Lab acts as in hubgrid. Every value is rendered as text by
 * React (never as HTML): names come from users.
 */
export function IdentityView(props: {
  settings: ServerConnection.ISettings;
}): JSX.Element {
  const [state, setState] = React.useState<IdentityState>({ kind: 'loading' });
  React.useEffect(() => {
    let live = true;
    getMe(props.settings)
      .then(me => live && setState({ kind: 'ready', me }))
      .catch((reason: Error) =>
        live && setState({ kind: 'error', message: reason.message })
      );
    return () => {
      live = false;
    };
  }, [props.settings]);

  if (state.kind === 'loading') {
    return <p className="jp-hubgrid-loading">Loading…</p>;
  }
  if (state.kind === 'error') {
    return (
      <p className="jp-hubgrid-error" role="alert">
        {state.message}
      </p>
    );
  }
  const { me } = state;
  return (
    <dl className="jp-hubgrid-identity" aria-label="hubgrid identity">
      <dt>User</dt>
      <dd data-field="name">{me.name}</dd>
      <dt>Domain</dt>
      <dd data-field="domain">{me.domain}</dd>
      <dt>Role</dt>
      <dd data-field="role">{me.role}</dd>
    </dl>
  );
}

/** The hubgrid panel of the left sidebar. */
export class HubgridPanel extends ReactWidget {
  constructor(private readonly _settings: ServerConnection.ISettings) {
    super();
    this.id = 'jp-hubgrid-panel';
    this.addClass('jp-hubgrid-panel');
    this.title.icon = hubgridIcon;
    this.title.caption = 'hubgrid';
  }

  protected render(): JSX.Element {
    return (
      <>
        <h2>hubgrid</h2>
        <IdentityView settings={this._settings} />
      </>
    );
  }
}
