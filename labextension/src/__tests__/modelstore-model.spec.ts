import {
  byField,
  deployBody,
  deployField,
  problemsOf,
  publishBody,
  scopeText,
  search,
  slotsText,
  titleOf
} from '../modelstore/model';
import { IStoreModel } from '../modelstore/types';
import { ProblemsError, refusalView } from '../problems';

function entry(over: Partial<IStoreModel> = {}, card: Partial<IStoreModel['card']> = {}): IStoreModel {
  return {
    id: 'a'.repeat(32),
    name: 'echo',
    domain: null,
    folder: { id: 'f', name: 'echo', available: true },
    image: 'hubgrid/inference:latest',
    slots: { cpu: '0.5', mem: '268435456' },
    card: {
      model: 'echo-chat',
      title: 'Echo chat (stand-in)',
      author: 'hubgrid',
      version: '1.0',
      description: 'Answers with the prompt',
      task: 'text-generation',
      category: 'stand-in',
      license: 'BSD-3-Clause',
      label: ['chat', 'cpu'],
      framework: ['python'],
      min_resource: { cpu: '0.5', mem: '256M' },
      ...card
    },
    published_by: 'root',
    published_at: '2026-11-27T09:00:00+00:00',
    updated_at: '2026-11-27T09:00:00+00:00',
    can_manage: false,
    ...over
  };
}

describe('a card', () => {
  it('shows the title of the metadata, else the entry name', () => {
    expect(titleOf(entry())).toBe('Echo chat (stand-in)');
    expect(titleOf(entry({}, { title: null }))).toBe('echo');
    expect(titleOf(entry({}, { title: '  ' }))).toBe('echo');
  });

  it('shows one replica exactly, memory in binary units', () => {
    expect(slotsText({ mem: '268435456', cpu: '0.5' })).toBe('cpu 0.5 · mem 256 MiB');
    expect(slotsText({ 'gpu.shares': '0.25' })).toBe('gpu.shares 0.25');
    expect(slotsText({})).toBe('none');
  });

  it('says where it is published', () => {
    expect(scopeText(entry())).toBe('every domain');
    expect(scopeText(entry({ domain: 'acme' }))).toBe('domain acme');
  });
});

describe('the search', () => {
  const echo = entry();
  const emb = entry({ id: 'b'.repeat(32), name: 'minilm' }, {
    title: 'all-MiniLM-L6-v2', task: 'feature-extraction', label: ['embeddings'], description: null
  });
  it('keeps the models holding every word, in title, task or labels', () => {
    expect(search([echo, emb], '')).toEqual([echo, emb]);
    expect(search([echo, emb], 'EMBEDDINGS')).toEqual([emb]);
    expect(search([echo, emb], 'chat cpu')).toEqual([echo]);
    expect(search([echo, emb], 'chat embeddings')).toEqual([]);
    expect(search([echo, emb], 'feature')).toEqual([emb]);
  });
});

describe('the deploy form', () => {
  const good = { project: 'ml', resource_group: 'serve', replicas: '2', name: '' };
  it('reads into a body, the name only when given', () => {
    expect(deployBody(good)).toEqual({ project: 'ml', resource_group: 'serve', replicas: 2 });
    expect(deployBody({ ...good, name: ' my-echo ' })).toEqual({
      project: 'ml', resource_group: 'serve', replicas: 2, name: 'my-echo'
    });
  });

  it('refuses each bad field before anything is sent', () => {
    const bad = deployBody({ project: '', resource_group: '', replicas: '0', name: 'Bad Name' });
    expect('problems' in bad && bad.problems.map(p => p.field)).toEqual([
      'project', 'resource_group', 'replicas', 'name'
    ]);
    for (const replicas of ['65', '1.5', '-1', 'x', '']) {
      const r = deployBody({ ...good, replicas });
      expect('problems' in r && r.problems[0].field).toBe('replicas');
    }
  });

  it('puts a check problem at its field: the size of a replica at Replicas', () => {
    expect(deployField('project')).toBe('project');
    expect(deployField('resource_group')).toBe('resource_group');
    expect(deployField('name')).toBe('name');
    expect(deployField('replicas')).toBe('replicas');
    expect(deployField('slots.cpu')).toBe('replicas');
    expect(deployField('slots')).toBe('replicas');
    expect(deployField('image')).toBe('other');
    expect(deployField('model_folder')).toBe('other');
    const grouped = byField([
      { field: 'slots.cpu', message: 'a' }, { field: 'replicas', message: 'b' }, { field: 'image', message: 'c' }
    ]);
    expect(grouped.get('replicas')?.map(p => p.message)).toEqual(['a', 'b']);
    expect(grouped.get('other')?.map(p => p.message)).toEqual(['c']);
    expect(grouped.get('project')).toBeUndefined();
  });

  it('reads the problems of a refusal, nothing else', () => {
    expect(problemsOf({ detail: [{ field: 'name', message: 'taken' }, 'x', { message: 'no field' }] }))
      .toEqual([{ field: 'name', message: 'taken' }]);
    expect(problemsOf({ detail: ['acme/ml/echo'] })).toEqual([]);
    expect(problemsOf(null)).toEqual([]);
  });
});

describe('the publish form', () => {
  const form = { folder: 'f1', image: 'hubgrid/inference:latest', domain: '', name: '', cpu: '', mem: '' };
  it('leaves the slots to the definition when none are given', () => {
    expect(publishBody(form)).toEqual({ folder: 'f1', image: 'hubgrid/inference:latest' });
    expect(publishBody({ ...form, domain: 'acme', name: 'echo' })).toEqual({
      folder: 'f1', image: 'hubgrid/inference:latest', domain: 'acme', name: 'echo'
    });
  });

  it('reads CPU and memory exactly', () => {
    expect(publishBody({ ...form, cpu: '0.5', mem: '1.5G' })).toEqual({
      folder: 'f1', image: 'hubgrid/inference:latest', slots: { cpu: '0.5', mem: '1610612736' }
    });
  });

  it('refuses each bad field', () => {
    const r = publishBody({ folder: '', image: '', domain: '', name: 'No', cpu: '0', mem: 'lots' });
    expect('problems' in r && r.problems.map(p => p.field)).toEqual([
      'folder', 'image', 'name', 'slots.cpu', 'slots.mem'
    ]);
    const half = publishBody({ ...form, cpu: '1' });
    expect('problems' in half && half.problems.map(p => p.field)).toEqual(['slots']);
  });
});

describe("a refusal, as the Deploy and Publish forms show it", () => {
  it('shows its problems at their fields and no message above them', () => {
    const refused = new ProblemsError('2 problems', 400, [{ field: 'replicas', message: 'over by 1' }]);
    expect(refusalView(refused)).toEqual({ problems: [{ field: 'replicas', message: 'over by 1' }], message: '' });
  });

  it('shows the message of one with no problems, or of any other failure', () => {
    expect(refusalView(new ProblemsError('not published', 404))).toEqual({ problems: [], message: 'not published' });
    expect(refusalView(new Error('cannot reach this Jupyter server'))).toEqual({
      problems: [], message: 'cannot reach this Jupyter server'
    });
  });
});
