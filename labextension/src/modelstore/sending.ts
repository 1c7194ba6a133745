/**
 * What the Model Store's forms (Deploy, Publish) share when they send: the
 * form's own problems stop it before any call; while the call runs the
 * form is busy; a refusal's problems are shown at their fields, any other
 * failure's message above the button (`refusalView`).
 */

import * as React from 'react';

import { IProblem, refusalView } from '../problems';

export interface ISending {
  /** the problems shown at the fields (the form's own, a refusal's, a check's) */
  problems: IProblem[];
  setProblems: (problems: IProblem[]) => void;
  /** a failure's message, when it had no problems to show at fields */
  error: string;
  busy: boolean;
  /** Check `body` (the form's own problems stop it), then `call` with the form busy. */
  send: <B extends object>(body: B | { problems: IProblem[] }, call: (body: B) => Promise<void>) => Promise<void>;
}

/** A body builder's answer that is the form's own problems (`deployBody`, `publishBody`). */
function ownProblems<B extends object>(body: B | { problems: IProblem[] }): body is { problems: IProblem[] } {
  return 'problems' in body;
}

export function useSending(): ISending {
  const [problems, setProblems] = React.useState<IProblem[]>([]);
  const [error, setError] = React.useState('');
  const [busy, setBusy] = React.useState(false);

  const send = async <B extends object>(
    body: B | { problems: IProblem[] },
    call: (body: B) => Promise<void>
  ): Promise<void> => {
    setError('');
    if (ownProblems(body)) {
      setProblems(body.problems);
      return;
    }
    setBusy(true);
    try {
      await call(body);
    } catch (e) {
      const shown = refusalView(e);
      setProblems(shown.problems);
      setError(shown.message);
    } finally {
      setBusy(false);
    }
  };
  return { problems, setProblems, error, busy, send };
}
