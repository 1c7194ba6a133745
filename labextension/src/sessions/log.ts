/**
 * A session's log as data (pure): terminal escapes taken out, the lines
 * that match a search, and a file name to download it under.
 */

// CSI sequences (colours, cursor moves), OSC sequences (titles, links), and
// the other two-character escapes
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
// control characters other than tab and newline (a carriage return ends a line)
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

/** The log as plain text: escapes removed, \r\n as \n, other controls dropped. */
export function plainLog(text: string): string {
  return text.replace(ANSI, '').replace(/\r\n?/g, '\n').replace(CONTROL, '');
}

export interface ILogLine {
  /** 1-based line number in the whole log */
  n: number;
  text: string;
  /** [start, end) of each match in text */
  matches: Array<[number, number]>;
}

export interface ILogView {
  lines: ILogLine[];
  /** matching lines (all lines when there is no query) */
  shown: number;
  total: number;
  /** matches over the whole log */
  matchCount: number;
}

/**
 * The lines to show: every line, or with a query (case-insensitive, plain
 * text, no regular expression) only those that contain it, with where.
 */
export function searchLog(text: string, query: string): ILogView {
  const all = text.length ? text.replace(/\n$/, '').split('\n') : [];
  const q = query.toLowerCase();
  const lines: ILogLine[] = [];
  let matchCount = 0;
  all.forEach((line, i) => {
    if (!q) {
      lines.push({ n: i + 1, text: line, matches: [] });
      return;
    }
    const lower = line.toLowerCase();
    const matches: Array<[number, number]> = [];
    for (let at = lower.indexOf(q); at >= 0; at = lower.indexOf(q, at + q.length)) {
      matches.push([at, at + q.length]);
    }
    if (matches.length) {
      matchCount += matches.length;
      lines.push({ n: i + 1, text: line, matches });
    }
  });
  return { lines, shown: lines.length, total: all.length, matchCount };
}

/** Pieces of a line: plain text and matched text, in order (for rendering as text). */
export function pieces(line: ILogLine): Array<{ text: string; match: boolean }> {
  const out: Array<{ text: string; match: boolean }> = [];
  let at = 0;
  for (const [start, end] of line.matches) {
    if (start > at) {
      out.push({ text: line.text.slice(at, start), match: false });
    }
    out.push({ text: line.text.slice(start, end), match: true });
    at = end;
  }
  if (at < line.text.length || out.length === 0) {
    out.push({ text: line.text.slice(at), match: false });
  }
  return out;
}

/** A file name for the downloaded log: "<session>-<short id>.log", safe characters only. */
export function logFileName(name: string, id: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '') || 'session';
  return `${safe}-${id.slice(0, 8)}.log`;
}
