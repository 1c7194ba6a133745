import {
  byField,
  changeNote,
  createBody,
  EMPTY_FORM,
  eventText,
  expiryDays,
  formField,
  gatewayUrls,
  healthText,
  hubBase,
  IForm,
  inferenceGroups,
  inferenceImages,
  modelFolders,
  modelName,
  probeText,
  problemsOf,
  replicaRows,
  scaleTo,
  slotsText,
  stateText,
  timeText,
  tokenText
} from '../serving/model';
import { IEndpoint, IHealth, IReplica } from '../serving/types';

function endpoint(over: Partial<IEndpoint> = {}): IEndpoint {
  return {
    id: 'e1', name: 'chat', domain: 'acme', project: 'ml', resource_group: 'serve',
    image: 'hubgrid/inference:latest', model_folder: { id: 'f1', name: 'echo' },
    slots: { cpu: '0.5', mem: '536870912' }, replicas: 2, running_replicas: 1,
    replicas_detail: [], public: false, state: 'degraded', state_reason: null,
    created_by: 'bob', created_at: '2026-11-27T09:00:00+00:00', autoscaling: [], scaling_events: [],
    ...over
  };
}

const form: IForm = {
  ...EMPTY_FORM, name: 'chat', project: 'ml', resource_group: 'serve',
  image: 'hubgrid/inference:latest', model_folder: 'f1', cpu: '0.5', mem: '512M', replicas: '2'
};

describe('the create body', () => {
  it('keeps every amount an exact string and leaves empty or zero slots out', () => {
    expect(createBody({ ...form, gpu: '0', gpu_shares: '' })).toEqual({
      body: {
        name: 'chat', project: 'ml', resource_group: 'serve', image: 'hubgrid/inference:latest',
        model_folder: 'f1', slots: { cpu: '0.5', mem: '512M' }, replicas: 2
      }
    });
    const made = createBody({ ...form, cpu: '0.1', gpu_shares: '0.3', mem: '1 G' });
    expect('body' in made && made.body.slots).toEqual({ cpu: '0.1', 'gpu.shares': '0.3', mem: '1G' });
  });

  it('says each field it cannot read, at its field', () => {
    const made = createBody({ ...form, name: ' ', cpu: '1,5', mem: 'lots', gpu: '1.5', replicas: '65' });
    expect('problems' in made && made.problems.map(p => p.field)).toEqual(
      ['name', 'slots.cpu', 'slots.mem', 'slots.gpu', 'replicas']);
  });

  it('refuses whole GPUs together with a share, and a replica of no resources', () => {
    const both = createBody({ ...form, gpu: '1', gpu_shares: '0.5' });
    expect('problems' in both && both.problems).toEqual(
      [{ field: 'slots.gpu.shares', message: 'whole GPUs or a share of one, not both' }]);
    const none = createBody({ ...form, cpu: '', mem: '0' });
    expect('problems' in none && none.problems.map(p => p.field)).toEqual(['slots']);
  });

  it('puts the service\'s problems at the form fields they name', () => {
    expect(formField('slots.gpu.shares')).toBe('gpu_shares');
    expect(formField('model-definition.yaml:models[0].service.port')).toBe('model_folder');
    expect(formField('public')).toBe('other');
    const at = byField([{ field: 'image', message: 'a' }, { field: 'slots', message: 'b' },
                        { field: 'image', message: 'c' }]);
    expect(at.get('image')?.map(p => p.message)).toEqual(['a', 'c']);
    expect(at.get('other')?.map(p => p.message)).toEqual(['b']);
  });

  it('reads a refused create\'s problems from its detail, and nothing from other bodies', () => {
    expect(problemsOf({ message: 'x', detail: [{ field: 'name', message: 'taken' }, 'junk'] }))
      .toEqual([{ field: 'name', message: 'taken' }]);
    expect(problemsOf({ message: 'x', detail: ['body: unknown field'] })).toEqual([]);
    expect(problemsOf(null)).toEqual([]);
  });

  it('offers only images and groups that run inference sessions', () => {
    expect(inferenceImages([{ name: 'hubgrid/base:latest' }, { name: 'inf', session_types: ['inference'] },
                            { name: 'old', session_types: ['interactive'] }])).toEqual(['inf']);
    expect(modelFolders([{ id: 'a', name: 'echo', status: 'active' }, { id: 'b', name: 'old', status: 'trashed' }]))
      .toEqual([{ id: 'a', name: 'echo' }]);
    expect(inferenceGroups([{ name: 'dock', session_types: ['interactive', 'batch'] },
                            { name: 'serve', session_types: ['inference'] }])).toEqual(['serve']);
  });
});

describe('an endpoint as the page shows it', () => {
  it('says its state with the reason, and its health with what is up', () => {
    expect(stateText(endpoint({ state: 'failed', state_reason: 'image missing' }))).toBe('failed: image missing');
    expect(stateText(endpoint({ state: 'running' }))).toBe('running');
    const h: IHealth = { status: 'degraded', reachable: true, replicas_wanted: 2, replicas_up: 1, replicas: [] };
    expect(healthText(h)).toBe('degraded (reachable): 1 of 2 up');
    expect(healthText({ ...h, status: 'down', replicas_up: 0, reachable: false })).toBe('down (not reachable): 0 of 2 up');
    expect(healthText({ ...h, status: 'unknown', replicas_up: null, replicas_wanted: null, reachable: null }))
      .toBe('unknown');
    expect(healthText(undefined)).toBe('unknown');
    // none asked for: nothing to count
    expect(healthText({ ...h, status: 'unknown', replicas_up: 0, replicas_wanted: 0, reachable: null })).toBe('unknown');
  });

  it('gives its gateway URLs under the hub\'s base', () => {
    expect(hubBase('/hub/')).toBe('/');
    expect(hubBase('/jh/hub/')).toBe('/jh/');
    expect(gatewayUrls('https://h.example', '/jh/hub/', 'abc')).toEqual({
      endpoint: 'https://h.example/jh/services/hubgrid-gateway/e/abc/',
      openai: 'https://h.example/jh/services/hubgrid-gateway/v1'
    });
  });

  it('names its model as the gateway does: the name, else project/name, else domain/project/name', () => {
    const a = endpoint();
    expect(modelName(a, [a, endpoint({ id: 'e2', name: 'emb' })])).toBe('chat');
    const b = endpoint({ id: 'e2', project: 'cv' });
    expect(modelName(a, [a, b])).toBe('ml/chat');
    const c = endpoint({ id: 'e3', domain: 'other' });
    expect(modelName(a, [a, c])).toBe('acme/ml/chat');
  });

  it('shows slots exactly', () => {
    expect(slotsText({ mem: '536870912', cpu: '0.50', 'gpu.shares': '0.3' })).toBe(
      'cpu 0.5, gpu.shares 0.3, mem 512 MiB');
  });

  it('joins each replica with its probe, and lists a routed replica the service no longer lists', () => {
    const detail: IReplica[] = [
      { name: 'r1', state: 'serving', node: 'serve-a', allocation: 'a1', started_at: null, serving_since: null, reason: '' },
      { name: 'r2', state: 'serving', node: 'serve-a', allocation: 'a2', started_at: null, serving_since: null, reason: '' },
      { name: 'r3', state: 'starting', node: null, allocation: 'a3', started_at: null, serving_since: null, reason: '' }
    ];
    const health: IHealth = {
      status: 'degraded', reachable: true, replicas_wanted: 3, replicas_up: 1, replicas: [
        { name: 'r1', up: true, status: 'UP', check: 'L7OK', detail: '', history: [
          { at: 't1', up: false, status: 'DOWN', check: 'L4CON', detail: '' },
          { at: 't2', up: true, status: 'UP', check: 'L7OK', detail: '' }] },
        { name: 'r0', up: false, status: 'DOWN', check: 'L4CON', detail: 'Connection refused' }
      ]
    };
    const rows = replicaRows(detail, health);
    expect(rows.map(r => [r.name, r.probe, r.history.length])).toEqual([
      ['r1', 'up (L7OK: probe passed)', 2], ['r2', 'not probed yet', 0], ['r3', 'not routed', 0],
      ['r0', 'down (L4CON: connection refused)', 0]
    ]);
    expect(rows[3].allocation).toBeNull();
    expect(replicaRows(detail, undefined).map(r => r.probe)).toEqual(['not probed yet', 'not probed yet', 'not routed']);
  });

  it('says a scaling event with its change and repeats', () => {
    expect(eventText({ at: 't', outcome: 'clamped', reason: 'a step of +2 clamped to max_replicas 3',
                       replicas_before: 2, replicas_after: 3 }))
      .toBe('clamped 2 → 3: a step of +2 clamped to max_replicas 3');
    expect(eventText({ at: 't', outcome: 'cooldown', reason: 'in cooldown until x', count: 4, last_at: 'u' }))
      .toBe('cooldown: in cooldown until x (4 times, last u)');
  });
});

describe('tokens, scale and who may change it', () => {
  it('says a token\'s state and end', () => {
    const t = { id: 't', endpoint: 'e1', created_by: 'bob', created_at: 'c', expires_at: 'x', revoked_at: null };
    expect(tokenText({ ...t, state: 'active' })).toBe('active, expires x');
    expect(tokenText({ ...t, state: 'expired' })).toBe('expired x');
    expect(tokenText({ ...t, state: 'revoked', revoked_at: 'r' })).toBe('revoked r');
  });

  it('takes whole days and replica counts only, in bounds', () => {
    expect(expiryDays('30')).toBe(30);
    expect(expiryDays('0')).toMatch(/^expiry:/);
    expect(expiryDays('1.5')).toMatch(/^expiry:/);
    expect(expiryDays('91', 90)).toMatch(/from 1 to 90/);
    expect(scaleTo(' 0 ')).toBe(0);
    expect(scaleTo('65')).toMatch(/^replicas:/);
    expect(scaleTo('-1')).toMatch(/^replicas:/);
  });

  it('notes beforehand that only its creator or an admin of its domain may change it', () => {
    const e = endpoint();
    expect(changeNote({ name: 'bob', role: 'user', domain: 'acme' }, e)).toBe('');
    expect(changeNote({ name: 'carol', role: 'domain-admin', domain: 'acme' }, e)).toBe('');
    expect(changeNote({ name: 'root', role: 'superadmin', domain: 'default' }, e)).toBe('');
    expect(changeNote({ name: 'dave', role: 'domain-admin', domain: 'other' }, e)).toMatch(/creator \(bob\)/);
    expect(changeNote({ name: 'alice', role: 'user', domain: 'acme' }, e))
      .toBe("only its creator (bob) or an admin of domain 'acme' may scale, change or delete it");
  });
});

describe('times and probes in words', () => {
  it('writes the service times to the second, in UTC, and other text as it is', () => {
    expect(timeText('2026-12-04T10:10:10.131345+00:00')).toBe('2026-12-04 10:10:10 UTC');
    expect(timeText('2026-12-04T10:10:10Z')).toBe('2026-12-04 10:10:10 UTC');
    expect(timeText('soon')).toBe('soon');
    const t = { id: 't', endpoint: 'e1', created_by: 'bob', created_at: 'c', revoked_at: null,
      expires_at: '2026-12-04T10:10:10.5+00:00' };
    expect(tokenText({ ...t, state: 'active' })).toBe('active, expires 2026-12-04 10:10:10 UTC');
  });
  it("says haproxy's checks in words, keeping the code", () => {
    expect(probeText({ up: false, check: 'HANA', detail: 'Health analyze' })).toBe(
      'down (HANA: a call to it failed)');
    expect(probeText({ up: true, check: 'INI', detail: 'Initializing' })).toBe('up (INI: not probed yet)');
    expect(probeText({ up: false, check: 'XYZ', detail: 'something new' })).toBe('down (XYZ: something new)');
  });
});
