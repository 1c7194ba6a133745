/**
 * The service's refusals as the Serving and Model Store pages show them: a
 * call to the hubgrid API through this Jupyter server's extension that
 * throws a `ProblemsError` (the service's message, its HTTP status, and the
 * per-field problems of a check, `detail: [{field, message}]`), and the
 * problems grouped by the form field they are shown at.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** One problem (or warning) of a check, at its field. */
export interface IProblem {
  field: string;
  message: string;
}

/** A refusal: the service's message, its HTTP status (0: no answer), its problems. */
export class ProblemsError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly problems: IProblem[] = []
  ) {
    super(message);
  }
}

/** The problems out of a refusal's body (`detail`: a list of {field, message}). */
export function problemsOf(body: unknown): IProblem[] {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (!Array.isArray(detail)) {
    return [];
  }
  return detail
    .filter(d => d && typeof d === 'object' && typeof (d as IProblem).field === 'string')
    .map(d => ({ field: String((d as IProblem).field), message: String((d as IProblem).message ?? '') }));
}

/** ``problems`` grouped by the form field ``keyOf`` puts each at. */
export function groupProblems<K>(problems: readonly IProblem[], keyOf: (field: string) => K): Map<K, IProblem[]> {
  const out = new Map<K, IProblem[]>();
  for (const p of problems) {
    const key = keyOf(p.field);
    out.set(key, [...(out.get(key) ?? []), p]);
  }
  return out;
}

/** A JSON call to the hubgrid API (``hubgrid/api/<path>``); ProblemsError when refused. */
export async function callApi<T>(
  settings: ServerConnection.ISettings,
  path: string,
  method = 'GET',
  body?: unknown
): Promise<T> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(URLExt.join(settings.baseUrl, 'hubgrid/api/', path), init, settings);
  } catch (error) {
    throw new ProblemsError(`cannot reach this Jupyter server: ${String(error)}`, 0);
  }
  const text = await response.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = (data as { message?: string } | null)?.message || text.slice(0, 500) || response.statusText;
    throw new ProblemsError(String(message), response.status, problemsOf(data));
  }
  return data as T;
}

/**
 * A failed call as a form shows it: a refusal's problems at their fields
 * and no message above them, or, with none (any other failure), its
 * message.
 */
export function refusalView(error: unknown): { problems: IProblem[]; message: string } {
  const problems = error instanceof ProblemsError ? error.problems : [];
  return { problems, message: problems.length ? '' : (error as Error).message };
}
