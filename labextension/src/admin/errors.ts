/**
 * The service's refusals as the admin pages show them: `{"status", "reason",
 * "message", "detail"?}`; a 422's `detail` lists "field: problem" strings
 * (pydantic's location joined by dots), shown next to their field.
 */

/** A refusal of the service (or of the network), kept whole. */
export class AdminError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly detail: string[] = []
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

/** The error of a non-2xx answer from its status and body text. */
export function errorFromBody(status: number, statusText: string, text: string): AdminError {
  let message = text.slice(0, 500) || statusText || `HTTP ${status}`;
  let detail: string[] = [];
  try {
    const body = JSON.parse(text);
    if (body && typeof body.message === 'string') {
      message = body.message;
    }
    if (body && Array.isArray(body.detail)) {
      detail = body.detail.filter((d: unknown) => typeof d === 'string');
    }
  } catch {
    // not JSON: keep the text itself
  }
  return new AdminError(status, message, detail);
}

/** Each problem of a 422 under its top-level field ("body" when none). */
export function fieldErrors(error: unknown): { [field: string]: string } {
  const out: { [field: string]: string } = {};
  if (!(error instanceof AdminError) || error.status !== 422) {
    return out;
  }
  const problems = error.detail.length ? error.detail : [error.message];
  for (const problem of problems) {
    const m = /^([A-Za-z_][\w.-]*): (.*)$/s.exec(problem);
    const field = m ? m[1].split('.')[0] : 'body';
    const text = m ? problem : problem;
    out[field] = out[field] ? `${out[field]}; ${text}` : text;
  }
  return out;
}

/** One line for a dialog or the page's error bar: "403 Forbidden: message". */
export function describeError(error: unknown): string {
  if (error instanceof AdminError) {
    return error.status ? `${error.status}: ${error.message}` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
