import { IUsageDay, IUsageFigures, IUsageGroup, IUsageReport } from '../statistics/types';

/** Figures with everything zero but what `over` says. */
export function figures(over: Partial<IUsageFigures> = {}): IUsageFigures {
  return {
    sessions: 0,
    running: 0,
    session_hours: '0.000000',
    core_hours: '0.000000',
    mem_gib_hours: '0.000000',
    gpu_hours: '0.000000',
    gpu_share_hours: '0.000000',
    gpu_device_hours: '0.000000',
    seconds: '0',
    slot_seconds: {},
    ...over
  };
}

export function day(d: string, over: Partial<IUsageFigures> = {}): IUsageDay {
  return { day: d, ...figures(over) };
}

/** The docs' example (docs/operations.md): alice and bob of acme over 2 days, by user. */
export function docsReport(): IUsageReport {
  const alice: IUsageGroup = {
    domain: 'acme',
    user: 'alice',
    ...figures({
      sessions: 2, running: 1, session_hours: '16.500000', core_hours: '42.000000',
      mem_gib_hours: '168.000000', gpu_hours: '4.500000', gpu_share_hours: '6.000000',
      gpu_device_hours: '10.500000', seconds: '59400'
    }),
    series: [
      day('2026-11-23', { sessions: 2, running: 1, core_hours: '22.000000', gpu_device_hours: '5.500000' }),
      day('2026-11-24', { sessions: 1, running: 1, core_hours: '20.000000', gpu_device_hours: '5.000000' })
    ]
  };
  const bob: IUsageGroup = {
    domain: 'acme',
    user: 'bob',
    ...figures({ sessions: 1, session_hours: '2.000000', core_hours: '1.000000', mem_gib_hours: '2.000000' }),
    series: [day('2026-11-24', { sessions: 1, core_hours: '1.000000' })]
  };
  return {
    start: '2026-11-23T00:00:00+00:00',
    end: '2026-11-25T00:00:00+00:00',
    as_of: '2026-11-24T10:00:00+00:00',
    by: 'user',
    series_interval: 'day',
    filters: { domain: 'acme', user: null },
    units: { core_hours: 'CPU cores x hours', gpu_device_hours: 'gpu_hours + gpu_share_hours' },
    total: figures({
      sessions: 3, running: 1, session_hours: '18.500000', core_hours: '43.000000',
      mem_gib_hours: '170.000000', gpu_hours: '4.500000', gpu_share_hours: '6.000000',
      gpu_device_hours: '10.500000', seconds: '66600'
    }),
    groups: [alice, bob],
    series: [
      day('2026-11-23', { sessions: 2, running: 1, core_hours: '22.000000', gpu_device_hours: '5.500000' }),
      day('2026-11-24', { sessions: 2, running: 1, core_hours: '21.000000', gpu_device_hours: '5.000000' })
    ]
  };
}
