/**
 * "My sessions changed": the Sessions menu says so (a start, a stop, or a
 * poll that saw a change) and the Summary reads again at once.
 */

type Listener = () => void;

const listeners = new Set<Listener>();

/** Call `listener` on each change; returns what stops it. */
export function onSessionsChanged(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function announceSessionsChanged(): void {
  listeners.forEach(listener => listener());
}
