/**
 * One endpoint on the Serving page: its state and health, URLs, replicas
 * with their state, node, probe and probe history (and each one's log),
 * tokens (made with an expiry, the secret shown once with a copy button,
 * revoked), scale, its autoscaling rules and scaling events (Autoscaling), delete (with
 * a confirmation). A refusal shows the service's message (a 403 says who
 * may). Every text is rendered as text.
 */

import { Clipboard } from '@jupyterlab/apputils';
import * as React from 'react';

import { ServingApi } from './api';
import { Autoscaling } from './Autoscaling';
import { IGatewayInfo, labOpenAIBase, openaiSnippet } from './callsnippet';
import {
  changeNote,
  expiryDays,
  gatewayUrls,
  healthText,
  probeText,
  replicaRows,
  replicasText,
  scaleTo,
  slotsText,
  stateText,
  timeText,
  tokenText
} from './model';
import { IEndpoint, IToken } from './types';

interface IProps {
  api: ServingApi;
  endpoint: IEndpoint;
  model: string;
  tokens: IToken[];
  me: { name: string; role: string; domain: string };
  origin: string;
  hubPrefix: string;
  /** where this Lab's server (and its notebooks) reach the gateway */
  gateway: IGatewayInfo | null;
  onChanged: () => void;
  onDeleted: () => void;
  onLog: (allocation: string) => void;
}

export function EndpointDetail(props: IProps): JSX.Element {
  const e = props.endpoint;
  const [replicas, setReplicas] = React.useState(String(e.replicas));
  const [days, setDays] = React.useState('30');
  const [secret, setSecret] = React.useState<IToken | null>(null);
  const [confirm, setConfirm] = React.useState(false);
  const [error, setError] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const urls = gatewayUrls(props.origin, props.hubPrefix, e.id);
  const labBase = labOpenAIBase(props.gateway);
  const snippet = labBase ? openaiSnippet(labBase, props.model, props.gateway?.token_variable ?? null) : '';
  const note = changeNote(props.me, e);
  const rows = replicaRows(e.replicas_detail, e.health);

  const act = async (what: () => Promise<void>): Promise<void> => {
    setBusy(true);
    setError('');
    try {
      await what();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const scale = () => act(async () => {
    const n = scaleTo(replicas);
    if (typeof n === 'string') {
      throw new Error(n);
    }
    await props.api.scale(e.id, n);
    props.onChanged();
  });
  const makeToken = () => act(async () => {
    const d = expiryDays(days);
    if (typeof d === 'string') {
      throw new Error(d);
    }
    setSecret(await props.api.createToken(e.id, d));
    props.onChanged();
  });
  const revoke = (t: IToken) => act(async () => {
    await props.api.revokeToken(e.id, t.id);
    props.onChanged();
  });
  const remove = () => act(async () => {
    setConfirm(false);
    await props.api.remove(e.id);
    props.onDeleted();
  });

  return (
    <section className="jp-hubgrid-serving-detail" data-endpoint={e.name} aria-label={`endpoint ${e.name}`}>
      <h3>{e.project}/{e.name}</h3>
      <dl className="jp-hubgrid-serving-facts">
        <dt>State</dt><dd data-field="state">{stateText(e)}</dd>
        <dt>Health</dt><dd data-field="health">{healthText(e.health)}</dd>
        <dt>Replicas</dt><dd data-field="replicas">{replicasText(e)} serving</dd>
        <dt>Model</dt><dd data-field="model">{props.model}</dd>
        <dt>URL</dt><dd data-field="url"><code>{urls.endpoint}</code></dd>
        {labBase && (
          <>
            <dt>OpenAI base URL from this Lab</dt>
            <dd data-field="openai-lab"><code>{labBase}</code> (its notebooks and terminals)</dd>
          </>
        )}
        <dt>OpenAI base URL from elsewhere</dt>
        <dd data-field="openai"><code>{urls.openai}</code> (where this browser reaches the hub)</dd>
        <dt>Image</dt><dd>{e.image}</dd>
        <dt>Model folder</dt><dd>{e.model_folder.name ?? e.model_folder.id}</dd>
        <dt>One replica</dt><dd>{slotsText(e.slots)}</dd>
        <dt>Created by</dt><dd>{e.created_by}</dd>
      </dl>
      {snippet && (
        <div className="jp-hubgrid-serving-snippet">
          <p>
            Call it from a notebook of this Lab:{' '}
            <button className="jp-mod-styled" onClick={() => Clipboard.copyToSystem(snippet)}>Copy code</button>
          </p>
          <pre data-field="snippet">{snippet}</pre>
        </div>
      )}
      {note && <p className="jp-hubgrid-note" data-field="may-change">Note: {note}.</p>}
      {error && <p className="jp-hubgrid-error" role="alert">{error}</p>}

      <h4>Replicas</h4>
      <table className="jp-hubgrid-serving-replicas">
        <thead><tr><th>Replica</th><th>State</th><th>Node</th><th>Probe</th><th>Probe history</th><th /></tr></thead>
        <tbody>
          {rows.map(r => (
            <tr key={r.name} data-replica={r.name}>
              <td>{r.name}</td>
              <td data-field="state">{r.state}{r.reason ? `: ${r.reason}` : ''}</td>
              <td>{r.node}</td>
              <td data-field="probe">{r.probe}</td>
              <td data-field="history">
                {r.history.slice(-5).map((h, i) => (
                  <div key={i}>{timeText(h.at)}: {probeText(h)}</div>
                ))}
              </td>
              <td>
                {r.allocation && (
                  <button className="jp-mod-styled" onClick={() => props.onLog(r.allocation!)}>Log</button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {!rows.length && <p className="jp-hubgrid-note">No replica runs.</p>}

      <h4>Scale</h4>
      <form className="jp-hubgrid-serving-actions" onSubmit={ev => { ev.preventDefault(); void scale(); }}>
        <label>
          Replicas{' '}
          <input className="jp-mod-styled" aria-label="Replicas wanted" value={replicas}
            onChange={ev => setReplicas(ev.target.value)} size={4} />
        </label>
        <button type="submit" className="jp-mod-styled" disabled={busy}>Scale</button>
      </form>

      <h4>Tokens</h4>
      {secret?.token && (
        <div className="jp-hubgrid-serving-secret" role="status">
          <p>The new token (shown only now: copy it):</p>
          <code data-field="secret">{secret.token}</code>{' '}
          <button className="jp-mod-styled" onClick={() => Clipboard.copyToSystem(secret.token!)}>Copy</button>{' '}
          <button className="jp-mod-styled" onClick={() => setSecret(null)}>Done</button>
        </div>
      )}
      <table className="jp-hubgrid-serving-tokens">
        <thead><tr><th>Token</th><th>Made by</th><th>State</th><th /></tr></thead>
        <tbody>
          {props.tokens.map(t => (
            <tr key={t.id} data-token={t.id} data-state={t.state}>
              <td>{t.id.slice(0, 8)}</td>
              <td>{t.created_by}</td>
              <td data-field="state">{tokenText(t)}</td>
              <td>
                {t.state === 'active' && (
                  <button className="jp-mod-styled" disabled={busy} onClick={() => void revoke(t)}>Revoke</button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="jp-hubgrid-serving-actions" onSubmit={ev => { ev.preventDefault(); void makeToken(); }}>
        <label>
          Expires in (days){' '}
          <input className="jp-mod-styled" aria-label="Expires in days" value={days}
            onChange={ev => setDays(ev.target.value)} size={4} />
        </label>
        <button type="submit" className="jp-mod-styled" disabled={busy}>New token</button>
      </form>

      <h4>Autoscaling</h4>
      <Autoscaling endpoint={e} busy={busy} onRules={async rules => {
        await props.api.autoscale(e.id, rules);
        props.onChanged();
      }} />

      <h4>Delete</h4>
      {confirm ? (
        <div className="jp-hubgrid-serving-actions" role="alertdialog" aria-label="Confirm delete">
          <span>Delete {e.name}, its replicas and its tokens?</span>
          <button className="jp-mod-styled jp-mod-warn" disabled={busy} onClick={() => void remove()}>
            Delete it
          </button>
          <button className="jp-mod-styled" onClick={() => setConfirm(false)}>Keep it</button>
        </div>
      ) : (
        <button className="jp-mod-styled jp-mod-warn" onClick={() => setConfirm(true)}>Delete…</button>
      )}
    </section>
  );
}
