/**
 * What a session's views in the main area (its detail, its log) share: the
 * session is read at once, then again by a poll (@lumino/polling) that
 * backs off after failures and stands by while the browser tab is hidden,
 * while the session no longer runs or waits, or while the view says so
 * (`paused`); a failed read's message is kept in `error` for the view to
 * show, and every read ends with a render.
 */

import { ReactWidget } from '@jupyterlab/ui-components';
import { Poll } from '@lumino/polling';

import { IAllocation } from '../summary/types';
import { HubgridApi } from './api';
import { ACTIVE } from './model';

export interface ISessionPollOptions {
  /** names the poll: `hubgrid:<kind>:<session id>` */
  kind: string;
  /** milliseconds between reads, and the most a backoff waits */
  interval: number;
  max: number;
}

export abstract class SessionPollView extends ReactWidget {
  constructor(
    protected readonly api: HubgridApi,
    protected session: IAllocation,
    options: ISessionPollOptions
  ) {
    super();
    this.poll = new Poll({
      name: `hubgrid:${options.kind}:${session.id}`,
      factory: () => this.load(),
      frequency: { interval: options.interval, backoff: true, max: options.max },
      standby: () => document.hidden || this.paused() || !ACTIVE.includes(this.session.state),
      auto: false
    });
  }

  /**
   * The first read, also when the session ended (the poll stands by), then
   * the poll goes on from it. Called by the view's constructor once its own
   * fields are set (they are not yet while this class's constructor runs).
   */
  protected begin(): void {
    this.load()
      .catch(() => undefined) // the error is shown
      .finally(() => void this.poll.start());
  }

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  /** One read (`read`), its failure kept in `error`, then a render. */
  protected async load(): Promise<void> {
    try {
      if ((await this.read()) !== false) {
        this.error = '';
      }
    } catch (e) {
      this.error = (e as Error).message;
      throw e;
    } finally {
      this.update();
    }
  }

  /** Read the session and what the view shows of it; false: this read took nothing (another went on meanwhile). */
  protected abstract read(): Promise<boolean | void>;

  /** true while the view needs no reads (besides a hidden tab or an ended session) */
  protected abstract paused(): boolean;

  protected readonly poll: Poll;
  protected error = '';
}
