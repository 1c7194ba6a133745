import { imageChange, imageForm, nameAndTag, scanLines, textToPorts } from '../admin/ops/images';
import { filterSessions, NO_FILTERS, sessionRow, sessionsQuery } from '../admin/ops/sessions';
import { IAllocation, IImage } from '../admin/ops/types';

const img: IImage = {
  name: 'registry:5000/hubgrid/base:2.1',
  min_slots: { cpu: '1' },
  service_ports: [{ name: 'jupyterlab', protocol: 'http', path: 'lab' }],
  domains: []
};

describe('images', () => {
  it('splits name and tag, keeping a registry port', () => {
    expect(nameAndTag(img.name)).toEqual({ name: 'registry:5000/hubgrid/base', tag: '2.1' });
    expect(nameAndTag('registry:5000/base')).toEqual({ name: 'registry:5000/base', tag: '' });
  });

  it('sends only what changed', () => {
    const form = imageForm(img);
    expect(form).toEqual({ minSlots: 'cpu=1', ports: 'jupyterlab:http:lab', domains: '' });
    expect(imageChange(img, form)).toEqual({});
    expect(imageChange(img, { ...form, domains: 'acme, globex' })).toEqual({ domains: ['acme', 'globex'] });
    expect(imageChange(img, { ...form, minSlots: 'cpu=2, mem=1G' })).toEqual({
      min_slots: { cpu: '2', mem: '1073741824' }
    });
    expect(imageForm({ ...img, min_slots: { mem: '1610612736' } }).minSlots).toBe('mem=1.5 GiB');
    expect(() => imageChange(img, { ...form, minSlots: 'mem=0.5' })).toThrow('whole number of bytes');
    expect(() => imageChange(img, { ...form, minSlots: 'cpu' })).toThrow('slot=amount');
    expect(textToPorts('t:http:lab/terminals/1')).toEqual([
      { name: 't', protocol: 'http', path: 'lab/terminals/1' }
    ]);
  });

  it('lists a scan result', () => {
    expect(
      scanLines({
        hosts: [
          { url: 'unix:///a', ok: true, images: 2 },
          { url: 'tcp://b', ok: false, error: 'refused' }
        ],
        added: ['x:1'],
        updated: [],
        unchanged: ['y:1'],
        skipped: [{ name: 'z', reason: 'labels differ' }]
      })
    ).toEqual([
      '2 host(s): added 1, updated 0, unchanged 1, skipped 1',
      'unix:///a: 2 image(s)',
      'tcp://b: failed: refused',
      'added x:1',
      'skipped z: labels differ'
    ]);
  });
});

const alloc = (over: Partial<IAllocation>): IAllocation =>
  ({
    id: 'abcdef0123',
    user: 'alice',
    domain: 'acme',
    project: 'ml',
    resource_group: 'g',
    session_type: 'interactive',
    slots: { cpu: '0.1' },
    state: 'allocated',
    node: 'n1',
    gpus: [{ index: 0, share: '0.3' }],
    reasons: [],
    created_at: 't0',
    admitted_at: 't1',
    released_at: null,
    release_reason: null,
    origin: 'api',
    image: null,
    server_name: '',
    command: null,
    apps: [],
    exit_code: null,
    ended_at: null,
    ...over
  }) as IAllocation;

describe('sessions (all)', () => {
  it('puts state and user in the query, the rest filters the answer', () => {
    expect(sessionsQuery(NO_FILTERS)).toBe('state=allocated');
    expect(sessionsQuery({ ...NO_FILTERS, state: 'all', user: ' bob ' })).toBe('user=bob&limit=500');
    expect(sessionsQuery({ ...NO_FILTERS, state: 'released' })).toBe('state=released&limit=500');
    expect(sessionsQuery({ ...NO_FILTERS, state: 'pending' })).toBe('state=pending');
    const list = [alloc({}), alloc({ id: 'x', domain: 'globex', node: 'n2' })];
    expect(filterSessions(list, { ...NO_FILTERS, domain: 'globex' }).map(a => a.id)).toEqual(['x']);
    expect(filterSessions(list, { ...NO_FILTERS, node: 'n1' }).map(a => a.id)).toEqual(['abcdef0123']);
  });

  it('shows a row with exact resources', () => {
    const row = sessionRow(alloc({ slots: { cpu: '0.1', 'gpu.shares': '0.3' } }));
    expect(row).toMatchObject({
      name: 'abcdef01',
      owner: 'alice',
      project: 'acme/ml',
      node: 'n1',
      resources: 'CPU 0.1, GPU shares 0.3',
      gpus: '#0: 0.3',
      started: 't1'
    });
  });
});
