/** Exact per-slot bars of a domain or project (totalsBars): used, then pending. */

import * as React from 'react';

import { IFigures, totalsBars } from './model';

export function Bars(props: { figures: IFigures; level: string; name: string }): JSX.Element {
  const f = props.figures;
  const bars = totalsBars(f);
  return (
    <div className="jp-hubgrid-admin-bars" data-level={props.level} data-name={props.name}>
      <div className="jp-hubgrid-admin-sessions">
        {`${f.sessions} running, ${f.pending_sessions} pending`}
      </div>
      {bars.length === 0 && <div className="jp-hubgrid-admin-hint">no limits and nothing held</div>}
      {bars.map(b => (
        <div
          key={b.slot}
          className={`jp-hubgrid-admin-bar-row${b.over ? ' jp-mod-over' : ''}${b.limit === null ? ' jp-mod-unlimited' : ''}`}
          data-slot={b.slot}
          data-used={b.used}
          data-limit={b.limit ?? ''}
          data-pending={b.pending}
        >
          <span className="jp-hubgrid-admin-bar-label">{b.label}</span>
          <span className="jp-hubgrid-admin-bar" title={b.text}>
            <span className="jp-hubgrid-admin-bar-used" style={{ width: `${b.usedPercent}%` }} />
            <span className="jp-hubgrid-admin-bar-pending" style={{ width: `${b.pendingPercent}%` }} />
          </span>
          <span className="jp-hubgrid-admin-bar-text">
            {b.text}
            {b.pending !== '0' ? ` (+${b.pending} pending)` : ''}
          </span>
        </div>
      ))}
    </div>
  );
}
