/**
 * The Statistics page's controls: whose usage (admins), the period (presets
 * or a from-to range of UTC days), the grouping, read again, the CSV.
 */

import { refreshIcon, ToolbarButtonComponent } from '@jupyterlab/ui-components';
import * as React from 'react';

import { PeriodChoice, PRESETS } from './period';
import { GROUPING_LABELS, groupingsFor, ICaller, Scope, scopesFor } from './query';
import { Grouping } from './types';

export interface IControls {
  me: ICaller;
  choice: PeriodChoice;
  draft: { from: string; to: string };
  scope: Scope;
  by: Grouping;
  busy: boolean;
  onPreset: (value: string) => void;
  onDraft: (draft: { from: string; to: string }) => void;
  onApplyRange: () => void;
  onScope: (scope: Scope) => void;
  onBy: (by: Grouping) => void;
  onRefresh: () => void;
  onCsv: () => void;
}

export function Controls(props: IControls): JSX.Element {
  const { me, choice, draft, scope, by } = props;
  const scopes = scopesFor(me);
  const preset = choice.kind === 'last' ? String(choice.days) : 'range';
  return (
    <div className="jp-hubgrid-stats-controls">
      {scopes.length > 1 ? (
        <label>
          Show{' '}
          <select className="jp-mod-styled" aria-label="Whose usage" value={scope}
            onChange={e => props.onScope(e.target.value as Scope)}>
            {scopes.map(s => (
              <option key={s.scope} value={s.scope}>{s.label}</option>
            ))}
          </select>
        </label>
      ) : (
        <span className="jp-hubgrid-stats-scope">My usage</span>
      )}
      <label>
        Period{' '}
        <select className="jp-mod-styled" aria-label="Period" value={preset}
          onChange={e => props.onPreset(e.target.value)}>
          {PRESETS.map(p => (
            <option key={p.days} value={String(p.days)}>{p.label}</option>
          ))}
          <option value="range">From … to …</option>
        </select>
      </label>
      {choice.kind === 'range' && (
        <form className="jp-hubgrid-stats-range"
          onSubmit={e => { e.preventDefault(); props.onApplyRange(); }}>
          <input type="date" className="jp-mod-styled" aria-label="From (UTC day)" value={draft.from}
            onChange={e => props.onDraft({ ...draft, from: e.target.value })} />
          {' to '}
          <input type="date" className="jp-mod-styled" aria-label="To (UTC day, included)" value={draft.to}
            onChange={e => props.onDraft({ ...draft, to: e.target.value })} />
          <button type="submit" className="jp-mod-styled jp-mod-accept">Show</button>
        </form>
      )}
      <label>
        Group by{' '}
        <select className="jp-mod-styled" aria-label="Group by" value={by}
          onChange={e => props.onBy(e.target.value as Grouping)}>
          {groupingsFor(me).map(g => (
            <option key={g} value={g}>{GROUPING_LABELS[g]}</option>
          ))}
        </select>
      </label>
      <ToolbarButtonComponent icon={refreshIcon} tooltip="Read again" onClick={props.onRefresh} />
      <button className="jp-mod-styled jp-hubgrid-stats-csv" onClick={props.onCsv} disabled={props.busy}>
        Download CSV
      </button>
    </div>
  );
}
