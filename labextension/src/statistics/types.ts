/**
 * `GET usage` as the service answers it (docs/operations.md, "Usage
 * accounting"). Hours are exact decimal strings ("16.500000"): shown as
 * they come, never added up as floats.
 */

/** The figures of a period, a group or a day. */
export interface IUsageFigures {
  sessions: number;
  running: number;
  session_hours: string;
  core_hours: string;
  mem_gib_hours: string;
  gpu_hours: string;
  gpu_share_hours: string;
  gpu_device_hours: string;
  seconds: string;
  slot_seconds: { [slot: string]: string };
}

/** One day of a series (a UTC day, `YYYY-MM-DD`). */
export interface IUsageDay extends IUsageFigures {
  day: string;
}

/** A group: its key fields (domain, user, project, resource_group) and figures. */
export interface IUsageGroup extends IUsageFigures {
  domain?: string;
  user?: string;
  project?: string;
  resource_group?: string;
  /** the days it has sessions in (with series=daily) */
  series?: IUsageDay[];
}

export type Grouping = 'user' | 'project' | 'domain' | 'resource_group';

export interface IUsageReport {
  start: string;
  end: string;
  as_of: string;
  by: Grouping;
  series_interval: 'day' | null;
  filters: { domain: string | null; user: string | null };
  units: { [figure: string]: string };
  total: IUsageFigures;
  groups: IUsageGroup[];
  /** every day of the period, zeros included (with series=daily) */
  series?: IUsageDay[];
}

/** The figures a plot or a column can show (the hours are decimal strings). */
export type Figure =
  | 'sessions'
  | 'running'
  | 'session_hours'
  | 'core_hours'
  | 'mem_gib_hours'
  | 'gpu_hours'
  | 'gpu_share_hours'
  | 'gpu_device_hours';
