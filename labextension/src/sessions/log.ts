/**
 * A session's log as data (pure): what the view holds as it follows the
 * log (each read goes on from the position where the last one ended),
 * terminal escapes taken out, the lines that match a search, and a file
 * name to download it under.
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

/** A read of the log: its text and where it begins and ends (bytes of all the session's output). */
export interface ILogPart {
  text: string;
  start: number;
  end: number;
}

/** What the log view holds: the newest output read so far (raw: escapes are taken out when shown). */
export interface ILogBuffer {
  raw: string;
  /** where the next read goes on */
  end: number;
  /** whole lines cut from its front to keep it within its size (the numbering goes on) */
  cutLines: number;
}

/** The line shown where output was dropped before this view could read it. */
export function gapLine(bytes: number): string {
  return `[hubgrid: ${bytes} bytes of output were dropped here: the service keeps the newest part of a long log]\n`;
}

/**
 * The buffer after a read: `part` follows on (it was asked from `asked`,
 * null for the first read); a start past `asked` means output was dropped
 * in between, and a line says how much. Past `max` characters, whole lines
 * are cut from the front.
 */
export function withPart(buffer: ILogBuffer | null, part: ILogPart, asked: number | null, max: number): ILogBuffer {
  let raw = buffer?.raw ?? '';
  if (asked !== null && part.start > asked) {
    raw += (raw && !raw.endsWith('\n') ? '\n' : '') + gapLine(part.start - asked);
  }
  raw += part.text;
  let cutLines = buffer?.cutLines ?? 0;
  if (raw.length > max) {
    const newline = raw.indexOf('\n', raw.length - max);
    const cut = newline < 0 ? raw.length - max : newline + 1;
    cutLines += plainLog(raw.slice(0, cut)).split('\n').length - 1;
    raw = raw.slice(cut);
  }
  return { raw, end: part.end, cutLines };
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
 * text, no regular expression) only those that contain it, with where;
 * numbered from `firstLine` + 1.
 */
export function searchLog(text: string, query: string, firstLine = 0): ILogView {
  const all = text.length ? text.replace(/\n$/, '').split('\n') : [];
  const q = query.toLowerCase();
  const lines: ILogLine[] = [];
  let matchCount = 0;
  all.forEach((line, i) => {
    if (!q) {
      lines.push({ n: firstLine + i + 1, text: line, matches: [] });
      return;
    }
    const lower = line.toLowerCase();
    const matches: Array<[number, number]> = [];
    for (let at = lower.indexOf(q); at >= 0; at = lower.indexOf(q, at + q.length)) {
      matches.push([at, at + q.length]);
    }
    if (matches.length) {
      matchCount += matches.length;
      lines.push({ n: firstLine + i + 1, text: line, matches });
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
