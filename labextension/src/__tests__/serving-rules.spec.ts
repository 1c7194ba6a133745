import { EMPTY_RULE, ruleOf, ruleText, withoutRule, withRule } from '../serving/rules';
import { IRule } from '../serving/types';

const rule: IRule = {
  metric: 'in_flight', comparator: 'gt', threshold: '4', step: 1, cooldown: 300, min_replicas: 1, max_replicas: 4
};

describe('autoscaling rules', () => {
  it('reads the form into a rule of exact threshold and whole numbers', () => {
    expect(ruleOf(EMPTY_RULE)).toEqual(rule);
    expect(ruleOf({ ...EMPTY_RULE, metric: 'requests_per_second', comparator: 'le', threshold: ' 0.125 ',
                    step: '-2', min_replicas: '0', cooldown: '0' }))
      .toEqual({ metric: 'requests_per_second', comparator: 'le', threshold: '0.125', step: -2, cooldown: 0,
                 min_replicas: 0, max_replicas: 4 });
  });

  it('says what it cannot read, one field at a time', () => {
    expect(ruleOf({ ...EMPTY_RULE, threshold: '0.1234' })).toMatch(/^threshold:/);
    expect(ruleOf({ ...EMPTY_RULE, threshold: '-1' })).toMatch(/^threshold:/);
    expect(ruleOf({ ...EMPTY_RULE, step: '0' })).toMatch(/^step:/);
    expect(ruleOf({ ...EMPTY_RULE, step: '65' })).toMatch(/^step:/);
    expect(ruleOf({ ...EMPTY_RULE, step: '1.5' })).toMatch(/^step:/);
    expect(ruleOf({ ...EMPTY_RULE, max_replicas: '65' })).toMatch(/^min_replicas, max_replicas:/);
    expect(ruleOf({ ...EMPTY_RULE, min_replicas: '3', max_replicas: '2' }))
      .toBe('min_replicas: 3 is more than max_replicas 2');
    expect(ruleOf({ ...EMPTY_RULE, cooldown: '86401' })).toMatch(/^cooldown:/);
  });

  it('adds up to 8 rules and removes one by its place', () => {
    const eight = Array(8).fill(rule);
    expect(withRule(eight, rule)).toBe('an endpoint has at most 8 rules');
    expect(withRule([rule], { ...rule, step: -1 })).toEqual([rule, { ...rule, step: -1 }]);
    expect(withoutRule([rule, { ...rule, step: -1 }], 0)).toEqual([{ ...rule, step: -1 }]);
  });

  it('says a rule for people', () => {
    expect(ruleText(rule)).toBe('in_flight > 4: +1 replica(s), within 1 to 4, cooldown 300 s');
    expect(ruleText({ ...rule, comparator: 'le', step: -2 })).toBe(
      'in_flight ≤ 4: -2 replica(s), within 1 to 4, cooldown 300 s');
  });
});
