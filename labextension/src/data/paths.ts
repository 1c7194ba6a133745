/**
 * Paths inside a folder as the files API takes them: relative to the
 * folder's root, '/' between names, '' for the root (docs/vfolders.md,
 * "Paths"). The service checks every path; these helpers only build them
 * and catch the obvious mistakes before a round trip.
 */

/** `dir/name` ('' is the root). */
export function joinPath(dir: string, name: string): string {
  const d = dir.replace(/\/+$/, '');
  return d ? `${d}/${name}` : name;
}

/** The directory holding `path` ('' for a name in the root). */
export function parentPath(path: string): string {
  const p = path.replace(/\/+$/, '');
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
}

/** The last name of `path`. */
export function baseName(path: string): string {
  const p = path.replace(/\/+$/, '');
  return p.slice(p.lastIndexOf('/') + 1);
}

export interface ICrumb {
  name: string;
  path: string;
}

/** The folder's root, then each directory down to `path`. */
export function breadcrumbs(folderName: string, path: string): ICrumb[] {
  const crumbs: ICrumb[] = [{ name: folderName, path: '' }];
  let at = '';
  for (const name of path.split('/').filter(n => n.length > 0)) {
    at = joinPath(at, name);
    crumbs.push({ name, path: at });
  }
  return crumbs;
}

// control characters (C0, DEL, C1), line/paragraph separators, bidi controls
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c]/u;

/**
 * Why `name` cannot be one file or folder name, or null. The service
 * decides (it also refuses look-alikes of '/' and '.'); this catches what
 * a person types by mistake.
 */
export function nameProblem(name: string): string | null {
  if (name.length === 0) {
    return 'a name cannot be empty';
  }
  if (name.trim() !== name) {
    return 'a name cannot start or end with a space';
  }
  if (name === '.' || name === '..') {
    return `${name} cannot be a name`;
  }
  if (name.includes('/') || name.includes('\\')) {
    return 'a name cannot contain / or \\';
  }
  const bad = FORBIDDEN.exec(name);
  if (bad) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase();
    return `a name cannot contain U+${code.padStart(4, '0')}`;
  }
  return null;
}

/**
 * A path for a query string, wholly percent-encoded ('/' too: URL joining
 * must never read `..` in a query as a step up).
 */
export function encodePath(path: string): string {
  return encodeURIComponent(path);
}
