import { adminTabTitle, AdminPageList, IAdminPageItem } from '../admin/pages';

function list(): { pages: AdminPageList; shown: IAdminPageItem[][] } {
  const shown: IAdminPageItem[][] = [];
  return { pages: new AdminPageList(items => shown.push(items)), shown };
}

describe('the admin menu pages', () => {
  it('shows nothing until the caller is known to be an admin (a plain user never opens it)', () => {
    const { pages, shown } = list();
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    pages.add({ command: 'hubgrid:admin-queue', rank: 50 });
    expect(shown).toEqual([]);
    expect(pages.isOpen).toBe(false);
  });

  it('shows every page added before opening at once, by rank', () => {
    const { pages, shown } = list();
    pages.add({ command: 'hubgrid:admin-audit', rank: 80 });
    pages.add({ command: 'hubgrid:admin-groups', rank: 40 });
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    pages.open();
    expect(shown).toEqual([
      [
        { command: 'hubgrid:admin-users', rank: 10 },
        { command: 'hubgrid:admin-groups', rank: 40 },
        { command: 'hubgrid:admin-audit', rank: 80 }
      ]
    ]);
  });

  it('shows a page added after opening right away, and each page once', () => {
    const { pages, shown } = list();
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    pages.open();
    pages.open();
    pages.add({ command: 'hubgrid:admin-images', rank: 70 });
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    expect(shown).toEqual([[{ command: 'hubgrid:admin-users', rank: 10 }], [{ command: 'hubgrid:admin-images', rank: 70 }]]);
  });
});

describe('adminTabTitle', () => {
  it("labels a tab with its page's own name, the caption saying it is an admin page", () => {
    expect(adminTabTitle('Users')).toEqual({ label: 'Users', caption: 'hubgrid Admin: Users' });
    expect(adminTabTitle('Admin: Scheduler Queue')).toEqual({
      label: 'Scheduler Queue',
      caption: 'hubgrid Admin: Scheduler Queue'
    });
  });

  it('gives nine pages nine different labels, none a bare prefix', () => {
    const names = ['Users', 'Domains and Projects', 'Resource Policies', 'Resource Groups and Nodes',
      'Scheduler Queue', 'Sessions (All)', 'Images', 'Access Log', 'Statistics'];
    const labels = names.map(n => adminTabTitle(`Admin: ${n}`).label);
    expect(new Set(labels).size).toBe(9);
    expect(labels.every(l => !l.startsWith('Admin'))).toBe(true);
  });
});
