import { sessionRows } from '../data/session';
import { userFolder } from './data-fixtures';

const LIVE = '/home/jovyan/mounted-folders';

describe("the Data panel's This session", () => {
  const folders = [
    userFolder('notes', 'alice', 'wd', { id: 'f-notes' }),
    userFolder('data', 'alice', 'wd', { id: 'f-data' }),
    userFolder('bobs', 'bob', 'ro', { id: 'f-bobs' }),
    userFolder('old', 'alice', 'wd', { id: 'f-old', status: 'trashed' }),
    userFolder('data', 'bob', 'rw', { id: 'f-data-bob' })
  ];

  it('lists what is mounted and where, then what can be mounted now', () => {
    const rows = sessionRows(folders, {
      live_mounts: true,
      mounts: [
        { folder: 'f-data', name: 'data', mode: 'rw' },
        { folder: 'f-bobs', name: 'bobs', mode: 'ro', live: true }
      ]
    }, LIVE, '/home/jovyan');
    expect(rows).toEqual([
      { folder: 'f-bobs', name: 'bobs', path: `${LIVE}/bobs`, mode: 'ro', mountable: false },
      { folder: 'f-data', name: 'data', path: '/home/jovyan/data', mode: 'rw', mountable: false },
      // another folder named like a mounted one cannot be mounted beside it
      { folder: 'f-data-bob', name: 'data', path: '', mode: null, mountable: false },
      { folder: 'f-notes', name: 'notes', path: '', mode: null, mountable: true }
    ]);
  });

  it('offers no mount where the session cannot take one while it runs', () => {
    const rows = sessionRows(folders, { live_mounts: false, mounts: [] }, LIVE, '/home/jovyan');
    expect(rows.some(r => r.mountable)).toBe(false);
    expect(rows.map(r => r.name)).toEqual(['bobs', 'data', 'data', 'notes']);
    const noDir = sessionRows(folders, { live_mounts: true, mounts: [] }, '', '/home/jovyan');
    expect(noDir.some(r => r.mountable)).toBe(false);
  });
});
