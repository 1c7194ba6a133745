/** Query strings of the admin pages' listings (pure). */

/** `path?k=v&...` with the non-empty values only, in the given order. */
export function withQuery(path: string, params: Array<[string, string | number | null | undefined]>): string {
  const parts = params
    .filter(([, v]) => v !== null && v !== undefined && String(v).trim() !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v).trim())}`);
  return parts.length ? `${path}?${parts.join('&')}` : path;
}

/** Split "a; b, c" into names (empty parts dropped). */
export function nameList(text: string): string[] {
  return text
    .split(/[;,\n]/)
    .map(s => s.trim())
    .filter(s => s.length > 0);
}
