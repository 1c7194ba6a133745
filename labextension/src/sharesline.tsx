/**
 * A node's GPU sharing line (gpushares.ts's wording) as a paragraph: the
 * Summary's and the admin GPU maps and a session's detail show it; a state
 * other than enforced stands out (jp-mod-not-enforced / jp-mod-refused).
 * Rendered as text only.
 */

import * as React from 'react';

import { ISharesLine } from './gpushares';

export function SharesLine(props: { line: ISharesLine | null }): JSX.Element | null {
  const { line } = props;
  if (!line) {
    return null;
  }
  return (
    <p className={`jp-hubgrid-shares jp-mod-${line.state}`} data-field="shares"
      data-state={line.state} data-mode={line.mode}>
      {line.text}
    </p>
  );
}
