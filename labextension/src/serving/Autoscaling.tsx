/**
 * An endpoint's autoscaling on the Serving page: its rules (each with
 * Remove), a form to add one (what the page cannot read is said before
 * any call; the service's refusal is shown as it says it), and its
 * scaling events, newest first. Every text is rendered as text.
 */

import * as React from 'react';

import { eventText, timeText } from './model';
import { COMPARATORS, EMPTY_RULE, IRuleForm, METRICS, ruleOf, ruleText, withoutRule, withRule } from './rules';
import { IEndpoint, IRule } from './types';

interface IProps {
  endpoint: IEndpoint;
  busy: boolean;
  /** PATCH the rules; throws with the service's message */
  onRules: (rules: IRule[]) => Promise<void>;
}

export function Autoscaling(props: IProps): JSX.Element {
  const e = props.endpoint;
  const [form, setForm] = React.useState<IRuleForm>(EMPTY_RULE);
  const [error, setError] = React.useState('');
  const set = (field: keyof IRuleForm) => (ev: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setForm({ ...form, [field]: ev.target.value });
  const save = async (rules: IRule[] | string): Promise<void> => {
    if (typeof rules === 'string') {
      setError(rules);
      return;
    }
    setError('');
    try {
      await props.onRules(rules);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const add = (): Promise<void> => {
    const rule = ruleOf(form);
    return save(typeof rule === 'string' ? rule : withRule(e.autoscaling, rule));
  };
  const number = (field: keyof IRuleForm, label: string): JSX.Element => (
    <label>
      {label}{' '}
      <input className="jp-mod-styled" aria-label={label} value={form[field]} size={5} onChange={set(field)} />
    </label>
  );

  return (
    <div className="jp-hubgrid-serving-autoscaling">
      <ul className="jp-hubgrid-serving-rules">
        {e.autoscaling.map((r, i) => (
          <li key={i} data-rule={i}>
            {ruleText(r)}{' '}
            <button className="jp-mod-styled" disabled={props.busy}
              onClick={() => void save(withoutRule(e.autoscaling, i))}>Remove</button>
          </li>
        ))}
      </ul>
      {!e.autoscaling.length && <p className="jp-hubgrid-note">No rule: the replicas stay as asked for.</p>}
      <form className="jp-hubgrid-serving-actions" aria-label="New rule"
        onSubmit={ev => { ev.preventDefault(); void add(); }}>
        <select className="jp-mod-styled" aria-label="Metric" value={form.metric} onChange={set('metric')}>
          {METRICS.map(m => <option key={m.value} value={m.value}>{m.label}</option>)}
        </select>
        <select className="jp-mod-styled" aria-label="Comparator" value={form.comparator} onChange={set('comparator')}>
          {COMPARATORS.map(c => <option key={c.value} value={c.value}>{c.label}</option>)}
        </select>
        {number('threshold', 'Threshold')}
        {number('step', 'Step')}
        {number('min_replicas', 'Min replicas')}
        {number('max_replicas', 'Max replicas')}
        {number('cooldown', 'Cooldown (s)')}
        <button type="submit" className="jp-mod-styled" disabled={props.busy}>Add rule</button>
      </form>
      {error && <p className="jp-hubgrid-error" role="alert" data-field="rules-error">{error}</p>}
      {e.scaling_events.length > 0 && (
        <ul className="jp-hubgrid-serving-events" aria-label="Scaling events">
          {e.scaling_events.slice().reverse().map((ev, i) => (
            <li key={i}>{timeText(ev.at)}: {eventText(ev)}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
