import {
  fillFraction,
  folderKind,
  folderTable,
  PERMISSION_LEGEND,
  foldersText,
  sortRows,
  storageUse,
  useText
} from '../data/folders';
import { alice, projectFolder, userFolder } from './data-fixtures';

const policy = { name: 'default', max_vfolder_count: 5, max_vfolder_size: 4096 };

describe('the folder table', () => {
  const folders = [
    userFolder('mine', 'alice', 'wd', { usage_bytes: 1024 }),
    userFolder('old', 'alice', 'wd', { status: 'trashed', usage_bytes: 2048 }),
    projectFolder('shared-data', 'ml', 'rw', { usage_bytes: 100 }),
    userFolder('bobs', 'bob', 'ro', { usage_bytes: 7 })
  ];

  it('tells mine, my projects and shared with me apart', () => {
    expect(folders.map(f => folderKind(f, alice))).toEqual([
      'mine',
      'mine',
      'project',
      'shared'
    ]);
  });

  it('shows active folders, and the trash apart', () => {
    const active = folderTable(folders, alice, policy, 'active');
    expect(active.map(r => [r.name, r.typeLabel])).toEqual([
      ['mine', 'mine'],
      ['shared-data', 'project ml'],
      ['bobs', 'shared by bob']
    ]);
    const trash = folderTable(folders, alice, policy, 'trashed');
    expect(trash.map(r => r.name)).toEqual(['old']);
  });

  it('counts trashed folders against my quota, as the service does', () => {
    const use = storageUse(folders, alice, policy);
    expect(use.get('user:alice')).toMatchObject({
      folders: 2,
      maxFolders: 5,
      bytes: 3072,
      maxBytes: 4096,
      complete: true
    });
    // a member does not see a project's trashed folders: the count may be short
    expect(use.get('project:acme/ml')).toMatchObject({
      folders: 1,
      bytes: 100,
      maxBytes: 1000,
      complete: false
    });
    // someone else's folder is not my quota
    expect([...use.keys()]).toEqual(['user:alice', 'project:acme/ml', 'project:acme/web']);
  });

  it('shows each row against its owner quota, none for a shared folder', () => {
    const rows = folderTable(folders, alice, policy, 'active');
    const [mine, project, shared] = rows;
    expect(mine.fill).toBeCloseTo(0.75);
    expect(project.fill).toBeCloseTo(0.1);
    expect(shared.quota).toBeNull();
    expect(shared.fill).toBeNull();
  });

  it('offers only what my permission allows', () => {
    const rows = folderTable(folders, alice, policy, 'active');
    const by: Record<string, (typeof rows)[0]> = {};
    rows.forEach(r => (by[r.name] = r));
    expect(by['mine']).toMatchObject({ canManage: true, canWrite: true, canInvite: true });
    expect(by['shared-data']).toMatchObject({ canManage: false, canWrite: true, canInvite: false });
    expect(by['bobs']).toMatchObject({ canManage: false, canWrite: false, canInvite: false });
    // a project folder is never shared by invitation, even with wd
    const admin = projectFolder('p', 'ml', 'rw', { permission: 'wd' });
    const [row] = folderTable([admin], alice, policy, 'active');
    expect(row).toMatchObject({ canManage: true, canInvite: false });
  });

  it('a policy I cannot read shows no limit', () => {
    const use = storageUse(folders, alice, null);
    expect(use.get('user:alice')).toMatchObject({ maxFolders: null, maxBytes: null });
  });

  it('sorts by a column, ties by name', () => {
    const rows = folderTable(folders, alice, policy, 'active');
    expect(sortRows(rows, 'usage', false).map(r => r.name)).toEqual([
      'mine',
      'shared-data',
      'bobs'
    ]);
    expect(sortRows(rows, 'permission').map(r => r.permission)).toEqual(['ro', 'rw', 'wd']);
    expect(sortRows(rows, 'name').map(r => r.name)).toEqual(['bobs', 'mine', 'shared-data']);
  });

  it('keeps a limit of 0 visible as full, an unlimited one without a bar', () => {
    expect(fillFraction(0, 0)).toBe(1);
    expect(fillFraction(5, null)).toBeNull();
    expect(fillFraction(5000, 4096)).toBe(1);
    expect(useText(1536, null)).toBe('1.5 KiB (no limit)');
    expect(useText(0, 1048576)).toBe('0 B of 1 MiB');
  });

  it('keeps a folder name as the text it is', () => {
    const evil = userFolder('<script>alert(1)</script>', 'alice', 'wd');
    const [row] = folderTable([evil], alice, policy, 'active');
    expect(row.name).toBe('<script>alert(1)</script>');
  });
});

describe('how many folders', () => {
  it('reads as English: the noun agrees with the last number', () => {
    expect(foldersText(1, null)).toBe('1 folder');
    expect(foldersText(0, null)).toBe('0 folders');
    expect(foldersText(3, null)).toBe('3 folders');
    expect(foldersText(1, 5)).toBe('1 of 5 folders');
    expect(foldersText(1, 1)).toBe('1 of 1 folder');
    expect(foldersText(0, 1)).toBe('0 of 1 folder');
  });
});

describe('the permission legend', () => {
  it('says what each of ro, rw and wd allows (the Perm. column header tooltip)', () => {
    expect(PERMISSION_LEGEND.split('\n')).toEqual([
      'ro: read only',
      'rw: read & write (no delete)',
      'wd: write-delete: read, write, delete, rename & manage the folder'
    ]);
  });
});
