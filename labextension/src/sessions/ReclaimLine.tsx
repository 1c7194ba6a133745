/**
 * A running session's reclaim on its row: the live countdown to the
 * announced reclaim (the row carries the deadline as
 * data-reclaim-deadline), the rule and the service's reason, how far it was
 * kept, and "Keep" while the policy allows one more. Rendered as text.
 */

import { ToolbarButtonComponent } from '@jupyterlab/ui-components';
import * as React from 'react';

import { IReclaimRow, ruleLabel } from './reclaim';

export function ReclaimLine(props: { reclaim: IReclaimRow; onKeep: () => void }): JSX.Element {
  const r = props.reclaim;
  return (
    <div className={`jp-hubgrid-reclaim${r.deadline ? ' jp-mod-warn' : ''}`} data-field="reclaim"
      role={r.deadline ? 'status' : undefined}>
      {r.deadline && (
        <div className="jp-hubgrid-reclaim-head">
          <span className="jp-hubgrid-reclaim-countdown" data-field="countdown">{r.countdown}</span>
          <span className="jp-hubgrid-reclaim-rule" data-field="rule">({ruleLabel(r.rule)})</span>
          {r.canKeep && (
            <ToolbarButtonComponent className="jp-hubgrid-keep" label="Keep" tooltip={r.keepTip}
              onClick={props.onKeep} />
          )}
        </div>
      )}
      {r.deadline && <div className="jp-hubgrid-reclaim-reason" data-field="reclaim-reason">{r.reason}</div>}
      {r.kept && <div className="jp-hubgrid-reclaim-kept" data-field="kept">{r.kept}</div>}
    </div>
  );
}
