import { mountCandidates, planMounts } from '../data/mounts';
import { alice, projectFolder, userFolder } from './data-fixtures';

const ml = { domain: 'acme', name: 'ml' };

describe('which folders mount into my next session', () => {
  it('mounts every dot-folder I may mount, by name, and nothing else unasked', () => {
    const folders = [
      userFolder('.zsh', 'alice', 'wd', { id: 'own-zsh' }),
      userFolder('data', 'alice', 'wd', { id: 'own-data' }),
      projectFolder('.datasets', 'ml', 'ro', { id: 'ml-datasets' }),
      projectFolder('.web-assets', 'web', 'rw', { id: 'web-assets' }), // another project
      userFolder('.bobs', 'bob', 'rw', { id: 'bob-shared' })
    ];
    const plan = planMounts(mountCandidates(folders, alice, ml));
    expect(plan.mounts).toEqual([
      { folder: 'bob-shared', name: '.bobs', mode: 'rw', kind: 'shared', auto: true },
      { folder: 'ml-datasets', name: '.datasets', mode: 'ro', kind: 'project', auto: true },
      { folder: 'own-zsh', name: '.zsh', mode: 'rw', kind: 'own', auto: true }
    ]);
    expect(plan.problems).toEqual([]);
  });

  it('my own dot-folder wins a name, then the project one, then a shared one', () => {
    const folders = [
      userFolder('.cfg', 'bob', 'ro', { id: 'c-shared' }),
      projectFolder('.cfg', 'ml', 'rw', { id: 'b-project' }),
      userFolder('.cfg', 'alice', 'wd', { id: 'a-own' }),
      projectFolder('.tools', 'ml', 'rw', { id: 'tools-project' }),
      userFolder('.tools', 'carol', 'rw', { id: 'tools-shared' })
    ];
    const plan = planMounts(mountCandidates(folders, alice, ml));
    expect(plan.mounts.map(m => [m.name, m.folder])).toEqual([
      ['.cfg', 'a-own'],
      ['.tools', 'tools-project']
    ]);
    expect(plan.skipped.map(s => s.folder).sort()).toEqual(['b-project', 'c-shared', 'tools-shared']);
  });

  it('never mounts a trashed folder, and says so when one is asked for', () => {
    const folders = [
      userFolder('.old', 'alice', 'wd', { id: 'old', status: 'trashed' }),
      userFolder('data', 'alice', 'wd', { id: 'data' })
    ];
    const plan = planMounts(mountCandidates(folders, alice, ml), ['old', 'data', 'nope']);
    expect(plan.mounts.map(m => m.folder)).toEqual(['data']);
    expect(plan.mounts[0].auto).toBe(false);
    expect(plan.problems).toEqual([
      'old is in the trash: restore it to mount it',
      'no folder nope you may mount in this project'
    ]);
  });

  it('a requested folder takes its name from an auto one; ambiguity is a problem', () => {
    const folders = [
      userFolder('.cfg', 'alice', 'wd', { id: 'own' }),
      projectFolder('.cfg', 'ml', 'rw', { id: 'proj' }),
      userFolder('x', 'alice', 'wd', { id: 'x1' }),
      userFolder('x', 'bob', 'ro', { id: 'x2' })
    ];
    const plan = planMounts(mountCandidates(folders, alice, ml), ['proj', 'x']);
    expect(plan.mounts.map(m => [m.folder, m.auto])).toEqual([['proj', false]]);
    expect(plan.skipped.map(s => s.folder)).toEqual(['own']);
    expect(plan.problems).toEqual(['x names 2 folders: pick one by its id']);
  });

  it("mounts read-only what I may only read: a project's ro, a ro share", () => {
    const folders = [
      projectFolder('.p', 'ml', 'ro', { id: 'p', permission: 'ro' }),
      userFolder('.s', 'bob', 'ro', { id: 's' })
    ];
    const plan = planMounts(mountCandidates(folders, alice, ml));
    expect(plan.mounts.map(m => m.mode)).toEqual(['ro', 'ro']);
  });

  it("an admin's view of others' folders is no share: only accepted invitations count", () => {
    const admin = { ...alice, role: 'domain-admin' };
    const folders = [
      userFolder('.bobs', 'bob', 'wd', { id: 'seen-as-admin' }),
      userFolder('.carols', 'carol', 'wd', { id: 'shared-with-me' }),
      projectFolder('.p', 'ml', 'ro', { id: 'p', permission: 'wd' })
    ];
    const plan = planMounts(mountCandidates(folders, admin, ml, new Set(['shared-with-me'])));
    expect(plan.mounts.map(m => [m.folder, m.mode])).toEqual([
      ['shared-with-me', 'rw'],
      ['p', 'ro'] // the members' permission, not the admin's wd
    ]);
  });
});
