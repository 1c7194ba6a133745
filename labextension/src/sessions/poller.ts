/**
 * A poll that backs off while nothing changes and pauses while nobody looks
 * (the tab hidden, or the panel closed): @lumino/polling's Poll, its
 * interval set after each tick by `nextInterval`, errors backing off too.
 */

import { Poll } from '@lumino/polling';

import { nextInterval } from './model';

export interface IIdlePollOptions {
  name: string;
  /** one tick: resolves to whether anything changed and whether to stay quick */
  tick: () => Promise<{ quiet: boolean; busy: boolean }>;
  /** true while nobody looks (the panel hidden): the poll stands by */
  hidden: () => boolean;
  base?: number;
  max?: number;
}

export class IdlePoll {
  constructor(private readonly options: IIdlePollOptions) {
    this.base = options.base ?? 3000;
    this.max = options.max ?? 60000;
    this.poll = new Poll({
      name: options.name,
      auto: true,
      factory: () => this.tick(),
      frequency: { interval: this.base, backoff: true, max: this.max },
      standby: () => document.hidden || options.hidden()
    });
  }

  /** Poll now (after an action, or when the panel is shown again), quick again. */
  refresh(): Promise<void> {
    this.setInterval(this.base);
    return this.poll.refresh();
  }

  dispose(): void {
    this.poll.dispose();
  }

  get interval(): number {
    return this.poll.frequency.interval;
  }

  private async tick(): Promise<void> {
    const { quiet, busy } = await this.options.tick();
    this.setInterval(nextInterval(this.interval, quiet, busy, this.base, this.max));
  }

  private setInterval(interval: number): void {
    this.poll.frequency = { interval, backoff: true, max: this.max };
  }

  private readonly base: number;
  private readonly max: number;
  private readonly poll: Poll;
}
