/**
 * Autoscaling rules on the Serving page, pure: a rule for people, and the
 * rule form's body (exact strings and whole numbers, as `PATCH
 * endpoints/{id}` takes `autoscaling`; docs/serving.md, Autoscaling) or
 * what the page says before asking. The service checks again.
 */

import { IRule } from './types';

export const METRICS: ReadonlyArray<{ value: IRule['metric']; label: string }> = [
  { value: 'requests_per_second', label: 'requests per second per replica' },
  { value: 'in_flight', label: 'calls in flight per replica' }
];

export const COMPARATORS: ReadonlyArray<{ value: IRule['comparator']; label: string }> = [
  { value: 'gt', label: '>' },
  { value: 'ge', label: '≥' },
  { value: 'lt', label: '<' },
  { value: 'le', label: '≤' }
];

/** "in_flight > 4: +1 replica(s), within 1 to 4, cooldown 300 s" */
export function ruleText(r: IRule): string {
  const cmp = COMPARATORS.find(c => c.value === r.comparator)?.label ?? r.comparator;
  const step = r.step > 0 ? `+${r.step}` : String(r.step);
  return `${r.metric} ${cmp} ${r.threshold}: ${step} replica(s), within ${r.min_replicas} to ${r.max_replicas}, cooldown ${r.cooldown} s`;
}

/** The rule form's fields, as typed. */
export interface IRuleForm {
  metric: IRule['metric'];
  comparator: IRule['comparator'];
  threshold: string;
  step: string;
  min_replicas: string;
  max_replicas: string;
  cooldown: string;
}

export const EMPTY_RULE: IRuleForm = {
  metric: 'in_flight',
  comparator: 'gt',
  threshold: '4',
  step: '1',
  min_replicas: '1',
  max_replicas: '4',
  cooldown: '300'
};

const THRESHOLD = /^[0-9]{1,9}(\.[0-9]{1,3})?$/;
const INTEGER = /^-?\d+$/;

function whole(text: string, low: number, high: number): number | null {
  const t = text.trim();
  return INTEGER.test(t) && Number(t) >= low && Number(t) <= high ? Number(t) : null;
}

/** The rule of the form, or what is wrong with it (field: message). */
export function ruleOf(form: IRuleForm): IRule | string {
  const threshold = form.threshold.trim();
  if (!THRESHOLD.test(threshold)) {
    return 'threshold: a decimal of at most 3 places (e.g. 4 or 0.5)';
  }
  const step = whole(form.step, -64, 64);
  if (step === null || step === 0) {
    return 'step: a whole number from -64 to 64, not 0 (negative removes replicas)';
  }
  const min = whole(form.min_replicas, 0, 64);
  const max = whole(form.max_replicas, 0, 64);
  if (min === null || max === null) {
    return 'min_replicas, max_replicas: whole numbers from 0 to 64';
  }
  if (min > max) {
    return `min_replicas: ${min} is more than max_replicas ${max}`;
  }
  const cooldown = whole(form.cooldown, 0, 86400);
  if (cooldown === null) {
    return 'cooldown: whole seconds from 0 to 86400';
  }
  return {
    metric: form.metric, comparator: form.comparator, threshold, step,
    cooldown, min_replicas: min, max_replicas: max
  };
}

/** The rules after adding `rule` (at most 8), or why not. */
export function withRule(rules: readonly IRule[], rule: IRule): IRule[] | string {
  return rules.length >= 8 ? 'an endpoint has at most 8 rules' : [...rules, rule];
}

/** The rules without the one at `index`. */
export function withoutRule(rules: readonly IRule[], index: number): IRule[] {
  return rules.filter((_, i) => i !== index);
}
